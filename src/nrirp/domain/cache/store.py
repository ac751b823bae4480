"""The cache: pods, containers, policy data and the active configuration.

The cache does no locking; the resource manager serializes every access. Values are immutable,
so nothing needs copying to roll a failed operation back: while a checkpoint is open the cache
journals the previous value of every entry it changes, and a rollback replays the journal
backwards (in O(changes), exactly, pods and containers back in their order). It also notes
which pods and containers changed since the last :meth:`Cache.take_changes`, so that saving
the state costs what changed, not the size of the cache.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Final

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


@attrs.define(eq=False)
class CacheCheckpoint:
    """A point the cache can be rolled back to; open until released or rolled back."""

    position: int
    """Length of the cache's journal when the checkpoint was taken."""
    policy_data: dict[str, Any]
    config: Any
    dirty: bool


@attrs.frozen
class CacheChanges:
    """Pods and containers changed since the previous :meth:`Cache.take_changes`.

    Each entry is ``(id, value, place)``: the current value (``None`` if it was removed since)
    and its place in the cache's order (insertion order: values are listed by ascending place;
    ``-1`` for a removed one). With ``full`` the entries are the whole cache, in its order, and
    replace whatever came before.
    """

    pods: tuple[tuple[str, Pod | None, int], ...] = ()
    containers: tuple[tuple[str, Container | None, int], ...] = ()
    full: bool = False

    def __len__(self) -> int:
        return len(self.pods) + len(self.containers)


_MISSING: Final[Any] = object()
# journal entry kinds: (kind, key, previous value or _MISSING, place of a removed entry or -1)
_POD: Final = 0
_CONTAINER: Final = 1
_BY_POD: Final = 2
_ALL: Final = 3  # replace_all: the previous tables as a whole (key and place unused)


class Cache:
    """Pods and containers by id, per-policy data, the active config and pending changes."""

    def __init__(self) -> None:
        self._pods: dict[str, Pod] = {}
        self._containers: dict[str, Container] = {}
        self._by_pod: dict[str, frozenset[str]] = {}
        self._policy_data: dict[str, Any] = {}
        self._config: Any = None
        self._dirty = False
        # derived indexes: the containers with pending changes, and the place of each pod and
        # container in its table (ascending in insertion order, so the order can be restored)
        self._pending: set[str] = set()
        self._place: dict[str, int] = {}
        self._pod_place: dict[str, int] = {}
        self._next_place = 0
        # the undo journal while a checkpoint is open (None: nothing to record)
        self._journal: list[tuple[int, Any, Any, int]] | None = None
        self._open: list[CacheCheckpoint] = []
        # ids changed since take_changes (dicts: ordered, cheap to fill)
        self._changed_pods: dict[str, None] = {}
        self._changed_containers: dict[str, None] = {}
        self._changed_all = True

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
        pid = pod.id
        old = self._pods.get(pid, _MISSING)
        if old is not _MISSING and old == pod:
            return
        if self._journal is not None:
            self._journal.append((_POD, pid, old, -1))
        self._pods[pid] = pod
        if old is _MISSING:
            self._pod_place[pid] = self._next_place
            self._next_place += 1
        self._changed_pods[pid] = None
        self._dirty = True

    def remove_pod(self, pod_id: str) -> Pod | None:
        """Remove a pod (its containers stay until removed themselves)."""
        pod = self._pods.pop(pod_id, None)
        if pod is not None:
            place = self._pod_place.pop(pod_id)
            if self._journal is not None:
                self._journal.append((_POD, pod_id, pod, place))
            self._changed_pods[pod_id] = None
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
        if self._journal is not None:  # a replaced entry keeps its place: none to record
            self._journal.append((_CONTAINER, cid, _MISSING if old is None else old, -1))
        self._containers[cid] = container
        if old is None:
            self._place[cid] = self._next_place
            self._next_place += 1
        if old is None or old.pod_id != container.pod_id:
            if old is not None:
                self._unindex(old)
            self._index(container)
        if container.pending.controllers:
            self._pending.add(cid)
        else:
            self._pending.discard(cid)
        self._changed_containers[cid] = None
        self._dirty = True

    def remove_container(self, container_id: str) -> Container | None:
        ctr = self._containers.pop(container_id, None)
        if ctr is not None:
            place = self._place.pop(container_id)
            if self._journal is not None:
                self._journal.append((_CONTAINER, container_id, ctr, place))
            self._unindex(ctr)
            self._pending.discard(container_id)
            self._changed_containers[container_id] = None
            self._dirty = True
        return ctr

    def _index(self, ctr: Container) -> None:
        pid = ctr.pod_id
        old = self._by_pod.get(pid)
        if self._journal is not None:
            self._journal.append((_BY_POD, pid, _MISSING if old is None else old, -1))
        self._by_pod[pid] = frozenset({ctr.id}) if old is None else old | {ctr.id}

    def _unindex(self, ctr: Container) -> None:
        pid = ctr.pod_id
        old = self._by_pod.get(pid)
        if old is None:
            return
        if self._journal is not None:
            self._journal.append((_BY_POD, pid, old, -1))
        remaining = old - {ctr.id}
        if remaining:
            self._by_pod[pid] = remaining
        else:
            del self._by_pod[pid]

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
        changed = ctr.with_resources(change)
        if changed is not ctr:  # a new value only when something differs: no need to compare
            self._replace(ctr, changed)
        return changed

    def _replace(self, old: Container, new: Container) -> None:
        """Store ``new``, a different version of the cached ``old`` in the same pod."""
        if new.pod_id not in self._pods:
            raise CacheError(
                f"container {new.name or new.id!r} belongs to unknown pod {new.pod_id!r}"
            )
        cid = new.id
        if self._journal is not None:
            self._journal.append((_CONTAINER, cid, old, -1))
        self._containers[cid] = new
        if new.pending.controllers:
            self._pending.add(cid)
        else:
            self._pending.discard(cid)
        self._changed_containers[cid] = None
        self._dirty = True

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
            if self._journal is not None:
                self._journal.append((_CONTAINER, container_id, ctr, -1))
            self._containers[container_id] = cleared
            if not cleared.pending.controllers:
                self._pending.discard(container_id)
            self._changed_containers[container_id] = None
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

    # ------------------------------------------------------------------ saving
    @property
    def dirty(self) -> bool:
        """Whether anything persisted changed since :meth:`mark_clean`."""
        return self._dirty

    def mark_clean(self) -> None:
        self._dirty = False

    def take_changes(self) -> CacheChanges:
        """The pods and containers changed since the previous call (all of them at the first
        call and after :meth:`replace_all`), and start noting changes anew.

        A value changed and changed back is listed too, with its current value: the changes
        say what to look at, the values are what the cache holds now.
        """
        if self._changed_all:
            changes = CacheChanges(
                tuple((pid, pod, self._pod_place[pid]) for pid, pod in self._pods.items()),
                tuple((cid, c, self._place[cid]) for cid, c in self._containers.items()),
                full=True,
            )
        else:
            pods, pod_place = self._pods, self._pod_place
            containers, place = self._containers, self._place
            changes = CacheChanges(
                tuple((i, pods.get(i), pod_place.get(i, -1)) for i in self._changed_pods),
                tuple((i, containers.get(i), place.get(i, -1)) for i in self._changed_containers),
            )
        self.forget_changes()
        return changes

    def forget_changes(self) -> None:
        """Stop tracking what changed so far (nothing will save it)."""
        self._changed_pods = {}
        self._changed_containers = {}
        self._changed_all = False

    # ------------------------------------------------------------------ transactions
    def checkpoint(self) -> CacheCheckpoint:
        """Open a checkpoint: until it is released or rolled back, the cache records how to
        undo every change. Checkpoints nest; each must end with :meth:`release` or
        :meth:`rollback`."""
        journal = self._journal
        if journal is None:
            journal = self._journal = []
        checkpoint = CacheCheckpoint(
            position=len(journal),
            policy_data=dict(self._policy_data),  # stored values are private copies
            config=self._config,
            dirty=self._dirty,
        )
        self._open.append(checkpoint)
        return checkpoint

    def release(self, checkpoint: CacheCheckpoint) -> None:
        """Keep every change made since ``checkpoint`` and close it."""
        self._close(self._opened(checkpoint))

    def rollback(self, checkpoint: CacheCheckpoint) -> None:
        """Put everything back as it was at ``checkpoint`` and close it (and every checkpoint
        opened after it)."""
        index = self._opened(checkpoint)
        journal = self._journal
        assert journal is not None  # open checkpoints keep the journal
        reinserted = False
        for kind, key, previous, place in reversed(journal[checkpoint.position :]):
            if kind == _CONTAINER:
                reinserted |= self._undo_container(key, previous, place)
            elif kind == _POD:
                reinserted |= self._undo_pod(key, previous, place)
            elif kind == _BY_POD:
                if previous is _MISSING:
                    self._by_pod.pop(key, None)
                else:
                    self._by_pod[key] = previous
            else:
                self._undo_replace_all(previous)
        del journal[checkpoint.position :]
        if reinserted:  # entries removed since came back at the end: restore the order
            self._pods = _in_order(self._pods, self._pod_place)
            self._containers = _in_order(self._containers, self._place)
        self._policy_data = dict(checkpoint.policy_data)
        self._config = checkpoint.config
        self._dirty = checkpoint.dirty
        del self._open[index + 1 :]
        self._close(index)

    def _opened(self, checkpoint: CacheCheckpoint) -> int:
        for index in range(len(self._open) - 1, -1, -1):  # usually the last one
            if self._open[index] is checkpoint:
                return index
        raise ValueError("cache checkpoint is not open (already released or rolled back)")

    def _close(self, index: int) -> None:
        del self._open[index]
        if not self._open:
            self._journal = None

    def _undo_container(self, cid: str, previous: Any, place: int) -> bool:
        containers = self._containers
        self._changed_containers[cid] = None
        if previous is _MISSING:
            containers.pop(cid, None)
            self._place.pop(cid, None)
            self._pending.discard(cid)
            return False
        reinserted = cid not in containers
        containers[cid] = previous
        if place >= 0:  # it was removed (-1: replaced, its place did not change)
            self._place[cid] = place
        if previous.pending.controllers:
            self._pending.add(cid)
        else:
            self._pending.discard(cid)
        return reinserted

    def _undo_pod(self, pid: str, previous: Any, place: int) -> bool:
        self._changed_pods[pid] = None
        if previous is _MISSING:
            self._pods.pop(pid, None)
            self._pod_place.pop(pid, None)
            return False
        reinserted = pid not in self._pods
        self._pods[pid] = previous
        if place >= 0:
            self._pod_place[pid] = place
        return reinserted

    def _undo_replace_all(self, tables: tuple[Any, ...]) -> None:
        (
            self._pods,
            self._containers,
            self._by_pod,
            self._pending,
            self._place,
            self._pod_place,
        ) = tables
        self._changed_all = True

    def replace_all(
        self,
        pods: Iterable[Pod],
        containers: Iterable[Container],
        policy_data: Mapping[str, Any],
    ) -> None:
        """Replace pods, containers and policy data wholesale (restore from a snapshot)."""
        if self._journal is not None:
            tables = (
                self._pods,
                self._containers,
                self._by_pod,
                self._pending,
                self._place,
                self._pod_place,
            )
            self._journal.append((_ALL, None, tables, -1))
        journal, self._journal = self._journal, None  # the new tables need no undo entries
        self._pods = {}
        self._containers = {}
        self._by_pod = {}
        self._pending = set()
        self._place = {}
        self._pod_place = {}
        try:
            for pod in pods:
                self.put_pod(pod)
            for ctr in containers:
                self.put_container(ctr)
        finally:
            self._journal = journal
        self._policy_data = copy.deepcopy(dict(policy_data))
        self._changed_all = True
        self._dirty = True


def _in_order(table: dict[str, Any], places: Mapping[str, int]) -> dict[str, Any]:
    """``table`` by ascending place (its insertion order before the entries that were removed
    and put back)."""
    return {key: table[key] for key in sorted(table, key=places.__getitem__)}
