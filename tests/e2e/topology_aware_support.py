"""Helpers for the topology-aware e2e tests: fake two-socket sysfs trees, the daemon, and
checks that a container's real cpuset is what the daemon decided.

Container cgroups on this host can only hold its real CPUs (0-1) and memory node 0, so the
fake machine keeps those ids and changes only the topology: CPU 0 on socket 0, CPU 1 on
socket 1, both on NUMA node 0. The fakehw spec language gives every NUMA node one package, so
the tree is written from the resolved two-socket layout with its two nodes merged into node 0
(the writer itself is unchanged; ``nrirp hardware --sysfs-root`` reads the result back).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import attrs

from nrirp.adapters.fakehw import resolve, spec_from_yaml, write_sysfs
from nrirp.domain.cpuset import CPUSet

from .daemon_process import DaemonProcess
from .harness import Containerd, ContainerSpec, Kubelet, PodSpec, Resources
from .harness.fixtures import PluginProcesses

POLICY = "topology-aware"
TAG_POOL = "topology-aware.pool"
TAG_KIND = "topology-aware.kind"
TAG_EXCLUSIVE = "topology-aware.exclusive"
TAG_MEMORY = "topology-aware.memory"
NODE_MEMORY = 8 << 30

# --- fake hardware ---------------------------------------------------------------------------


def two_socket_spec_yaml(isolated: str = "") -> str:
    """The fakehw spec of two packages with one single-threaded core each (CPUs 0 and 1)."""
    text = "name: two-socket-one-node\ncompact: {packages: 2, memory_per_node: 4Gi}\n"
    if isolated:
        text += f"isolated: {json.dumps(isolated)}\n"
    return text


def write_two_socket_tree(directory: Path, *, isolated: str = "") -> Path:
    """Write the two-socket machine's sysfs tree into ``directory`` (new or empty) with both
    CPUs on NUMA node 0 (8 GiB) and ``isolated`` (list syntax) kernel-isolated; returns it."""
    layout = resolve(spec_from_yaml(two_socket_spec_yaml(isolated), "two-socket spec"))
    cpus = tuple(attrs.evolve(cpu, node=0) for cpu in layout.cpus)
    node = attrs.evolve(
        layout.nodes[0],
        cpus=CPUSet.from_ids(cpu.id for cpu in cpus),
        memory_bytes=NODE_MEMORY,
        package=None,
        die=None,
    )
    merged = attrs.evolve(layout, cpus=cpus, nodes=(node,), distances={0: {0: 10}})
    write_sysfs(merged, directory)
    return directory


def hardware(sysfs: Path | None = None) -> dict[str, Any]:
    """``nrirp hardware --json`` of ``sysfs`` (default: this machine's /sys)."""
    argv = [sys.executable, "-m", "nrirp", "hardware", "--json"]
    if sysfs is not None:
        argv += ["--sysfs-root", str(sysfs)]
    done = subprocess.run(argv, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def topology_summary(doc: dict[str, Any]) -> dict[str, Any]:
    """The parts of ``nrirp hardware --json`` the tests rely on, in comparable form."""
    return {
        "cpus": doc["cpus"],
        "isolated": doc["isolated"],
        "packages": {p["id"]: (p["cpus"], p["nodes"]) for p in doc["packages"]},
        "nodes": {n["id"]: (n["cpus"], n["memory_type"]) for n in doc["nodes"]},
    }


# --- pods ------------------------------------------------------------------------------------


def besteffort_pod(name: str, namespace: str = "default") -> PodSpec:
    """A pod with one container ``c`` without requests or limits."""
    return PodSpec(name, (ContainerSpec("c"),), namespace=namespace)


def guaranteed_pod(name: str, cpus: str = "1", memory: str = "64Mi") -> PodSpec:
    """A Guaranteed pod with one container ``c`` (requests equal limits)."""
    amounts = {"cpu": cpus, "memory": memory}
    resources = Resources.of(requests=amounts, limits=amounts)
    return PodSpec(name, (ContainerSpec("c", resources),))


# --- the daemon ------------------------------------------------------------------------------


class TopologyAwareDaemon(DaemonProcess):
    """One ``nrirp run --policy topology-aware`` process with JSON logs and a state file
    (``policy`` and ``env`` let the harness be checked with another policy)."""

    def __init__(
        self,
        processes: PluginProcesses,
        runtime: Containerd,
        state_dir: Path,
        config: Path,
        sysfs: Path | None = None,
        *,
        policy: str = POLICY,
        env: dict[str, str] | None = None,
    ) -> None:
        args = ["--config-file", str(config), "--config-poll-interval", "0"]
        if sysfs is not None:
            args += ["--sysfs-root", str(sysfs)]
        super().__init__(
            processes, runtime, state_dir, policy=policy, args=args, env=env, name=f"nrirp-{policy}"
        )

    def decisions(self, container_id: str | None = None) -> list[dict[str, Any]]:
        """The ``decision`` records, optionally of one container."""
        return [
            r
            for r in self.records()
            if r["msg"] == "decision"
            and (container_id is None or r.get("container_id") == container_id)
        ]


# --- what the daemon decided and what the container got ---------------------------------------


@attrs.frozen
class Decided:
    """A container's assignment as the daemon's state file records it."""

    cpus: str
    mems: str
    pool: str | None
    kind: str | None
    tags: dict[str, str]


def decided(state: dict[str, Any], container_id: str) -> Decided | None:
    """The container's assignment in a state snapshot (None when it is not there)."""
    for container in state.get("containers", []):
        if container["id"] == container_id:
            resources = container.get("resources") or {}
            tags = dict(container.get("tags") or {})
            return Decided(
                cpus=resources.get("cpus") or "",
                mems=resources.get("mems") or "",
                pool=tags.get(TAG_POOL),
                kind=tags.get(TAG_KIND),
                tags=tags,
            )
    return None


@attrs.frozen
class Observed:
    """What a running container really has: its cgroup's cpuset and its PID 1's view."""

    cgroup_cpus: str
    cgroup_mems: str
    cpus_allowed: str
    mems_allowed: str

    def matches(self, cpus: str, mems: str) -> bool:
        return (self.cgroup_cpus, self.cpus_allowed) == (cpus, cpus) and (
            self.cgroup_mems,
            self.mems_allowed,
        ) == (mems, mems)


def observe(kube: Kubelet, container_id: str) -> Observed:
    return Observed(
        cgroup_cpus=kube.container_cgroup_cpuset(container_id),
        cgroup_mems=kube.container_cgroup_mems(container_id),
        cpus_allowed=kube.container_cpus_allowed(container_id),
        mems_allowed=kube.container_mems_allowed(container_id),
    )


def wait_placed(
    kube: Kubelet,
    daemon: TopologyAwareDaemon,
    container_id: str,
    cpus: str,
    mems: str = "0",
    *,
    kind: str | None = None,
    timeout: float = 10.0,
) -> Decided:
    """Wait until the daemon's state records ``cpus``/``mems`` (and ``kind``) for the container
    and its cgroup and /proc view show exactly those; returns the recorded assignment.

    Updates of running containers are asynchronous, so both sides are polled."""
    deadline = time.monotonic() + timeout
    seen: tuple[Decided | None, Observed | None] = (None, None)
    while True:
        try:
            record = decided(daemon.state(), container_id)
        except (FileNotFoundError, json.JSONDecodeError):
            record = None
        observed = observe(kube, container_id)
        seen = (record, observed)
        if (
            record is not None
            and (record.cpus, record.mems) == (cpus, mems)
            and (kind is None or record.kind == kind)
            and observed.matches(record.cpus, record.mems)
        ):
            return record
        if time.monotonic() > deadline:
            raise AssertionError(
                f"container {container_id}: expected cpus={cpus!r} mems={mems!r}"
                f"{'' if kind is None else f' kind={kind!r}'}; the daemon recorded {seen[0]}, "
                f"the container has {seen[1]}; decisions: {daemon.decisions(container_id)}"
            )
        time.sleep(0.1)


class CpusetWatcher:
    """Samples the cgroup ``cpuset.cpus``/``cpuset.mems`` of some containers in a thread and
    keeps every distinct value seen, so that a transient change (moved and moved back) between
    two checks is caught too."""

    def __init__(self, kube: Kubelet, container_ids: list[str], interval: float = 0.01) -> None:
        self._views = {cid: kube.container_cgroup(cid) for cid in container_ids}
        self._interval = interval
        self.seen: dict[str, list[tuple[str, str]]] = {cid: [] for cid in container_ids}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpuset-watcher", daemon=True)

    def _sample(self) -> None:
        for cid, view in self._views.items():
            value = (view.cpuset_cpus(), view.cpuset_mems())
            history = self.seen[cid]
            if not history or history[-1] != value:
                history.append(value)
        self.samples += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self._interval)

    def __enter__(self) -> CpusetWatcher:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sample()
