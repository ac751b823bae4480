"""A node agent's side of the engine API: pods through ``nrirp run --engine-api`` on a socket.

    nrirp run --engine-api --policy topology-aware --engine-socket /tmp/engine.sock &
    python examples/engine_api/client.py /tmp/engine.sock

The lines its test checks (tests/examples/test_engine_api_client.py) come from a daemon on the
fake machine box-16 with CPU 0 reserved; to see them on any host:

    nrirp hardware --machine box-16 --write-sysfs /tmp/box16
    echo "reservedResources: {cpu: 'cpuset:0'}" > /tmp/engine.yaml
    nrirp run --engine-api --policy topology-aware --engine-socket /tmp/engine.sock \
        --sysfs-root /tmp/box16 --config-file /tmp/engine.yaml --state-dir /tmp/engine-state \
        --host-control none --disable-agent &

It runs a BestEffort pod, then a Guaranteed one (whose exclusive CPUs shrink the first one's
shared pool: an update in the reply), then one too big to fit (refused; the policy's
explanation of why), then removes the Guaranteed pod, then reconfigures the engine (CPU 4
reserved: the shared pool's update comes through TakeUpdates) and tries a configuration that
is refused, printing what the engine decided. The agent would apply each adjustment and update
to its runtime.
"""

from __future__ import annotations

import sys

from nrirp.adapters.engine_api.client import EngineCallError, EngineClient
from nrirp.app.embed import KubernetesPod
from nrirp.domain.model import ContainerState, Update

MEMORY_CAPACITY = 64 << 30


def manifest(name: str, cpu: str | None) -> dict[str, object]:
    resources: dict[str, object] = {}
    if cpu is not None:
        resources = {
            "requests": {"cpu": cpu, "memory": "64Mi"},
            "limits": {"cpu": cpu, "memory": "64Mi"},
        }
    return {
        "metadata": {"name": name, "namespace": "demo", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "app", "resources": resources}]},
    }


def show(updates: list[Update] | tuple[Update, ...]) -> None:
    for update in updates:
        print(f"  update {update.container_id}: cpus={update.resources.cpus}")


def start_pod(client: EngineClient, name: str, cpu: str | None) -> KubernetesPod:
    kube = KubernetesPod.from_manifest(manifest(name, cpu))
    pod = kube.sandbox(f"sandbox-{name}")
    client.run_pod_sandbox(pod)
    ctr = kube.container("app", f"{name}-app", pod_id=pod.id, memory_capacity=MEMORY_CAPACITY)
    try:
        result = client.create_container(pod, ctr)
    except EngineCallError as error:
        print(f"CreateContainer {name}: refused: {error.reason}")
        why = client.explain(f"demo/{name}/app")  # the policy's account (docs/explain.md)
        print(f"  explain: {why['verdict']}: {why['summary']}")
        return kube
    print(f"CreateContainer {name}: cpus={result.adjustment.resources.cpus}")
    show(result.updates)
    client.post_create_container(pod, ctr.with_state(ContainerState.CREATED))
    client.start_container(pod, ctr.with_state(ContainerState.CREATED))
    client.post_start_container(pod, ctr.with_state(ContainerState.RUNNING))
    return kube


def main(socket_path: str) -> int:
    with EngineClient(socket_path) as client:
        client.wait_ready(10)
        policy, _, _, _ = client.describe()
        print(f"engine: policy {policy}")
        start_pod(client, "shared", None)
        start_pod(client, "exclusive", "2")
        start_pod(client, "too-big", "64")
        pod = KubernetesPod.from_manifest(manifest("exclusive", "2")).sandbox("sandbox-exclusive")
        print("RemovePodSandbox exclusive")
        show(client.stop_pod_sandbox(pod) + client.remove_pod_sandbox(pod))
        _, _, _, containers = client.describe()
        for ctr in containers:
            print(f"container {ctr.id}: cpus={ctr.cpus}")
        reconfigure(client, 'reservedResources: {cpu: "cpuset:4"}')
        reconfigure(client, 'reservedResources: {cpu: "lots"}')  # refused: the old one stays
    return 0


def reconfigure(client: EngineClient, config: str) -> None:
    """A new configuration; what it moves is queued, and the agent's loop takes and applies it
    (TakeUpdates, a long poll: it also brings what policy timers change)."""
    outcome = client.reconfigure(config)
    if not outcome.applied:
        print(f"Reconfigure {config}: refused: {outcome.reason}")
        return
    print(f"Reconfigure {config}: {outcome.updates} update(s) queued")
    show(client.take_updates(5.0))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "/run/nrirp/engine.sock"))
