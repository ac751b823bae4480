"""The file StateStore: atomic writes, permissions, refusals, background writer semantics."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from nrirp.adapters.memory import FakeClock
from nrirp.adapters.nri.stub.scope import HandlerActivity
from nrirp.adapters.storage import FileStateStore
from nrirp.adapters.storage import atomic as atomic_module
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policies import TemplatePolicy
from nrirp.domain.ports.state_store import StateStoreError
from tests.domain.support import make_container, make_pod, small_machine


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_round_trip_with_private_modes(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    store = FileStateStore(state_dir)
    assert store.load() is None  # no directory yet: nothing saved
    store.save({"version": 1, "pods": [{"id": "p"}]})
    store.flush()
    assert mode(state_dir) == 0o700 and mode(state_dir / "cache") == 0o600
    assert json.loads((state_dir / "cache").read_text()) == {"version": 1, "pods": [{"id": "p"}]}
    store.close()  # releases the directory's lock
    again = FileStateStore(state_dir)
    assert again.load() == {"version": 1, "pods": [{"id": "p"}]}
    again.close()


def test_synchronous_mode_writes_before_returning(tmp_path: Path) -> None:
    store = FileStateStore(tmp_path / "s", background=False)
    store.save({"a": 1})
    assert json.loads((tmp_path / "s" / "cache").read_text()) == {"a": 1}
    assert store.writes == 1


def test_refuses_group_writable_file_naming_path_and_mode(tmp_path: Path) -> None:
    store = FileStateStore(tmp_path, background=False)
    store.save({"a": 1})
    os.chmod(store.path, 0o620)
    with pytest.raises(StateStoreError) as err:
        store.load()
    assert f"refusing state file {store.path}: mode 0620" in str(err.value)
    assert "group or others" in str(err.value)


def test_refuses_world_writable_directory(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    os.chmod(state_dir, 0o777)
    store = FileStateStore(state_dir, background=False)
    with pytest.raises(StateStoreError, match=rf"refusing state directory {state_dir}: mode 0777"):
        store.load()
    with pytest.raises(StateStoreError, match="refusing state directory"):
        store.save({"a": 1})
    assert not (state_dir / "cache").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "is not valid JSON"),
        (b"[1, 2]", "holds a JSON list, not an object"),
        (b"\xff\xfe", "is not UTF-8 text"),
    ],
)
def test_refuses_unusable_content_with_path(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "cache"
    path.write_bytes(content)
    os.chmod(path, 0o600)
    with pytest.raises(StateStoreError, match=message) as err:
        FileStateStore(tmp_path).load()
    assert str(path) in str(err.value)
    assert path.read_bytes() == content  # left for inspection


def test_refuses_symlink(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("{}")
    (tmp_path / "cache").symlink_to(target)
    with pytest.raises(StateStoreError, match="is not a regular file"):
        FileStateStore(tmp_path).load()


def test_failed_replace_keeps_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileStateStore(tmp_path, background=False)
    store.save({"generation": 1})

    def broken(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic_module.os, "replace", broken)
    with pytest.raises(StateStoreError, match=rf"cannot write state file {store.path}: .*space"):
        store.save({"generation": 2})
    monkeypatch.undo()
    assert json.loads(Path(store.path).read_text()) == {"generation": 1}
    assert sorted(os.listdir(tmp_path)) == ["cache", "lock"]


def _containers(count: int) -> list[dict[str, object]]:
    return [{"id": f"c{n}", "cpus": "0-3", "labels": {"app": "a" * 100}} for n in range(count)]


def test_unchanged_texts_are_copied_from_the_previous_file(tmp_path: Path) -> None:
    """The second write copies what did not change from the first file (the store keeps
    where each text lies, not the text) and encodes the rest."""
    store = FileStateStore(tmp_path, background=False)
    containers = _containers(50)
    store.save({"version": 1, "containers": containers})
    assert store._encoder.in_file
    changed = [*containers[:10], {**containers[10], "cpus": "7"}, *containers[12:]]
    store.save({"version": 1, "containers": changed, "policy_data": {"n": 1}})
    assert json.loads(Path(store.path).read_text()) == {
        "version": 1,
        "containers": changed,
        "policy_data": {"n": 1},
    }


def test_a_state_file_changed_by_someone_else_is_written_whole(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = FileStateStore(tmp_path, background=False)
    containers = _containers(20)
    store.save({"containers": containers})
    Path(store.path).write_text('{"containers": []}')  # replaced under the store's feet
    os.chmod(store.path, 0o600)
    store.save({"containers": containers, "n": 2})
    assert json.loads(Path(store.path).read_text()) == {"containers": containers, "n": 2}
    assert "changed since it was written; writing it whole" in caplog.text
    os.unlink(store.path)
    store.save({"containers": containers, "n": 3})
    assert json.loads(Path(store.path).read_text()) == {"containers": containers, "n": 3}


def test_texts_are_copied_without_copy_file_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unsupported(*args: object) -> int:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "copy_file_range", unsupported, raising=False)
    store = FileStateStore(tmp_path, background=False)
    containers = _containers(2000)  # more than one chunk of the plain copy
    store.save({"containers": containers})
    store.save({"containers": containers[1:], "n": 2})
    assert json.loads(Path(store.path).read_text()) == {"containers": containers[1:], "n": 2}


def test_load_removes_temp_files_left_by_a_crash(tmp_path: Path) -> None:
    store = FileStateStore(tmp_path, background=False)
    store.save({"a": 1})
    leftover = tmp_path / ".tmp-cache-abc123"
    leftover.write_text("partial")
    assert store.load() == {"a": 1}
    assert not leftover.exists()


def test_burst_of_saves_is_coalesced(tmp_path: Path) -> None:
    store = FileStateStore(tmp_path, linger=0.2)
    for n in range(100):
        store.save({"n": n})
    store.flush()
    assert 1 <= store.writes <= 3
    assert json.loads(Path(store.path).read_text()) == {"n": 99}
    store.close()


def test_save_returns_before_writing(tmp_path: Path) -> None:
    store = FileStateStore(tmp_path, linger=30.0)
    store.save({"n": 1})
    assert not Path(store.path).exists()  # the writer is still lingering
    store.flush(timeout=5)  # flush cuts the linger short
    assert json.loads(Path(store.path).read_text()) == {"n": 1}
    store.close()


def test_write_failure_is_reported_then_retried(tmp_path: Path) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the state directory should be")
    store = FileStateStore(blocker, linger=0.0, retry_interval=0.05)
    store.save({"n": 1})
    with pytest.raises(StateStoreError, match=f"cannot use state directory {blocker}: not a dir"):
        store.flush(timeout=5)
    with pytest.raises(StateStoreError, match="queued and retried"):
        store.save({"n": 2})
    blocker.unlink()
    store.flush(timeout=5)  # the retry succeeds with the latest snapshot
    assert json.loads((blocker / "cache").read_text()) == {"n": 2}
    store.save({"n": 3})  # no stale error any more
    store.close()


def test_flush_answers_with_a_write_begun_after_it(tmp_path: Path) -> None:
    """A failure of the latest snapshot seen before flush is called is not its answer: the
    cause may be gone (here the blocker is removed after the background retries failed)."""
    blocker = tmp_path / "state"
    blocker.write_text("a file where the state directory should be")
    store = FileStateStore(blocker, linger=0.0, retry_interval=0.01)
    store.save({"n": 1})
    with pytest.raises(StateStoreError, match="cannot use state directory"):
        store.flush(timeout=5)
    with pytest.raises(StateStoreError, match="queued and retried"):
        store.save({"n": 2})
    failed = store._attempts
    deadline = time.monotonic() + 5
    while store._attempts < failed + 2 and time.monotonic() < deadline:
        time.sleep(0.005)  # the writer keeps retrying the latest snapshot, and failing
    assert store._error_gen == 2
    blocker.unlink()
    store.flush(timeout=5)
    assert json.loads((blocker / "cache").read_text()) == {"n": 2}
    store.close()


def test_not_json_compatible_is_reported_by_flush(tmp_path: Path) -> None:
    store = FileStateStore(tmp_path, linger=0.0, retry_interval=10)
    store.save({"bad": object()})
    with pytest.raises(StateStoreError, match="not JSON-compatible"):
        store.flush(timeout=5)
    with pytest.raises(StateStoreError, match="queued and retried"):
        store.save({"good": True})
    store.flush(timeout=5)
    assert json.loads(Path(store.path).read_text()) == {"good": True}
    store.close()


def test_close_flushes_and_refuses_later_saves(tmp_path: Path) -> None:
    store = FileStateStore(tmp_path, linger=30.0)
    store.save({"n": 7})
    store.close()
    assert json.loads(Path(store.path).read_text()) == {"n": 7}
    with pytest.raises(StateStoreError, match="is closed"):
        store.save({"n": 8})
    store.close()  # idempotent


def test_pending_snapshot_is_written_at_interpreter_exit(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        from nrirp.adapters.storage import FileStateStore
        store = FileStateStore({str(tmp_path)!r}, linger=60.0)
        store.save({{"written": "at exit"}})
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=30)
    assert json.loads((tmp_path / "cache").read_text()) == {"written": "at exit"}


def test_resource_manager_restores_from_the_file(tmp_path: Path) -> None:
    machine = small_machine()
    store = FileStateStore(tmp_path)
    first = ResourceManager(
        policy=TemplatePolicy(), machine=machine, store=store, clock=FakeClock()
    )
    first.start()
    pod = make_pod("web")
    first.run_pod(pod)
    first.create_container(pod, make_container(pod, "app"))
    store.close()

    second_store = FileStateStore(tmp_path)
    second = ResourceManager(
        policy=TemplatePolicy(), machine=machine, store=second_store, clock=FakeClock()
    )
    outcome = second.start()
    assert (outcome.restored, outcome.pods, outcome.containers) == (True, 1, 1)
    assert second.cache.require_container("id-web-app").name == "app"
    second_store.close()


def test_a_burst_of_saves_is_written_at_most_max_delay_after_its_first(tmp_path: Path) -> None:
    """The writer waits for a quiet ``linger``, but not longer than ``max_delay``."""
    store = FileStateStore(tmp_path / "state", linger=0.05, max_delay=0.2)
    started = time.monotonic()
    written_at: list[float] = []
    while time.monotonic() - started < 0.5:  # saves every 10 ms: never quiet for 50 ms
        store.save({"version": 1, "n": len(written_at)})
        if store.writes > len(written_at):
            written_at.append(time.monotonic() - started)
        time.sleep(0.01)
    store.close()
    assert written_at and written_at[0] < 0.45  # not held back until the burst ended
    assert len(written_at) <= 4  # a few writes, not one per save


def test_the_writer_steps_aside_while_a_request_is_handled(tmp_path: Path) -> None:
    foreground = HandlerActivity()
    foreground.started()  # "a request" is being handled
    store = FileStateStore(tmp_path / "state", linger=0.0, yield_to=foreground, max_pause=5.0)
    store.save({"version": 1})
    time.sleep(0.2)
    assert store.writes == 0  # held back while it runs
    foreground.finished()
    store.flush(timeout=5)
    assert store.writes == 1
    foreground.started()
    store.save({"version": 2})
    store.flush(timeout=5)  # a flush does not wait for requests to end
    assert store.writes == 2
    foreground.finished()
    store.close()
