"""The state directory: one store (daemon) at a time, private permissions whatever the umask,
ownership, and stray temp entries removed only when they are ours."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nrirp.adapters.storage import FileStateStore, StateDirectoryInUseError
from nrirp.domain.ports.state_store import StateStoreError

OTHER_UID = 54321


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_a_second_store_on_the_directory_is_refused_naming_the_holder(tmp_path: Path) -> None:
    first = FileStateStore(tmp_path / "state")
    assert first.load() is None and first.locked
    second = FileStateStore(tmp_path / "state", background=False)
    with pytest.raises(StateDirectoryInUseError) as err:
        second.load()
    assert str(err.value) == f"state directory {tmp_path / 'state'} is in use by pid {os.getpid()}"
    assert err.value.pid == os.getpid()
    with pytest.raises(StateDirectoryInUseError):
        second.save({"n": 1})  # no write behind the holder's back either
    assert not (tmp_path / "state" / "cache").exists()
    first.save({"n": 1})
    first.close()  # the final write, then the lock is released
    assert not first.locked
    third = FileStateStore(tmp_path / "state")
    assert third.load() == {"n": 1}
    third.close()


def test_the_lock_is_held_by_another_process_and_dropped_when_it_dies(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys
                from nrirp.adapters.storage import FileStateStore
                store = FileStateStore({str(tmp_path)!r})
                store.lock()
                print("locked", flush=True)
                sys.stdin.read()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
        with pytest.raises(StateDirectoryInUseError, match=f"in use by pid {holder.pid}$"):
            FileStateStore(tmp_path).lock()
    finally:
        holder.kill()  # SIGKILL: the kernel drops the lock with the process
        holder.wait()
    store = FileStateStore(tmp_path)
    store.lock()
    assert (tmp_path / "lock").read_text() == f"{os.getpid()}\n"
    store.close()


def test_missing_directories_are_created_0700_whatever_the_umask(tmp_path: Path) -> None:
    state_dir = tmp_path / "a" / "b" / "state"
    old = os.umask(0)
    try:
        store = FileStateStore(state_dir, background=False)
        store.lock()
        store.save({"n": 1})
    finally:
        os.umask(old)
    for directory in (tmp_path / "a", tmp_path / "a" / "b", state_dir):
        assert mode(directory) == 0o700, directory
    assert mode(state_dir / "cache") == 0o600 and mode(state_dir / "lock") == 0o600
    store.close()


def test_a_restrictive_umask_still_gives_a_usable_directory(tmp_path: Path) -> None:
    old = os.umask(0o277)
    try:
        store = FileStateStore(tmp_path / "state", background=False)
        store.save({"n": 1})
    finally:
        os.umask(old)
    assert mode(tmp_path / "state") == 0o700
    store.close()


def test_an_existing_directory_is_not_changed(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o755)
    os.chmod(state_dir, 0o755)  # not writable by others: accepted as it is
    store = FileStateStore(state_dir)
    assert store.load() is None
    assert mode(state_dir) == 0o755
    store.close()


@pytest.mark.parametrize("target", ["state", "state/cache", "state/lock"])
def test_entries_owned_by_another_user_are_refused(tmp_path: Path, target: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to chown")
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    for name in ("cache", "lock"):
        (state_dir / name).write_text("{}")
        os.chmod(state_dir / name, 0o600)
    path = tmp_path / target
    os.chown(path, OTHER_UID, -1)
    what = {"state": "state directory", "state/cache": "state file", "state/lock": "lock file"}
    with pytest.raises(StateStoreError) as err:
        FileStateStore(state_dir).load()
    assert str(err.value) == (
        f"refusing {what[target]} {path}: owned by uid {OTHER_UID}, not by the daemon's user "
        f"(uid 0) (chown 0 {path})"
    )
    assert (state_dir / "cache").read_text() == "{}"  # left alone


def test_a_world_writable_directory_is_refused_before_anything_is_locked(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    os.chmod(state_dir, 0o1777)
    store = FileStateStore(state_dir)
    with pytest.raises(StateStoreError, match=f"refusing state directory {state_dir}: mode 1777"):
        store.lock()
    assert not store.locked and not (state_dir / "lock").exists()


@pytest.mark.parametrize("kind", ["directory", "fifo", "symlink"])
def test_an_odd_lock_file_is_refused(tmp_path: Path, kind: str) -> None:
    lock = tmp_path / "lock"
    if kind == "directory":
        lock.mkdir()
    elif kind == "fifo":
        os.mkfifo(lock, 0o600)
    else:
        lock.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(StateStoreError, match=f"lock file {lock}") as err:
        FileStateStore(tmp_path).lock()
    assert "\n" not in str(err.value)
    assert not (tmp_path / "elsewhere").exists()  # a symlink is not followed


def test_stray_temp_entries_are_removed_only_when_they_are_our_files(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ours = tmp_path / ".tmp-cache-abc123"
    ours.write_text("partial")
    directory = tmp_path / ".tmp-cache-dir"
    directory.mkdir()
    (directory / "inside").write_text("kept")
    target = tmp_path / "target"
    target.write_text("not ours to delete")
    link = tmp_path / ".tmp-cache-link"
    link.symlink_to(target)
    other = tmp_path / ".tmp-cache-other"
    other.write_text("someone else's")
    unrelated = tmp_path / ".tmp-other-abc"
    unrelated.write_text("another name")
    if os.geteuid() == 0:
        os.chown(other, OTHER_UID, -1)
    (tmp_path / "cache").write_text(json.dumps({"n": 1}))
    os.chmod(tmp_path / "cache", 0o600)

    store = FileStateStore(tmp_path)
    with caplog.at_level("INFO", logger="nrirp.adapters.storage.file_store"):
        assert store.load() == {"n": 1}
    store.close()

    assert not ours.exists()
    assert (directory / "inside").read_text() == "kept"
    assert link.is_symlink() and target.read_text() == "not ours to delete"
    assert unrelated.exists()
    messages = [r.getMessage() for r in caplog.records]
    assert f"removed {ours} left by an interrupted write" in messages
    assert f"state directory {tmp_path}: left alone .tmp-cache-dir: not a regular file" in messages
    assert f"state directory {tmp_path}: left alone .tmp-cache-link: not a regular file" in messages
    if os.geteuid() == 0:
        assert other.exists()
        assert (
            f"state directory {tmp_path}: left alone .tmp-cache-other: owned by uid "
            f"{OTHER_UID}, not by uid 0"
        ) in messages
