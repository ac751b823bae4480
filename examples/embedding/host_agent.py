"""A host agent embedding the nrirp engine: no NRI socket, no daemon, just calls.

The agent (think koordlet) gets pod and container lifecycle hooks from its runtime its own way
and holds the Kubernetes pod objects. For each hook it calls the engine with neutral objects
and applies what comes back: the adjustment of a container being created, and updates for
containers that already run. Updates nobody asked for (after a reconfiguration or a removal)
arrive through the agent's ``runtime_updates`` adapter.

Run it from a checkout: ``python examples/embedding/host_agent.py`` (docs/embedding.md walks
through it).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nrirp.adapters.memory import RecordingDecisionLog
from nrirp.app.embed import (
    ContainerState,
    Engine,
    KubernetesPod,
    OperationFailedError,
    Update,
)
from nrirp.domain.cpuset import CPUSet

Manifest = dict[str, Any]
POLICY_FILE = Path(__file__).resolve().parents[1] / "policies" / "exclusive_cpus.py"


class UpdateQueue:
    """The agent's RuntimeUpdates adapter: ``submit`` only queues (it is called while the
    engine holds its pipeline); the agent's own loop sends the updates to the runtime."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queued: list[Update] = []

    def submit(self, updates: Sequence[Update]) -> None:
        with self._lock:
            self._queued.extend(updates)

    def take(self) -> list[Update]:
        with self._lock:
            taken, self._queued = self._queued, []
            return taken


def manifest(name: str, namespace: str, uid: str, *containers: Manifest) -> Manifest:
    """A Kubernetes v1.Pod, as the agent would get it from the API server."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "spec": {"containers": list(containers)},
    }


def show(cpus: CPUSet | None) -> str:
    return "-" if cpus is None else str(cpus)


class HostAgent:
    """Keeps what each container runs with (its view of the runtime) and drives the engine."""

    def __init__(self, engine: Engine, queue: UpdateQueue) -> None:
        self.engine = engine
        self.queue = queue
        self.running: dict[str, tuple[str, CPUSet | None, CPUSet | None]] = {}

    def apply(self, updates: Sequence[Update], how: str) -> None:
        for update in updates:
            name, cpus, mems = self.running[update.container_id]
            cpus = update.resources.cpus or cpus
            mems = update.resources.mems or mems
            self.running[update.container_id] = (name, cpus, mems)
            print(f"  {how} {name}: cpus={show(cpus)} mems={show(mems)}")

    def start_pod(self, pod_manifest: Manifest, pod_id: str) -> None:
        kube = KubernetesPod.from_manifest(pod_manifest)
        pod = kube.sandbox(pod_id)
        print(f"RunPodSandbox {pod.namespace}/{pod.name} ({kube.qos.value})")
        self.engine.run_pod_sandbox(pod)
        for spec in kube.spec.containers:
            ctr = kube.container(
                spec.name,
                f"{pod_id}-{spec.name}",
                pod_id=pod_id,
                memory_capacity=self.engine.memory_capacity,
            )
            try:
                result = self.engine.create_container(pod, ctr)
            except OperationFailedError as error:
                print(f"CreateContainer {spec.name}: refused: {error.reason}")
                continue
            adjusted = result.adjustment.resources
            cpus = adjusted.cpus or ctr.resources.cpus
            mems = adjusted.mems or ctr.resources.mems
            self.running[ctr.id] = (spec.name, cpus, mems)
            print(f"CreateContainer {spec.name}: cpus={show(cpus)} mems={show(mems)}")
            self.apply(result.updates, "update (in the reply)")
            for hook in (
                self.engine.post_create_container,
                self.engine.start_container,
            ):
                hook(pod, ctr.with_state(ContainerState.CREATED))
            running = kube.container(
                spec.name,
                ctr.id,
                pod_id=pod_id,
                memory_capacity=self.engine.memory_capacity,
                state=ContainerState.RUNNING,
                pid=4000 + len(self.running),
            )
            self.engine.post_start_container(pod, running)

    def remove_pod(self, pod_manifest: Manifest, pod_id: str) -> None:
        pod = KubernetesPod.from_manifest(pod_manifest).sandbox(pod_id)
        print(f"StopPodSandbox + RemovePodSandbox {pod.namespace}/{pod.name}")
        self.engine.stop_pod_sandbox(pod)
        self.engine.remove_pod_sandbox(pod)
        for cid in [c for c in self.running if c.startswith(f"{pod_id}-")]:
            del self.running[cid]
        self.apply(self.queue.take(), "update (sent later)")


def main() -> None:
    queue = UpdateQueue()
    decisions = RecordingDecisionLog()  # the agent's own log: it could send them anywhere
    engine = Engine.build(
        "exclusive-cpus",
        policy_modules=[str(POLICY_FILE)],
        machine="box-16",
        runtime_updates=queue,
        decision_log=decisions,
    )
    with engine:
        engine.start()
        machine = engine.machine
        print(f"engine: policy {engine.policy.name} on CPUs {machine.online}")
        agent = HostAgent(engine, queue)
        web = manifest(
            "web",
            "shop",
            "11111111-2222-3333-4444-555555555555",
            {"name": "nginx", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
        )
        db = manifest(
            "db",
            "shop",
            "66666666-7777-8888-9999-000000000000",
            {"name": "postgres", "resources": {"limits": {"cpu": "4", "memory": "2Gi"}}},
        )
        huge = manifest(
            "batch",
            "jobs",
            "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
            {"name": "crunch", "resources": {"limits": {"cpu": "16", "memory": "1Gi"}}},
        )
        agent.start_pod(web, "sandbox-web")
        agent.start_pod(db, "sandbox-db")
        agent.start_pod(huge, "sandbox-batch")
        print("Reconfigure: reserve CPUs 0-1")
        outcome = engine.reconfigure({"reservedResources": {"cpu": "cpuset:0-1"}})
        print(f"  applied={outcome.applied} updates={outcome.updates}")
        agent.apply(queue.take(), "update (sent later)")
        print("Reconfigure: a typo")
        outcome = engine.reconfigure({"reservedResources": {"cpus": "cpuset:0-3"}})
        print(f"  applied={outcome.applied}: {outcome.reason}")
        agent.remove_pod(db, "sandbox-db")
        print("Containers:")
        for ctr in engine.containers():
            name, cpus, mems = agent.running[ctr.id]
            agreed = "yes" if (ctr.cpus, ctr.mems) == (cpus, mems) else "NO"
            print(f"  {name}: cpus={show(cpus)} mems={show(mems)} engine agrees: {agreed}")
        print(f"{len(decisions.decisions)} decisions, {len(decisions.notices)} notices logged")


if __name__ == "__main__":
    main()
