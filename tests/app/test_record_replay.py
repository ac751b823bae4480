"""Record and replay: ``nrirp run --record`` as a process, driven over a real socket by the
simulated runtime, writes what it handles; ``nrirp simulate`` replays the recording to the
placements the daemon made, decision by decision and container by container."""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs
from nrirp.adapters.memory import RecordingDecisionLog
from nrirp.app.simulator import build_simulator, load_workload, replay
from nrirp.app.simulator.from_recording import recorded_machine, use_recording_state
from nrirp.app.simulator.results import StepResult
from nrirp.domain.model.kubelet import Resources
from nrirp.simruntime import ContainerSpec, ObjectStyle, PodSpec, RuntimeOptions, SimRuntime
from tests.app.test_run import Daemon
from tests.support.aio import arun

NAME = "90-resource-manager"
MACHINE = "box-16"
CONFIG = """
reservedResources: {cpu: 1000m}
pinCPU: true
pinMemory: true
"""


@pytest.fixture(scope="module")
def sysfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hw") / "sys"
    write_sysfs(resolve(load_machine(MACHINE), MACHINE), root)
    return root


Placements = dict[str, tuple[str | None, str | None]]
Decisions = list[tuple[str, str | None, str | None]]


def pod(name: str, kind: str, index: int) -> PodSpec:
    """A pod of one of a few shapes: exclusive CPUs, shared, best effort, two containers."""
    if kind == "guaranteed":
        cpus = 1 + index % 2
        res = Resources.of({"cpu": cpus, "memory": "256Mi"}, {"cpu": cpus, "memory": "256Mi"})
        return PodSpec(name, namespace="prod", containers=[ContainerSpec("app", resources=res)])
    if kind == "burstable":
        res = Resources.of({"cpu": f"{100 + 50 * (index % 5)}m", "memory": "64Mi"})
        side = Resources.of({"cpu": "50m"})
        return PodSpec(
            name,
            namespace="web",
            containers=[ContainerSpec("app", resources=res), ContainerSpec("log", resources=side)],
            annotations={"prefer-shared-cpus.resource-policy.nri.io/pod": "true"}
            if index % 3 == 0
            else {},
        )
    return PodSpec(name, namespace="batch", containers=[ContainerSpec("job")])


async def drive(runtime: SimRuntime, lifecycles: int, live: int, seed: int) -> None:
    """``lifecycles`` pods created, some resized or exited, all but the last ``live`` deleted,
    in a seeded random order."""
    rng = random.Random(seed)
    alive: list[str] = []
    kinds = ("guaranteed", "burstable", "besteffort")
    for index in range(lifecycles):
        spec = pod(f"p{index}", kinds[rng.randrange(3)], index)
        with contextlib.suppress(Exception):  # a refused container stays so, as with a kubelet
            await runtime.run_pod(spec)
        alive.append(spec.name)
        if rng.random() < 0.1:
            ctr = runtime.containers(runtime.find_pod(spec.namespace, spec.name))[0]
            if ctr.state.name == "RUNNING" and spec.namespace == "web":
                resized = Resources.of({"cpu": "300m", "memory": "128Mi"})
                await runtime.update_container(ctr, resized)
        while len(alive) > live or (alive and rng.random() < 0.3 and len(alive) > live // 2):
            victim = alive.pop(rng.randrange(len(alive)))
            found = [p for p in runtime.pods() if p.name == victim]
            await runtime.delete_pod(found[-1])


async def record(
    tmp: Path,
    sysfs: Path,
    scenario: Callable[[SimRuntime], Awaitable[None]],
    before: Callable[[SimRuntime], Awaitable[None]] | None = None,
    *extra: str,
) -> tuple[Daemon, Placements]:
    """Run the daemon with ``--record`` against a simulated runtime: ``before`` runs pods
    before the daemon connects (its first Synchronize), ``scenario`` while it serves. Returns
    the stopped daemon and where the runtime ran each container in the end."""
    config = tmp / "config.yaml"
    config.write_text(CONFIG)
    options = RuntimeOptions(socket_path=str(tmp / "nri.sock"), style=ObjectStyle.bare())
    runtime = SimRuntime(options, keep_messages=False)
    await runtime.start()
    if before is not None:
        await before(runtime)
    daemon = Daemon(
        tmp,
        sysfs,
        "--record",
        str(tmp / "rec.yaml"),
        "--config-file",
        str(config),
        *extra,
        policy="topology-aware",
    )
    try:
        await runtime.wait_plugin(NAME, timeout=60)
        await scenario(runtime)
        await asyncio.sleep(0.3)  # updates sent after the last reply
        placements = {
            c.id: (_text(c.resources.cpus), _text(c.resources.mems)) for c in runtime.containers()
        }
        daemon.proc.send_signal(signal.SIGTERM)
        assert await daemon.wait_exit() == 0, daemon.text()
    finally:
        daemon.kill()
        await runtime.close()
    return daemon, placements


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def daemon_decisions(daemon: Daemon) -> Decisions:
    return [
        (r["container_id"], r.get("cpus"), r.get("mems"))
        for r in daemon.records()
        if r.get("logger") == "nrirp.decisions" and r["msg"] == "decision"
    ]


def replayed(path: Path, **options: Any) -> tuple[list[StepResult], Decisions]:
    workload = load_workload(str(path))
    assert workload.recording is not None
    container = build_simulator(
        workload.recording.policy, hardware=recorded_machine(workload.recording, str(path))
    )
    use_recording_state(container, workload.recording, keep_config=True)
    container.core.resource_manager().start(container.core.policy_config())
    steps = asyncio.run(replay(container, workload, **options))
    log = container.adapters.decision_log()
    assert isinstance(log, RecordingDecisionLog)
    decisions = [(d.container_id, _text(d.cpus), _text(d.mems)) for d in log.decisions]
    return steps, decisions


def final_placements(steps: list[StepResult]) -> Placements:
    return {c.id: (_text(c.cpus), _text(c.mems)) for c in steps[-1].containers}


def test_a_recording_replays_to_the_daemons_placements(tmp_path: Path, sysfs: Path) -> None:
    async def before(runtime: SimRuntime) -> None:  # already running when the daemon starts
        await runtime.run_pod(pod("old-db", "guaranteed", 1))
        await runtime.run_pod(pod("old-web", "burstable", 0))

    async def scenario(runtime: SimRuntime) -> None:
        await drive(runtime, lifecycles=40, live=8, seed=1)

    daemon, placements = arun(lambda: record(tmp_path, sysfs, scenario, before), timeout=300)
    text = (tmp_path / "rec.yaml").read_text()
    assert text.startswith("# nrirp recording")
    assert text.rstrip().splitlines()[-1].startswith("# end of recording")
    steps, decisions = replayed(tmp_path / "rec.yaml")
    # the daemon connected to a runtime already running two pods: its first Synchronize
    assert steps[0].description == "synchronize: the runtime runs 2 pods, 3 containers"
    assert {c.pod for c in steps[0].containers} >= {"old-db", "old-web"}
    assert [s.number for s in steps if not s.as_expected] == []
    assert decisions == daemon_decisions(daemon)
    assert final_placements(steps) == placements
    assert len(placements) >= 8


@pytest.mark.slow
def test_a_thousand_pod_lifecycles_replay_to_the_same_placements(
    tmp_path: Path, sysfs: Path
) -> None:
    async def scenario(runtime: SimRuntime) -> None:
        await drive(runtime, lifecycles=1000, live=12, seed=7)

    daemon, placements = arun(lambda: record(tmp_path, sysfs, scenario), timeout=900)
    steps, decisions = replayed(tmp_path / "rec.yaml", last_state_only=True)
    created = [s for s in steps if s.kind == "runPodSandbox"]
    assert len(created) == 1000
    assert [s.number for s in steps if not s.as_expected] == []
    theirs = daemon_decisions(daemon)
    assert len(theirs) > 1000
    assert decisions == theirs  # every placement, in order
    assert final_placements(steps) == placements


def test_a_restarted_daemon_records_the_state_it_restored(tmp_path: Path, sysfs: Path) -> None:
    """The daemon restarts on its saved state with containers still running: the recording
    starts from that state and the runtime's Synchronize, and replays to where the daemon
    put everything."""

    async def main() -> tuple[Daemon, Placements]:
        config = tmp_path / "config.yaml"
        config.write_text(CONFIG)
        options = RuntimeOptions(socket_path=str(tmp_path / "nri.sock"), style=ObjectStyle.bare())
        runtime = await SimRuntime(options, keep_messages=False).start()
        common = ("--config-file", str(config))
        first = Daemon(tmp_path, sysfs, *common, policy="topology-aware")
        try:
            await runtime.wait_plugin(NAME, timeout=60)
            await drive(runtime, lifecycles=12, live=6, seed=3)
            first.proc.send_signal(signal.SIGTERM)
            assert await first.wait_exit() == 0
        finally:
            first.kill()
        await drive(runtime, lifecycles=3, live=8, seed=4)  # while no daemon runs
        record = ("--record", str(tmp_path / "rec.yaml"))
        second = Daemon(tmp_path, sysfs, *common, *record, policy="topology-aware")
        try:
            # wait for the Synchronize of the restarted daemon's connection
            await second.wait_for("^synchronized with the runtime", timeout=60)
            await drive(runtime, lifecycles=10, live=6, seed=5)
            await asyncio.sleep(0.3)
            placements = {
                c.id: (_text(c.resources.cpus), _text(c.resources.mems))
                for c in runtime.containers()
            }
            second.proc.send_signal(signal.SIGTERM)
            assert await second.wait_exit() == 0
        finally:
            second.kill()
            await runtime.close()
        return second, placements

    daemon, placements = arun(main, timeout=300)
    workload = load_workload(str(tmp_path / "rec.yaml"))
    assert workload.recording is not None and workload.recording.state is not None
    assert workload.steps[0].kind == "synchronize"
    steps, decisions = replayed(tmp_path / "rec.yaml")
    assert [s.number for s in steps if not s.as_expected] == []
    assert decisions == daemon_decisions(daemon)
    assert final_placements(steps) == placements


def test_a_recording_that_cannot_be_made_stops_the_start(tmp_path: Path, sysfs: Path) -> None:
    from tests.app.test_run import run_sync

    daemon = run_sync(["--record", str(tmp_path / "no" / "rec.yaml")], tmp_path, sysfs)
    assert daemon.proc.returncode == 2, daemon.text()
    assert f"cannot record to {tmp_path}/no/rec.yaml" in daemon.text()
