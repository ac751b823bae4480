"""The cache: pods, containers, policy data and the active configuration.

The cache does no locking; the resource manager serializes every access. Values are immutable,
so a checkpoint is a shallow copy and rolling back a failed operation is exact.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import (
    AnnotationReader,
    Container,
    ContainerState,
    HostChange,
    IOPriority,
    LinuxResources,
    Mount,
    Pod,
    Scheduling,
)


class CacheError(LookupError):
    """An unknown pod or container, or a container whose pod is unknown."""


@attrs.frozen
class CacheCheckpoint:
    """Everything needed to put the cache back exactly as it was."""

    pods: dict[str, Pod]
    containers: dict[str, Container]
    by_pod: dict[str, frozenset[str]]
    policy_data: dict[str, Any]
    config: Any
    dirty: bool


class Cache:
    """Pods and containers by id, per-policy data, the active config and pending changes."""

    def __init__(self) -> None:
        self._pods: dict[str, Pod] = {}
        self._containers: dict[str, Container] = {}
        self._by_pod: dict[str, frozenset[str]] = {}
        self._policy_data: dict[str, Any] = {}
        self._config: Any = None
        self._dirty = False
        # derived indexes, rebuilt on rollback: the containers with pending changes, and each
        # container's place in ``_containers`` (so they come out in the cache's order)
        self._pending: set[str] = set()
        self._place: dict[str, int] = {}
        self._next_place = 0

    # ------------------------------------------------------------------ pods
    def pod(self, pod_id: str) -> Pod | None:
        return self._pods.get(pod_id)

    def require_pod(self, pod_id: str) -> Pod:
        pod = self._pods.get(pod_id)
        if pod is None:
            raise CacheError(f"unknown pod {pod_id!r}")
        return pod

    def pods(self) -> list[Pod]:
        return list(self._pods.values())

    def put_pod(self, pod: Pod) -> None:
        """Insert or replace a pod."""
        if self._pods.get(pod.id) != pod:
            self._pods[pod.id] = pod
            self._dirty = True

    def remove_pod(self, pod_id: str) -> Pod | None:
        """Remove a pod (its containers stay until removed themselves)."""
        pod = self._pods.pop(pod_id, None)
        if pod is not None:
            self._dirty = True
        return pod

    # ------------------------------------------------------------------ containers
    def container(self, container_id: str) -> Container | None:
        return self._containers.get(container_id)

    def require_container(self, container_id: str) -> Container:
        ctr = self._containers.get(container_id)
        if ctr is None:
            raise CacheError(f"unknown container {container_id!r}")
        return ctr

    def containers(self, states: Iterable[ContainerState] | None = None) -> list[Container]:
        """All containers, or those in one of ``states``, in insertion order."""
        if states is None:
            return list(self._containers.values())
        wanted = frozenset(states)
        return [c for c in self._containers.values() if c.state in wanted]

    def active_containers(self) -> list[Container]:
        """Containers that hold (or are about to hold) resources."""
        return [c for c in self._containers.values() if c.state.holds_resources]

    def containers_of(self, pod_id: str) -> list[Container]:
        return [self._containers[i] for i in sorted(self._by_pod.get(pod_id, ()))]

    def pod_of(self, container: Container) -> Pod:
        return self.require_pod(container.pod_id)

    def put_container(self, container: Container) -> None:
        """Insert or replace a container; its pod must be known."""
        if container.pod_id not in self._pods:
            raise CacheError(
                f"container {container.name or container.id!r} belongs to unknown pod "
                f"{container.pod_id!r}"
            )
        cid = container.id
        old = self._containers.get(cid)
        if old is container or old == container:
            return
        self._containers[cid] = container
        if old is None:
            self._place[cid] = self._next_place
            self._next_place += 1
        if old is None or old.pod_id != container.pod_id:
            if old is not None:
                self._unindex(old)
            self._by_pod[container.pod_id] = self._by_pod.get(container.pod_id, frozenset()) | {cid}
        if container.pending.controllers:
            self._pending.add(cid)
        else:
            self._pending.discard(cid)
        self._dirty = True

    def remove_container(self, container_id: str) -> Container | None:
        ctr = self._containers.pop(container_id, None)
        if ctr is not None:
            self._unindex(ctr)
            self._pending.discard(container_id)
            del self._place[container_id]
            self._dirty = True
        return ctr

    def _unindex(self, ctr: Container) -> None:
        remaining = self._by_pod.get(ctr.pod_id, frozenset()) - {ctr.id}
        if remaining:
            self._by_pod[ctr.pod_id] = remaining
        else:
            self._by_pod.pop(ctr.pod_id, None)

    def _reindex(self) -> None:
        """Rebuild the derived indexes from ``_containers`` (after a rollback or restore)."""
        self._place = {cid: i for i, cid in enumerate(self._containers)}
        self._next_place = len(self._place)
        self._pending = {cid for cid, c in self._containers.items() if c.pending.controllers}

    def annotations(self, container: Container) -> AnnotationReader:
        """Typed reader of the container's effective policy annotations (from its pod)."""
        pod = self._pods.get(container.pod_id)
        return AnnotationReader(pod.annotations if pod else {}, container.name)

    # ------------------------------------------------------------------ changes
    def _change(self, changed: Container) -> Container:
        self.put_container(changed)
        return changed

    def set_resources(self, container_id: str, change: LinuxResources) -> Container:
        """Set every field ``change`` sets; marks the runtime controller when anything differs."""
        ctr = self.require_container(container_id)
        return self._change(ctr.with_resources(change))

    def set_cpus(self, container_id: str, cpus: CPUSet) -> Container:
        return self.set_resources(container_id, LinuxResources(cpus=cpus))

    def set_mems(self, container_id: str, mems: CPUSet) -> Container:
        return self.set_resources(container_id, LinuxResources(mems=mems))

    def set_cpu_shares(self, container_id: str, shares: int) -> Container:
        return self.set_resources(container_id, LinuxResources(cpu_shares=shares))

    def set_cpu_quota(self, container_id: str, quota: int) -> Container:
        return self.set_resources(container_id, LinuxResources(cpu_quota=quota))

    def set_cpu_period(self, container_id: str, period: int) -> Container:
        return self.set_resources(container_id, LinuxResources(cpu_period=period))

    def set_memory_limit(self, container_id: str, limit: int) -> Container:
        return self.set_resources(container_id, LinuxResources(memory_limit=limit))

    def set_rdt_class(self, container_id: str, rdt_class: str) -> Container:
        return self.set_resources(container_id, LinuxResources(rdt_class=rdt_class))

    def set_blockio_class(self, container_id: str, blockio_class: str) -> Container:
        return self.set_resources(container_id, LinuxResources(blockio_class=blockio_class))

    def set_scheduling(
        self,
        container_id: str,
        scheduling: Scheduling | None = None,
        io_priority: IOPriority | None = None,
    ) -> Container:
        """Scheduling class / I/O priority: at creation via the runtime, later via the host."""
        ctr = self.require_container(container_id)
        return self._change(ctr.with_scheduling(scheduling, io_priority))

    def set_host_change(self, container_id: str, change: HostChange) -> Container:
        ctr = self.require_container(container_id)
        return self._change(ctr.with_host_change(change))

    def add_creation_extras(
        self,
        container_id: str,
        *,
        annotations: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        mounts: tuple[Mount, ...] = (),
    ) -> Container:
        """Annotations, environment and mounts for a container being created."""
        ctr = self.require_container(container_id)
        return self._change(
            ctr.with_creation_extras(annotations=annotations, env=env, mounts=mounts)
        )

    def set_tags(self, container_id: str, **tags: str) -> Container:
        ctr = self.require_container(container_id)
        return self._change(ctr.with_tags(**tags))

    # ------------------------------------------------------------------ pending
    def pending_containers(self) -> list[Container]:
        """Containers with changes some controller still has to deliver, in cache order."""
        containers = self._containers
        return [containers[cid] for cid in sorted(self._pending, key=self._place.__getitem__)]

    def clear_pending(self, container_id: str, controller: str) -> None:
        ctr = self._containers.get(container_id)
        if ctr is None:
            return
        cleared = ctr.without_pending(controller)
        if cleared is not ctr:  # only the pending changes differ: no need for put_container
            self._containers[container_id] = cleared
            if not cleared.pending.controllers:
                self._pending.discard(container_id)
            self._dirty = True

    # ------------------------------------------------------------------ policy data, config
    def policy_data(self, policy: str) -> Any:
        """A copy of the data ``policy`` stored (``None`` if nothing)."""
        return copy.deepcopy(self._policy_data.get(policy))

    def set_policy_data(self, policy: str, data: Any) -> None:
        """Store JSON-compatible ``data`` for ``policy`` (copied; persisted with the state)."""
        if data is None:
            if self._policy_data.pop(policy, None) is not None:
                self._dirty = True
            return
        if self._policy_data.get(policy) != data:
            self._policy_data[policy] = copy.deepcopy(data)
            self._dirty = True

    def all_policy_data(self) -> dict[str, Any]:
        return copy.deepcopy(self._policy_data)

    def policy_data_view(self) -> dict[str, Any]:
        """The data of every policy without copying it: callers must not modify any of it.

        Stored values are private copies that are replaced, never changed in place, so the
        view stays what it was when taken (the snapshot for the state store relies on that).
        """
        return dict(self._policy_data)

    @property
    def config(self) -> Any:
        """The active configuration (a ``PolicyConfig``), ``None`` before start."""
        return self._config

    def set_config(self, config: Any) -> None:
        if config != self._config:
            self._config = config
            self._dirty = True

    # ------------------------------------------------------------------ transactions
    @property
    def dirty(self) -> bool:
        """Whether anything persisted changed since :meth:`mark_clean`."""
        return self._dirty

    def mark_clean(self) -> None:
        self._dirty = False

    def checkpoint(self) -> CacheCheckpoint:
        return CacheCheckpoint(
            pods=dict(self._pods),
            containers=dict(self._containers),
            by_pod=dict(self._by_pod),
            policy_data=dict(self._policy_data),  # stored values are private copies
            config=self._config,
            dirty=self._dirty,
        )

    def rollback(self, checkpoint: CacheCheckpoint) -> None:
        """Put everything back as it was at ``checkpoint``."""
        self._pods = dict(checkpoint.pods)
        self._containers = dict(checkpoint.containers)
        self._by_pod = dict(checkpoint.by_pod)
        self._policy_data = dict(checkpoint.policy_data)
        self._config = checkpoint.config
        self._dirty = checkpoint.dirty
        self._reindex()

    def replace_all(
        self,
        pods: Iterable[Pod],
        containers: Iterable[Container],
        policy_data: Mapping[str, Any],
    ) -> None:
        """Replace pods, containers and policy data wholesale (restore from a snapshot)."""
        self._pods = {}
        self._containers = {}
        self._by_pod = {}
        self._reindex()
        for pod in pods:
            self._pods[pod.id] = pod
        for ctr in containers:
            self.put_container(ctr)
        self._policy_data = copy.deepcopy(dict(policy_data))
        self._dirty = True
