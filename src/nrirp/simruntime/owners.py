"""Which plugin owns which field of which container, and the conflicts that follows from.

Simple fields (a CPU or memory setting, the cgroups path, ...) have one owner: the first plugin
to set it. Keyed fields (annotations, mounts, env, devices, ...) have one owner per key. A second
claim is a conflict, reported with Go's message ``plugins "B" and "A" both tried to set <what>``
(B the later plugin). Fields are identified by ``api_pb2.Field`` values, which is also how the
ownership table is handed to validators (``OwningPlugins``).
"""

from __future__ import annotations

import attrs

from nrirp.adapters.nri.gen import api_pb2
from nrirp.simruntime.errors import AdjustmentConflict

F = api_pb2

SUBJECTS: dict[int, str] = {
    # the wording of the Go runtime (pkg/adaptation/result.go) where the field existed in v0.6
    F.FIELD_ANNOTATIONS: "annotation",
    F.FIELD_MOUNTS: "mount",
    F.FIELD_ENV: "env",
    F.FIELD_DEVICES: "device",
    F.FIELD_MEM_LIMIT: "memory limit",
    F.FIELD_MEM_RESERVATION: "memory reservation",
    F.FIELD_MEM_SWAP_LIMIT: "memory swap limit",
    F.FIELD_MEM_KERNEL_LIMIT: "memory kernel limit",
    F.FIELD_MEM_TCP_LIMIT: "memory TCP limit",
    F.FIELD_MEM_SWAPPINESS: "memory swappiness",
    F.FIELD_MEM_DISABLE_OOM_KILLER: "memory disable OOM killer",
    F.FIELD_MEM_USE_HIERARCHY: "memory 'UseHierarchy'",
    F.FIELD_CPU_SHARES: "CPU shares",
    F.FIELD_CPU_QUOTA: "CPU quota",
    F.FIELD_CPU_PERIOD: "CPU period",
    F.FIELD_CPU_REALTIME_RUNTIME: "CPU realtime runtime",
    F.FIELD_CPU_REALTIME_PERIOD: "CPU realtime period",
    F.FIELD_CPU_SET_CPUS: "CPU pinning",
    F.FIELD_CPU_SET_MEMS: "memory pinning",
    F.FIELD_HUGEPAGE_LIMITS: "hugepage limit of size",
    F.FIELD_BLOCKIO_CLASS: "block I/O class",
    F.FIELD_RDT_CLASS: "RDT class",
    F.FIELD_CGROUPS_UNIFIED: "unified resource",
    F.FIELD_CGROUPS_PATH: "cgroups path",
    F.FIELD_RLIMITS: "rlimit",
    # fields added after v0.6, in the same style
    F.FIELD_CDI_DEVICES: "CDI device",
    F.FIELD_ARGS: "arguments",
    F.FIELD_PIDS_LIMIT: "pids limit",
    F.FIELD_OOM_SCORE_ADJ: "OOM score adjustment",
    F.FIELD_IO_PRIORITY: "I/O priority",
    F.FIELD_SECCOMP_POLICY: "seccomp policy",
    F.FIELD_NAMESPACE: "namespace",
    F.FIELD_SYSCTL: "sysctl",
    F.FIELD_LINUX_NET_DEVICES: "net device",
    F.FIELD_LINUX_SCHED: "scheduling policy",
    F.FIELD_RDT_CLOS_ID: "RDT CLOS id",
    F.FIELD_RDT_SCHEMATA: "RDT schemata",
    F.FIELD_RDT_ENABLE_MONITORING: "RDT monitoring",
    F.FIELD_MEMORY_POLICY: "memory policy",
}


def subject(field: int, key: str | None = None) -> str:
    """How a conflict message names ``field`` (and the key of a keyed field)."""
    name = SUBJECTS.get(field, api_pb2.Field.Name(api_pb2.Field.ValueType(field)))
    return name if key is None else f"{name} {key}"


@attrs.define
class _Owner:
    plugin: str
    removal: bool = False


class Owners:
    """Field ownership of one container."""

    __slots__ = ("_compound", "_simple")

    def __init__(self) -> None:
        self._simple: dict[int, _Owner] = {}
        self._compound: dict[int, dict[str, _Owner]] = {}

    def claim(self, field: int, plugin: str, key: str | None = None) -> None:
        """Make ``plugin`` the owner, or raise :class:`AdjustmentConflict` if someone is.

        A plugin may set what it removed itself (the "remove, then set" override idiom).
        """
        keyed = None if key is None else self._compound.setdefault(field, {})
        other = self._simple.get(field) if keyed is None else keyed.get(key or "")
        if other is not None and not (other.removal and other.plugin == plugin):
            raise AdjustmentConflict(plugin, other.plugin, subject(field, key))
        if keyed is None:
            self._simple[field] = _Owner(plugin)
        else:
            keyed[key or ""] = _Owner(plugin)

    def release(self, field: int, key: str | None = None) -> None:
        """Forget the owner (a removal in runtimes before v0.10)."""
        if key is None:
            self._simple.pop(field, None)
        else:
            self._compound.get(field, {}).pop(key, None)

    def remove(self, field: int, plugin: str, key: str | None = None) -> None:
        """``plugin`` removed the entry and owns the removal (v0.10+): others may not set it."""
        if key is None:
            self._simple[field] = _Owner(plugin, removal=True)
        else:
            self._compound.setdefault(field, {})[key] = _Owner(plugin, removal=True)

    def owner(self, field: int, key: str | None = None) -> str | None:
        """The plugin owning ``field`` (``key``), if any."""
        found = self._simple.get(field) if key is None else self._compound.get(field, {}).get(key)
        return None if found is None else found.plugin

    def to_pb(self) -> api_pb2.FieldOwners:
        """The ``FieldOwners`` message validators receive."""
        out = api_pb2.FieldOwners()
        for field, owner in self._simple.items():
            out.simple[field] = owner.plugin
        for field, owners in self._compound.items():
            if owners:
                entry = out.compound[field]
                for key, owner in owners.items():
                    entry.owners[key] = owner.plugin
        return out


class OwnerTable:
    """Ownership of every container one operation touches (keyed by container id)."""

    def __init__(self) -> None:
        self._by_id: dict[str, Owners] = {}

    def of(self, container_id: str) -> Owners:
        """The owners of ``container_id`` (created empty on first use)."""
        owners = self._by_id.get(container_id)
        if owners is None:
            owners = self._by_id[container_id] = Owners()
        return owners

    def to_pb(self) -> api_pb2.OwningPlugins:
        """The ``OwningPlugins`` message validators receive."""
        out = api_pb2.OwningPlugins()
        for container_id, owners in self._by_id.items():
            out.owners[container_id].CopyFrom(owners.to_pb())
        return out
