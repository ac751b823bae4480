"""The recorder on its own: what it writes for each inbound call, the header, rotation and its
bounds, every part replayable on its own to the same placements, and how it stops when it
cannot go on (the daemon never notices)."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import threading
import time
import types
import weakref
from pathlib import Path
from typing import Any

import attrs
import pytest
from dependency_injector import providers

from nrirp.adapters.fakehw import FakeHardwareDiscovery, load_machine
from nrirp.adapters.recording import Recorder, RecordingError, RecordingLimits
from nrirp.adapters.recording import recorder as recorder_module
from nrirp.app.simulator import build_simulator, load_workload, parse_workload, replay
from nrirp.app.simulator.from_recording import recorded_machine, use_recording_state
from nrirp.app.simulator.results import StepResult
from nrirp.app.simulator.workload import Workload
from nrirp.domain.model import LinuxResources
from nrirp.domain.ports.inbound import InboundCall
from tests.domain.support import (
    FakeConfig,
    make_container,
    make_pod,
    node_across_packages_machine,
)

MACHINE = "box-16"
KiB = 1 << 10


def machine() -> Any:
    return FakeHardwareDiscovery(load_machine(MACHINE)).discover()


def nothing_saved() -> None:
    return None  # no state store


def recorder(path: Path, **kw: Any) -> Recorder:
    return Recorder(
        str(path),
        policy="recording",
        machine=machine(),
        dump_config=lambda config: {"cpus": config.cpus},
        interval=0.01,
        **kw,
    )


def test_calls_become_steps_in_order(tmp_path: Path) -> None:
    rec = recorder(tmp_path / "rec.yaml", node="node-1")
    rec.open()
    pod = make_pod()
    ctr = make_container(pod, "a")
    rec.started(FakeConfig("recording", "0-3"), None, nothing_saved)
    rec.handled(*InboundCall("synchronize", pods=(pod,), containers=()))
    rec.handled(*InboundCall("run-pod", pod))
    rec.handled(*InboundCall("create-container", pod, ctr))
    rec.handled(*InboundCall("post-create", pod, ctr))  # implied by a replay's runtime
    rec.handled(*InboundCall("start-container", pod, ctr))
    rec.handled(*InboundCall("update-container", pod, ctr, LinuxResources(cpu_shares=512)))
    rec.handled(*InboundCall("create-container", pod, make_container(pod, "b"), failure="full"))
    rec.handled(*InboundCall("reconfigure", config=FakeConfig("recording", "0-1")))
    rec.handled(*InboundCall("reconfigure", config=FakeConfig("recording", "0"), failure="no"))
    rec.handled(*InboundCall("stop-container", pod, ctr))
    rec.handled(*InboundCall("remove-container", pod, ctr))
    rec.handled(*InboundCall("stop-pod", pod))
    rec.handled(*InboundCall("remove-pod", pod))
    rec.close()
    rec.close()  # once is enough; again does nothing
    text = (tmp_path / "rec.yaml").read_text()
    assert oct(os.stat(tmp_path / "rec.yaml").st_mode & 0o777) == "0o600"
    workload = parse_workload(text, name="rec.yaml")
    assert workload.recording is not None
    header = workload.recording
    assert (header.policy, header.node, header.part, header.config) == (
        "recording",
        "node-1",
        1,
        {"cpus": "0-3"},
    )
    assert header.state is None
    assert [s.kind for s in workload.steps] == [
        "synchronize",
        "runPodSandbox",
        "createContainer",
        "startContainer",
        "updateContainerResources",
        "createContainer",
        "reconfigure",
        "stopContainer",
        "removeContainer",
        "stopPodSandbox",
        "removePodSandbox",
    ]
    refused = workload.steps[5]
    assert (refused.expect_error, refused.note) == (True, "refused by the daemon: full")
    assert [s.subject for s in workload.steps[1:5]] == [
        "default/pod0",
        "default/pod0/a",
        "default/pod0/a",
        "default/pod0/a",
    ]
    created = workload.steps[2].action
    assert created.domain() == ctr  # type: ignore[union-attr]
    assert workload.steps[1].action.domain() == pod  # type: ignore[union-attr]
    assert workload.steps[6].action.config == {"cpus": "0-1"}  # type: ignore[union-attr]
    assert text.splitlines()[-1].startswith("# end of recording: the daemon stopped at ")
    assert rec.steps == 11


def test_the_marks_say_when_a_part_began_not_when_it_was_written(tmp_path: Path) -> None:
    """The thread writes at a quiet moment, or only when the daemon stops: the header's
    ``started`` and a rotation's mark are the times of the start and of the state taken
    then, not of the write."""
    clock = [1_000_000.0]
    rec = recorder(tmp_path / "rec.yaml", wall_clock=lambda: clock[0])  # not opened yet
    saved: list[Any] = [None]
    rec.started(None, None, lambda: saved[-1])  # 1970-01-12T13:46:40.000Z
    pod = make_pod()
    ctr = make_container(pod, "a")
    clock[0] += 60
    rec.handled("run-pod", pod)
    rec.handled("create-container", pod, ctr)
    rec.handled("start-container", pod, ctr)
    clock[0] += 60
    rec.want_state(rec._states)
    saved.append({"version": 1})
    rec.handled("stop-container", pod, ctr)  # the next part begins here: 13:48:40
    clock[0] += 3600  # written an hour later
    rec.open()
    rec.close()
    first = (tmp_path / "rec.yaml.1").read_text().splitlines()
    assert first[2].endswith('recorded by nrirp run from 1970-01-12T13:46:40.000Z (part 1)"')
    continued = f"# continued in {tmp_path / 'rec.yaml'} (part 2)"
    assert first[-1] == f"{continued} at 1970-01-12T13:48:40.000Z"
    current = load_workload(str(tmp_path / "rec.yaml"))
    assert current.recording is not None
    assert current.recording.started == "1970-01-12T13:48:40.000Z"
    last = (tmp_path / "rec.yaml").read_text().splitlines()[-1]
    assert last == "# end of recording: the daemon stopped at 1970-01-12T14:48:40.000Z"


def test_a_call_looks_further_only_past_one_threshold(tmp_path: Path) -> None:
    """On the pipeline's path a call compares one number; asked for the state (or once the
    thread changed the thresholds) the next call looks, and the state it queues is the one
    the pipeline saved last, read then (nothing is pushed per save)."""
    rec = recorder(tmp_path / "rec.yaml")  # not opened: nothing is taken off the queue
    looked: list[str] = []
    real = rec._beyond

    def spied(operation: str) -> None:
        looked.append(operation)
        real(operation)

    rec._beyond = spied  # type: ignore[method-assign]
    saved: list[Any] = [None]
    rec.started(None, None, lambda: saved[-1])
    pod = make_pod()
    ctr = make_container(pod, "a")
    rec.handled("run-pod", pod)
    rec.handled("create-container", pod, ctr)
    assert looked == [] and rec._limit > 0
    rec.want_state(rec._states)  # the writer asks, from its thread
    assert rec._limit == -1
    rec.handled("create-container", pod, make_container(pod, "b"))  # followed: not here
    rec.handled("start-container", pod, ctr)  # nor here
    saved.append({"version": 1, "after": "stop-container"})
    rec.handled("stop-container", pod, ctr)
    assert looked == ["create-container", "start-container", "stop-container"]
    assert rec._queue[-1][:2] == ("snapshot", saved[-1]) and rec._limit > rec._queued
    rec._look_again()  # the thread took what waited and reckoned anew
    rec.handled("remove-container", pod, ctr)
    rec.handled("stop-pod", pod)
    assert looked[3:] == ["remove-container"] and rec._limit > rec._queued
    rec.handled("create-container", pod, None)  # no container: no step, nothing stops
    rec.open()
    rec.close()
    # the next part begins after the stop, with the state saved then
    first = load_workload(str(tmp_path / "rec.yaml.1"))
    assert [s.kind for s in first.steps] == [
        "runPodSandbox",
        "createContainer",
        "createContainer",
        "startContainer",
        "stopContainer",
    ]
    current = load_workload(str(tmp_path / "rec.yaml"))
    assert current.recording is not None and current.recording.state == saved[-1]
    assert [s.kind for s in current.steps] == ["removeContainer", "stopPodSandbox"]


def test_a_creation_keeps_its_container_alone(tmp_path: Path) -> None:
    """What the recorder keeps of a request is memory the next request cannot reuse: of a
    container's creation (and a pod's run) it keeps the container (the pod) its step is made
    of, not the call nor the pod the runtime sent with the creation (translated for that
    request alone); the step is the same."""
    rec = recorder(tmp_path / "rec.yaml")  # not opened: nothing is taken off the queue
    pod = make_pod()
    sent_along = attrs.evolve(pod)  # the creation's own copy of the pod
    ctr = make_container(pod, "a")
    rec.handled(*InboundCall("run-pod", pod))
    rec.handled(*InboundCall("create-container", sent_along, ctr))
    gone = weakref.ref(sent_along)
    del sent_along
    gc.collect()
    assert gone() is None
    assert list(rec._queue) == [pod, ctr]
    rec.open()
    rec.close()
    steps = load_workload(str(tmp_path / "rec.yaml")).steps
    assert [s.action.domain() for s in steps] == [pod, ctr]  # type: ignore[union-attr]


def test_the_machine_is_the_nodes(tmp_path: Path) -> None:
    rec = recorder(tmp_path / "rec.yaml")
    rec.open()
    rec.started(None, None, nothing_saved)
    rec.close()
    workload = load_workload(str(tmp_path / "rec.yaml"))
    assert workload.steps == () and workload.recording is not None
    again = recorded_machine(workload.recording, "rec.yaml").discover()
    assert again == machine()


def test_the_machines_description_is_not_kept_between_parts(tmp_path: Path) -> None:
    # made for each part's header on the thread and let go once written (59 KiB for 112
    # CPUs, 2.4 MiB for 4,096, kept for nothing between parts)
    rec = recorder(tmp_path / "rec.yaml")
    rec.open()
    rec.started(None, None, nothing_saved)
    deadline = time.monotonic() + 10
    while b"steps:" not in (tmp_path / "rec.yaml").read_bytes():
        assert time.monotonic() < deadline, "the first part's header was never written"
        time.sleep(0.01)
    assert not _reachable_headers(rec, skip=rec._machine)
    rec.close()
    assert b"memoryTypes" in (tmp_path / "rec.yaml").read_bytes()


def _reachable_headers(root: object, skip: object) -> list[dict[str, Any]]:
    """Dicts with a ``machine`` and ``memoryTypes`` key reachable from ``root`` (not through
    ``skip``, modules, classes or functions)."""
    seen = {id(skip)}
    found = []
    todo = [root]
    while todo:
        item = todo.pop()
        if id(item) in seen or isinstance(item, type | types.ModuleType | types.FunctionType):
            continue
        seen.add(id(item))
        if isinstance(item, dict) and "machine" in item and "memoryTypes" in item:
            found.append(item)
        todo.extend(gc.get_referents(item))
    return found


def test_a_machine_a_spec_cannot_describe_is_refused_at_open(tmp_path: Path) -> None:
    rec = Recorder(
        str(tmp_path / "rec.yaml"),
        policy="recording",
        machine=node_across_packages_machine(),
        dump_config=lambda config: {},
    )
    with pytest.raises(RecordingError, match=r"cannot describe this machine.*NUMA node 0 spans"):
        rec.open()
    assert not (tmp_path / "rec.yaml").exists()


def test_opening_imports_no_machine_spec_package(tmp_path: Path) -> None:
    """The daemon opens its recording before it serves: the machine spec's package
    (``fakehw``, 38 modules) waits for the thread's first write."""
    script = f"""
import sys
from nrirp.adapters.recording import Recorder
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CPU, Machine, NumaNode
machine = Machine.build([CPU(0, 0, 0, 0, 0, 0)], [NumaNode(0, CPUSet.parse("0"), 1 << 30)])
rec = Recorder({str(tmp_path / "rec.yaml")!r}, policy="p", machine=machine, dump_config=dict)
rec.open()
opened = "nrirp.adapters.fakehw" in sys.modules
rec.started(None, None, lambda: None)
rec.close()
print(opened, "nrirp.adapters.fakehw" in sys.modules)
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.split() == ["False", "True"]  # imported by the thread, to write


def test_an_older_recording_is_kept_and_bad_limits_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "rec.yaml"
    previous = "# nrirp recording (the previous run's, cut short)\n"
    path.write_text(previous)
    rec = recorder(path, limits=RecordingLimits(64 * KiB, 2))
    rec.open()
    rec.close()
    assert (tmp_path / "rec.yaml.1").read_text() == previous
    with pytest.raises(RecordingError, match="65536 to 4194304 bytes"):
        recorder(path, limits=RecordingLimits(1000, 2))
    with pytest.raises(RecordingError, match="number of recording files must be 1 to 100"):
        recorder(path, limits=RecordingLimits(64 * KiB, 0))
    with pytest.raises(RecordingError, match=r"cannot record to .*missing/rec\.yaml"):
        recorder(tmp_path / "missing" / "rec.yaml").open()


@pytest.mark.parametrize("at", ["rec.yaml", "rec.yaml.1", "rec.yaml.3"])
def test_only_recordings_are_moved_aside_or_deleted(tmp_path: Path, at: str) -> None:
    """``--record`` given the configuration file, the state directory or any other file
    (at the path or where a rotation puts a part): the start is refused, nothing moved; the
    files a recording leaves (even empty, the daemon killed before it wrote) move as ever."""
    path = tmp_path / "rec.yaml"
    other = tmp_path / at
    other.write_text("reservedResources: {cpu: 1000m}\n")  # the node's configuration
    with pytest.raises(RecordingError) as raised:
        recorder(path, limits=RecordingLimits(64 * KiB, 4)).open()
    assert str(raised.value) == (
        f"cannot record to {path}: {other} is a file that is not a recording (it does not "
        "begin with '# nrirp recording'), not the recording's to move aside (and in the end "
        "delete): record to another path, or move it away"
    )
    assert other.read_text() == "reservedResources: {cpu: 1000m}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [at]
    other.unlink()
    other.mkdir()  # the state directory
    (other / "cache").write_text("{}")
    with pytest.raises(RecordingError, match=f"{other} is a directory, not the recording's"):
        recorder(path, limits=RecordingLimits(64 * KiB, 4)).open()
    assert (other / "cache").read_text() == "{}"
    (other / "cache").unlink()
    other.rmdir()
    other.write_bytes(b"")  # an empty part: the daemon was killed before it wrote
    rec = recorder(path, limits=RecordingLimits(64 * KiB, 4))
    rec.open()
    rec.close()
    assert path.read_text().startswith("# end of recording")  # recorded, nothing started


def test_a_symbolic_link_at_the_path_is_moved_aside_never_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("not ours\n")
    (tmp_path / "rec.yaml").symlink_to(target)
    rec = recorder(tmp_path / "rec.yaml")
    rec.open()
    rec.close()
    assert target.read_text() == "not ours\n"
    assert (tmp_path / "rec.yaml.1").is_symlink()
    assert not (tmp_path / "rec.yaml").is_symlink()


# ---------------------------------------------------------------------- through the simulator
def workload_text(pods: int) -> str:
    """Pods created and deleted on box-16, a few kept: exclusive and shared CPUs."""
    steps = []
    for index in range(pods):
        cpu = "2" if index % 3 == 0 else "250m"
        resources = (
            f"{{requests: {{cpu: {cpu}, memory: 64Mi}}, limits: {{cpu: {cpu}, memory: 64Mi}}}}"
            if index % 3 == 0
            else f"{{requests: {{cpu: {cpu}}}}}"
        )
        steps.append(
            f"- createPod: {{name: p{index}, containers: [{{name: c, resources: {resources}}}]}}"
        )
        if index >= 4:
            steps.append(f"- deletePod: {{name: p{index - 4}}}")
    return "\n".join(steps)


def replay_with(workload: Workload, observer: Any = None) -> list[StepResult]:
    container = build_simulator("topology-aware", machine=MACHINE)
    if observer is not None:
        container.adapters.inbound_observer.override(providers.Object(observer))
    container.core.resource_manager().start(container.core.policy_config())
    return asyncio.run(replay(container, workload))


def replay_recording(path: Path) -> list[StepResult]:
    workload = load_workload(str(path))
    assert workload.recording is not None
    container = build_simulator(
        workload.recording.policy, hardware=recorded_machine(workload.recording, str(path))
    )
    use_recording_state(container, workload.recording, keep_config=True)
    container.core.resource_manager().start(container.core.policy_config())
    return asyncio.run(replay(container, workload))


def placements(steps: list[StepResult]) -> dict[str, tuple[str, str]]:
    return {c.id: (str(c.cpus), str(c.mems)) for c in steps[-1].containers}


def test_rotated_parts_are_bounded_and_each_replays_to_the_same_placements(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rec.yaml"
    limits = RecordingLimits(64 * KiB, 3)
    rec = Recorder(
        str(path),
        policy="topology-aware",
        machine=FakeHardwareDiscovery(load_machine(MACHINE)).discover(),
        dump_config=lambda config: {},
        limits=limits,
    )
    rec.open()
    source = replay_with(parse_workload(workload_text(120)), rec)
    rec.close()
    parts = sorted(tmp_path.glob("rec.yaml*"))
    assert [p.name for p in parts] == ["rec.yaml", "rec.yaml.1", "rec.yaml.2"]
    assert all(p.stat().st_size <= limits.max_bytes for p in parts)
    older = (tmp_path / "rec.yaml.1").read_text().splitlines()
    assert older[-1].startswith(f"# continued in {path} (part ")
    current = load_workload(str(path))
    assert current.recording is not None and current.recording.part > 3  # older ones deleted
    assert current.recording.state is not None  # the state when the part began
    if current.steps:
        assert current.steps[0].kind != "synchronize"  # it starts mid-way, from the state
        assert placements(replay_recording(path)) == placements(source)
    else:  # the writer asked for a new part at the last call: it holds that state alone
        (start,) = replay_recording(path)  # it replays to where it begins
        assert start.kind == "synchronize" and start.errors == ()
        assert placements([start]) == placements(source)
        assert placements(replay_recording(tmp_path / "rec.yaml.1")) == placements(source)
    # an older part replays to where the node was when that part ended
    previous = load_workload(str(tmp_path / "rec.yaml.1"))
    assert previous.recording is not None
    previous_end = replay_recording(tmp_path / "rec.yaml.1")
    assert previous_end[-1].errors == ()
    assert len(placements(previous_end)) <= 5


def test_a_part_without_steps_replays_to_the_state_it_begins_with(tmp_path: Path) -> None:
    path = tmp_path / "rec.yaml"
    rec = Recorder(
        str(path),
        policy="topology-aware",
        machine=FakeHardwareDiscovery(load_machine(MACHINE)).discover(),
        dump_config=lambda config: {},
        limits=RecordingLimits(64 * KiB, 3),
    )
    rec.open()
    replay_with(parse_workload(workload_text(120)), rec)
    rec.close()
    # the current part without its steps: what a part holding its state alone looks like
    lines = path.read_text().splitlines()
    at = lines.index(next(line for line in lines if line.startswith("steps:")))
    kept = [line for line in lines[at + 1 :] if not line.startswith("- ")]
    state_only = tmp_path / "state-only.yaml"
    state_only.write_text("\n".join([*lines[:at], "steps: []", *kept]) + "\n")
    assert load_workload(str(state_only)).steps == ()

    (start,) = replay_recording(state_only)
    assert start.kind == "synchronize" and start.errors == () and start.state_shown
    assert (
        start.note
        == "the part holds no steps: the node's state when it began, from its saved state"
    )
    # where the part before it ended
    assert placements([start]) == placements(replay_recording(tmp_path / "rec.yaml.1"))
    assert placements([start])  # some containers run


def test_a_recording_that_cannot_go_on_stops_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(recorder_module, "MAX_PENDING", 5)
    rec = recorder(tmp_path / "rec.yaml")
    pod = make_pod()
    rec.open()
    rec._wake.clear()
    rec._interval = 60.0  # the writer sleeps: the queue fills up (the daemon's disk stalled)
    rec.started(None, None, nothing_saved)
    for _ in range(10):
        rec.handled(*InboundCall("run-pod", pod))  # never raises, whatever happens
    rec.close()
    text = (tmp_path / "rec.yaml").read_text().splitlines()
    assert text[-1].startswith("# recording stopped at ")
    assert text[-1].endswith(": 5 calls queued and not recorded yet")
    assert "recording to" in caplog.text and "stopped" in caplog.text
    workload = load_workload(str(tmp_path / "rec.yaml"))  # what was written still replays
    assert [s.kind for s in workload.steps] == ["runPodSandbox"] * 4


def test_a_part_too_small_for_the_nodes_state_stops_the_recording(tmp_path: Path) -> None:
    rec = recorder(tmp_path / "rec.yaml", limits=RecordingLimits(64 * KiB, 2))
    rec.open()
    rec.started(None, {"version": 1, "policy": "recording", "pods": ["x" * 70_000]}, nothing_saved)
    rec.handled(*InboundCall("run-pod", make_pod()))
    rec.close()
    text = (tmp_path / "rec.yaml").read_text()
    assert "recording stopped at" in text and "does not fit a recording file of 65536" in text
    assert "runPodSandbox" not in text


def test_nothing_is_encoded_on_the_pipelines_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pipeline's thread only queues: steps are made on the recorder's thread, at a quiet
    moment or when the daemon stops."""
    from nrirp.adapters.recording import recorder as module
    from nrirp.adapters.recording import steps

    pipeline = threading.get_ident()
    made_on: set[int] = set()
    for name in ("container_data", "pod_data"):
        real = getattr(steps, name)

        def spied(value: Any, real: Any = real) -> Any:
            made_on.add(threading.get_ident())
            return real(value)

        monkeypatch.setattr(steps, name, spied)
    encoded_on: set[int] = set()
    real_yaml = module.yaml_bytes

    def yaml_spied(value: Any) -> bytes:
        encoded_on.add(threading.get_ident())
        return real_yaml(value)  # type: ignore[no-any-return]

    monkeypatch.setattr(module, "yaml_bytes", yaml_spied)
    rec = recorder(tmp_path / "rec.yaml")
    rec.open()
    replay_with(parse_workload(workload_text(12)), rec)
    rec.close()
    assert made_on and encoded_on and pipeline not in made_on | encoded_on
    kinds = [s.kind for s in load_workload(str(tmp_path / "rec.yaml")).steps]
    assert kinds.count("runPodSandbox") == kinds.count("createContainer") == 12


def test_the_thread_writes_at_a_quiet_moment_or_when_pressed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls coming back to back are written once they pause (the thread never takes the
    interpreter from a burst), unless too many wait."""
    monkeypatch.setattr(recorder_module, "QUIET", 0.05)
    monkeypatch.setattr(recorder_module, "MAX_PENDING", 200)
    rec = recorder(tmp_path / "rec.yaml")  # looks every 10 ms
    rec.open()
    rec.started(None, None, nothing_saved)
    pods = [make_pod(f"p{index}") for index in range(190)]
    for pod in pods[:40]:  # a burst: a call every 10 ms, never a quiet 50 ms
        rec.handled(*InboundCall("run-pod", pod))
        time.sleep(0.01)
    assert rec.steps == 0 and len(rec._queue) > 30
    deadline = time.monotonic() + 10
    while rec.steps < 40 and time.monotonic() < deadline:  # the burst is over
        time.sleep(0.01)
    assert rec.steps == 40 and not rec._queue
    for pod in pods[40:]:  # over half of MAX_PENDING waiting: written, burst or not
        rec.handled(*InboundCall("run-pod", pod))
    rec._wake.set()
    deadline = time.monotonic() + 10
    while rec.steps < 190 and time.monotonic() < deadline:
        rec.handled(*InboundCall("stop-pod", pods[0]))  # the burst goes on
        pods.append(pods[0])
        time.sleep(0.005)
    assert rec.steps >= 190
    rec.close()
    steps = load_workload(str(tmp_path / "rec.yaml")).steps
    assert [getattr(s.action, "id", None) for s in steps] == [p.id for p in pods]


@pytest.mark.parametrize("failure", [None, "no room"])
def test_a_synchronize_line_is_its_step_encoded_with_pauses(failure: str | None) -> None:
    """synchronize_line, made one object at a time with pauses, is the step's plain encoding."""
    from nrirp.adapters.recording.lines import yaml_bytes
    from nrirp.adapters.recording.steps import call_step, synchronize_line

    pods = tuple(make_pod(f"p{i}") for i in range(5))
    containers = tuple(make_container(pods[i % 5], f"c{i}") for i in range(19))
    call = InboundCall("synchronize", pods=pods, containers=containers, failure=failure)
    pauses: list[None] = []
    line = synchronize_line(call, lambda: pauses.append(None), every=4)
    step = call_step(call)
    assert step is not None
    assert line == yaml_bytes(step)
    assert len(pauses) == 1 + 4  # between every 4: pods 4; containers 4, 8, 12, 16
