"""``nrirp simulate`` on a recording: the recorded machine, policy and configuration by
default, another configuration tried (``--config``), two compared (``--compare``), a recording
whose daemon reconnected, and clear errors for a damaged or cut-short file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from nrirp.adapters.fakehw import FakeHardwareDiscovery, load_machine
from nrirp.adapters.recording import Recorder
from nrirp.app.commands.simulate import EXIT_INPUT, EXIT_OK, EXIT_STEPS
from nrirp.app.simulator import build_simulator, parse_workload
from nrirp.app.simulator.replay import Replayer
from nrirp.app.simulator.updates import SettlingRuntimeUpdates
from nrirp.domain.config import PolicyConfig
from tests.adapters.recording.test_recorder import replay_recording, workload_text
from tests.app.test_simulate_cli import run

MACHINE = "box-16"
RESERVE_ONE = "reservedResources: {cpu: cpuset:0}\n"
RESERVE_FOUR = "reservedResources: {cpu: cpuset:0-3}\n"


def record(path: Path, workload: str, *, reconnect_at: int | None = None) -> list[Any]:
    """Replay ``workload`` with topology-aware (reserving CPU 0) while recording it to
    ``path``; ``reconnect_at``: the plugin reconnects before that step (a runtime restart)."""
    container = build_simulator("topology-aware", machine=MACHINE)
    registry = container.core.policy_registry()
    from nrirp.adapters.documents import load_policy_config

    config: PolicyConfig = load_policy_config("topology-aware", RESERVE_ONE, registry)
    container.core.policy_config.override(providers.Object(config))
    rec = Recorder(
        str(path),
        policy="topology-aware",
        machine=FakeHardwareDiscovery(load_machine(MACHINE)).discover(),
        dump_config=container.core.config_codec().dump,
    )
    container.adapters.inbound_observer.override(providers.Object(rec))
    rec.open()
    container.core.resource_manager().start(config)
    loaded = parse_workload(workload)

    async def main() -> list[Any]:
        updates = container.adapters.runtime_updates()
        assert isinstance(updates, SettlingRuntimeUpdates)
        async with container.simulation() as simulation:
            replayer = Replayer(
                simulation,
                container.core.resource_manager(),
                updates,
                container.adapters.decision_log(),
                loaded,
                container.adapters.state_store(),
                registry,
                container.adapters.host_control(),
            )
            results = []
            for step in loaded.steps:
                if step.number == reconnect_at:
                    await simulation.reconnect()
                results.append(await replayer.run_step(step))
            return results

    try:
        return asyncio.run(main())
    finally:
        rec.close()


def final(steps: list[Any]) -> dict[str, tuple[str, str]]:
    return {c.id: (str(c.cpus), str(c.mems)) for c in steps[-1].containers}


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    path = tmp_path_factory.mktemp("rec") / "rec.yaml"
    steps = record(path, workload_text(12))
    return path, steps


def test_a_recording_replays_with_its_own_machine_policy_and_configuration(
    recording: tuple[Path, list[Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, source = recording
    code, out, err = run(capsys, "--workload", str(path), "--json")
    assert code == EXIT_OK, err
    doc = json.loads(out)
    assert doc["policy"] == "topology-aware"
    assert doc["hardware"]["source"] == "the recorded machine"
    assert doc["config_file"] == "the recording's configuration"
    assert [s["state_shown"] for s in doc["steps"]][-2:] == [False, True]
    last = {c["id"]: (c["cpus"], c["mems"]) for c in doc["steps"][-1]["containers"]}
    assert last == final(source)
    # --machine may name the recording too, and --every-step shows every state
    code, out, err = run(
        capsys, "--workload", str(path), "--machine", str(path), "--every-step", "--json"
    )
    assert code == EXIT_OK, err
    doc = json.loads(out)
    assert doc["hardware"]["source"] == f"the machine recorded in {path}"
    assert all(s["state_shown"] for s in doc["steps"])


def test_another_configuration_and_a_comparison(
    recording: tuple[Path, list[Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, source = recording
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(RESERVE_ONE)
    new.write_text(RESERVE_FOUR)
    code, out, err = run(capsys, "--workload", str(path), "--config", str(new))
    assert code == EXIT_OK, err
    assert f"(config {new})" in out
    compare = ("--workload", str(path), "--compare", str(old))
    code, out, err = run(capsys, *compare, "--config", str(new))
    assert code == EXIT_STEPS, err  # something moves
    assert f"  OLD: {old}\n  NEW: {new}" in out
    assert "would move or differ" in out and out.rstrip().endswith("the configurations differ")
    code, out, err = run(
        capsys, "--workload", str(path), "--compare", str(old), "--config", str(new), "--json"
    )
    doc = json.loads(out)
    assert doc["format"] == "nrirp.compare/v1"
    assert doc["old"]["config_file"] == str(old) and doc["new"]["config_file"] == str(new)
    moved = [c for c in doc["containers"] if c["moved"]]
    assert moved and doc["summary"]["moved"] == len(moved)
    for change in moved:
        assert change["differs"], change
        assert change["old"]["cpus"] != change["new"]["cpus"] or change["differs"] != ["cpus"]
    unchanged = {c["id"] for c in doc["containers"] if not c["moved"]}
    old_cpus = {c["id"]: c["old"]["cpus"] for c in doc["containers"]}
    assert {cid: old_cpus[cid] for cid in final(source)} == {
        cid: cpus for cid, (cpus, _) in final(source).items()
    }  # OLD is the recorded configuration: where the containers were
    assert unchanged != {c["id"] for c in doc["containers"]}
    # the same configuration twice: nothing moves
    code, out, err = run(capsys, *compare, "--config", str(old))
    assert code == EXIT_OK, err
    assert out.rstrip().endswith("no difference")


def test_a_recording_whose_daemon_reconnected(tmp_path: Path) -> None:
    path = tmp_path / "rec.yaml"
    source = record(path, workload_text(10), reconnect_at=8)
    text = path.read_text()
    assert text.count('{"synchronize":') == 2
    replayed = replay_recording(path)
    assert [s.number for s in replayed if not s.as_expected] == []
    assert final(replayed) == final(source)


def test_a_damaged_recording_says_where(
    recording: tuple[Path, list[Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = recording
    lines = path.read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.yaml"
    cut.write_text("".join(lines[:20]) + lines[20][: len(lines[20]) // 2])  # the disk filled up
    code, _, err = run(capsys, "--workload", str(cut))
    assert code == EXIT_INPUT
    assert f"invalid workload {cut}" in err
    assert "the recording is damaged at line 21" in err
    assert f"`head -n 20 {cut} > part.yaml` keeps the steps before it" in err
    # a recording that just ends (the daemon was killed between two steps) replays, with a note
    ended = tmp_path / "ended.yaml"
    ended.write_text("".join(lines[:20]))
    code, _, err = run(capsys, "--workload", str(ended))
    assert code == EXIT_OK, err
    assert "note: " in err and "has no end mark: the daemon was killed" in err
    # a step that is not what the format says
    garbled = tmp_path / "garbled.yaml"
    garbled.write_text("".join(lines[:10]) + lines[10].replace('"id":', '"idx":', 1))
    code, _, err = run(capsys, "--workload", str(garbled))
    assert code == EXIT_INPUT
    assert "(step 6)" in err and "unknown field" in err


def test_a_recording_cut_short_names_the_line_it_was_cut_at(
    recording: tuple[Path, list[Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The parser notices a line cut short where its flow mapping would go on (past the end
    of the file): the advice keeps the complete lines before the cut one, not the cut one."""
    path, _ = recording
    lines = path.read_text().splitlines(keepends=True)
    step = lines[20]
    assert step.startswith('- {"') and '":' in step
    cut = tmp_path / "cut.yaml"
    cut.write_text("".join(lines[:20]) + step[: step.index('":') + 2])  # after a key's colon
    code, _, err = run(capsys, "--workload", str(cut))
    assert code == EXIT_INPUT
    assert "invalid YAML at line 22" in err  # where the parser stopped
    assert "the recording is damaged at line 21" in err
    assert f"`head -n 20 {cut} > part.yaml` keeps the steps before it" in err
    kept = tmp_path / "part.yaml"
    kept.write_text("".join(lines[:20]))  # what the advice keeps replays
    assert run(capsys, "--workload", str(kept))[0] == EXIT_OK
    # a header cut short: no part of it to keep
    header = tmp_path / "header.yaml"
    assert lines[3].startswith("recording: ")
    header.write_text("".join(lines[:3]) + lines[3][: len(lines[3]) // 2])
    code, _, err = run(capsys, "--workload", str(header))
    assert code == EXIT_INPUT
    assert "the recording is damaged at line 4" in err
    assert "it is the part's header" in err and "head -n" not in err


def test_a_recording_with_a_zeroed_or_undecodable_tail_gets_the_advice_too(
    recording: tuple[Path, list[Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A crash can leave NUL bytes (a file system that extended the file but never wrote
    it) or bytes that are not UTF-8: the parser then names no line, and the advice finds it."""
    path, _ = recording
    lines = path.read_text().splitlines(keepends=True)
    for name, tail in (("zeroed", b"\0" * 300), ("binary", b"\xff\xfe junk\n")):
        damaged = tmp_path / f"{name}.yaml"
        damaged.write_bytes("".join(lines[:20]).encode() + tail)
        code, _, err = run(capsys, "--workload", str(damaged))
        assert code == EXIT_INPUT, name
        assert "the recording is damaged at line 21" in err, (name, err)
        assert f"`head -n 20 {damaged} > part.yaml` keeps the steps before it" in err, name


def test_an_empty_workload_says_it_is_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "rec.yaml"
    empty.write_bytes(b"")  # a daemon killed before its writer wrote the header
    code, _, err = run(capsys, "--workload", str(empty))
    assert code == EXIT_INPUT
    assert err.strip() == (
        f"nrirp simulate: workload {empty} is empty (a recording of a daemon stopped before "
        "it wrote anything?)"
    )


def test_explain_on_an_unfinished_recording_says_so_too(
    recording: tuple[Path, list[Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nrirp.app.cli import main

    path, _ = recording
    lines = path.read_text().splitlines(keepends=True)
    ended = tmp_path / "ended.yaml"
    ended.write_text("".join(lines[:20]))  # the daemon killed between two steps
    code = main(["explain", "--workload", str(ended), "no-such-container"])
    err = capsys.readouterr().err
    assert code != 0  # no such container: the note is said all the same
    assert f"nrirp explain: note: {ended}: the recording has no end mark" in err
    main(["explain", "--workload", str(path), "no-such-container"])
    assert "no end mark" not in capsys.readouterr().err  # a finished one says nothing


def test_a_plain_workload_still_needs_a_policy(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.app.test_simulate_cli import TEMPLATE_WORKLOAD

    code, _, err = run(capsys, "--machine", "box-16", "--workload", TEMPLATE_WORKLOAD)
    assert code == EXIT_INPUT
    assert "--policy is required (unless the workload is a recording)" in err
