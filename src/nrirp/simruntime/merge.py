"""Merging what several plugins return for one event, with the runtime's ownership rules.

:class:`CreateMerge` follows ``pkg/adaptation/result.go``: each plugin's adjustment is applied,
in plugin order, to the container being created (so the next plugin sees it) and collected into
one merged ``ContainerAdjustment``; every field it sets is claimed (see :mod:`.owners`). A key
prefixed with ``-`` removes the entry. :class:`UpdateCollector` merges the ``ContainerUpdate``
lists of all plugins per container id. Fields the emulated NRI release does not know are ignored,
as an older runtime ignores unknown protobuf fields.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from google.protobuf.message import Message

from nrirp.adapters.nri.gen import api_pb2
from nrirp.simruntime.emulation import NriVersion
from nrirp.simruntime.errors import AdjustmentConflict, InvalidAdjustment
from nrirp.simruntime.owners import Owners, OwnerTable
from nrirp.simruntime.pb import copy_of, has_field

F = api_pb2
M = TypeVar("M", bound=Message)

MEMORY_FIELDS = (
    ("limit", F.FIELD_MEM_LIMIT),
    ("reservation", F.FIELD_MEM_RESERVATION),
    ("swap", F.FIELD_MEM_SWAP_LIMIT),
    ("kernel", F.FIELD_MEM_KERNEL_LIMIT),
    ("kernel_tcp", F.FIELD_MEM_TCP_LIMIT),
    ("swappiness", F.FIELD_MEM_SWAPPINESS),
    ("disable_oom_killer", F.FIELD_MEM_DISABLE_OOM_KILLER),
    ("use_hierarchy", F.FIELD_MEM_USE_HIERARCHY),
)
CPU_FIELDS = (
    ("shares", F.FIELD_CPU_SHARES),
    ("quota", F.FIELD_CPU_QUOTA),
    ("period", F.FIELD_CPU_PERIOD),
    ("realtime_runtime", F.FIELD_CPU_REALTIME_RUNTIME),
    ("realtime_period", F.FIELD_CPU_REALTIME_PERIOD),
)


def removal_key(key: str) -> tuple[str, bool]:
    """``("key", True)`` for ``"-key"``, else ``(key, False)`` (Go's ``IsMarkedForRemoval``)."""
    if key.startswith("-"):
        return key[1:], True
    return key, False


def merge_resources(
    src: api_pb2.LinuxResources,
    targets: Sequence[api_pb2.LinuxResources],
    claim: Callable[[int, str | None], None],
    version: NriVersion,
) -> None:
    """Claim and copy every resource ``src`` sets into each of ``targets``."""
    if src.HasField("memory"):
        for name, field in MEMORY_FIELDS:
            if has_field(src.memory, name):
                claim(field, None)
                value = getattr(src.memory, name).value
                for target in targets:
                    getattr(target.memory, name).value = value
    if src.HasField("cpu"):
        for name, field in CPU_FIELDS:
            if has_field(src.cpu, name):
                claim(field, None)
                value = getattr(src.cpu, name).value
                for target in targets:
                    getattr(target.cpu, name).value = value
        if src.cpu.cpus:
            claim(F.FIELD_CPU_SET_CPUS, None)
            for target in targets:
                target.cpu.cpus = src.cpu.cpus
        if src.cpu.mems:
            claim(F.FIELD_CPU_SET_MEMS, None)
            for target in targets:
                target.cpu.mems = src.cpu.mems
    for limit in src.hugepage_limits:
        claim(F.FIELD_HUGEPAGE_LIMITS, limit.page_size)
        for target in targets:
            _set_hugepage_limit(target, limit)
    for key in sorted(src.unified):
        claim(F.FIELD_CGROUPS_UNIFIED, key)
        for target in targets:
            target.unified[key] = src.unified[key]
    if src.HasField("blockio_class"):
        claim(F.FIELD_BLOCKIO_CLASS, None)
        for target in targets:
            target.blockio_class.value = src.blockio_class.value
    if src.HasField("rdt_class"):
        claim(F.FIELD_RDT_CLASS, None)
        for target in targets:
            target.rdt_class.value = src.rdt_class.value
    if version.at_least(7) and src.HasField("pids"):
        claim(F.FIELD_PIDS_LIMIT, None)
        for target in targets:
            target.pids.limit = src.pids.limit


def _set_hugepage_limit(target: api_pb2.LinuxResources, limit: api_pb2.HugepageLimit) -> None:
    for existing in target.hugepage_limits:
        if existing.page_size == limit.page_size:
            existing.limit = limit.limit
            return
    target.hugepage_limits.add(page_size=limit.page_size, limit=limit.limit)


class UpdateCollector:
    """The ``ContainerUpdate`` lists of all plugins, merged per container id.

    ``creating`` is the id of a container being created (updating it is an error); ``target``
    the id of a container being updated, whose requested resources (``request``) plugins may
    change through updates of their own.
    """

    def __init__(
        self,
        version: NriVersion,
        owners: OwnerTable,
        *,
        creating: str | None = None,
        target: str | None = None,
        request: api_pb2.LinuxResources | None = None,
    ) -> None:
        self._version = version
        self._owners = owners
        self._creating = creating
        self._target = target
        self.request = copy_of(request) if request is not None else None
        self._by_id: dict[str, api_pb2.ContainerUpdate] = {}

    def merge(self, updates: Iterable[api_pb2.ContainerUpdate], plugin: str) -> None:
        """Merge one plugin's updates; raise on conflicts unless ``ignore_failure`` is set."""
        for update in updates:
            merged = self._merged_entry(update, plugin)
            try:
                self._merge_resources(merged, update, plugin)
            except AdjustmentConflict:
                if not update.ignore_failure:
                    raise

    def _merged_entry(
        self, update: api_pb2.ContainerUpdate, plugin: str
    ) -> api_pb2.ContainerUpdate:
        cid = update.container_id
        if self._creating is not None and cid == self._creating:
            raise InvalidAdjustment(
                f'plugin "{plugin}" asked update of "{cid}" during creation', plugin=plugin
            )
        merged = self._by_id.get(cid)
        if merged is not None:
            merged.ignore_failure = merged.ignore_failure and update.ignore_failure
            return merged
        merged = api_pb2.ContainerUpdate(container_id=cid, ignore_failure=update.ignore_failure)
        merged.linux.resources.SetInParent()
        self._by_id[cid] = merged
        return merged

    def _merge_resources(
        self, merged: api_pb2.ContainerUpdate, update: api_pb2.ContainerUpdate, plugin: str
    ) -> None:
        if not (update.HasField("linux") and update.linux.HasField("resources")):
            return
        cid = update.container_id
        is_target = cid == self._target and self.request is not None
        # work on a copy: an ignored failure must not leave half an update behind
        base = self.request if is_target and self.request is not None else merged.linux.resources
        resources = copy_of(base)
        owners = self._owners.of(cid)

        def claim(field: int, key: str | None) -> None:
            owners.claim(field, plugin, key)

        merge_resources(update.linux.resources, (resources,), claim, self._version)
        merged.linux.resources.CopyFrom(resources)
        if is_target:
            self.request = copy_of(resources)

    @property
    def updates(self) -> list[api_pb2.ContainerUpdate]:
        """The merged updates of containers other than the target, in first-seen order."""
        return [u for cid, u in self._by_id.items() if cid != self._target]


class CreateMerge:
    """The adjustments and updates of all plugins for one container being created.

    ``container`` is modified in place: after :meth:`apply` it is what the next plugin sees, and
    in the end what the runtime creates. :attr:`adjustment` is the merged reply.
    """

    def __init__(
        self, container: api_pb2.Container, version: NriVersion, owners: OwnerTable
    ) -> None:
        self.container = container
        self.version = version
        self.owners = owners
        self.adjustment = api_pb2.ContainerAdjustment()
        self.updates = UpdateCollector(version, owners, creating=container.id)

    def apply(self, reply: api_pb2.CreateContainerResponse, plugin: str) -> None:
        """Merge one plugin's reply; raise :class:`AdjustmentConflict` and friends."""
        if reply.HasField("adjust"):
            _Adjuster(self, plugin).run(reply.adjust)
        self.updates.merge(reply.update, plugin)


class _Adjuster:
    """Applies one plugin's ``ContainerAdjustment`` (one-shot helper of :class:`CreateMerge`)."""

    def __init__(self, merge: CreateMerge, plugin: str) -> None:
        self.ctr = merge.container
        self.reply = merge.adjustment
        self.version = merge.version
        self.plugin = plugin
        self.owners: Owners = merge.owners.of(merge.container.id)

    def claim(self, field: int, key: str | None = None) -> None:
        self.owners.claim(field, self.plugin, key)

    def cleared(self, field: int, key: str) -> None:
        if self.version.removal_claims_ownership:
            self.owners.remove(field, self.plugin, key)
        else:
            self.owners.release(field, key)

    def run(self, adj: api_pb2.ContainerAdjustment) -> None:
        at_least = self.version.at_least
        self.annotations(adj)
        self.keyed_list(
            F.FIELD_MOUNTS, adj.mounts, self.reply.mounts, self.ctr.mounts, _mount_key, _mount_of
        )
        self.env(adj)
        self.hooks(adj)
        if adj.HasField("linux"):
            linux = adj.linux
            self.keyed_list(
                F.FIELD_DEVICES,
                linux.devices,
                self.reply.linux.devices,
                self.ctr.linux.devices,
                _path_key,
                _device_of,
            )
            if linux.HasField("resources"):
                targets = (self.ctr.linux.resources, self.reply.linux.resources)
                merge_resources(linux.resources, targets, self.claim, self.version)
            if linux.cgroups_path:
                self.claim(F.FIELD_CGROUPS_PATH)
                self.ctr.linux.cgroups_path = linux.cgroups_path
                self.reply.linux.cgroups_path = linux.cgroups_path
        if at_least(4):
            self.rlimits(adj)
        if at_least(7):
            self.cdi_devices(adj)
            if adj.HasField("linux") and adj.linux.HasField("oom_score_adj"):
                self.claim(F.FIELD_OOM_SCORE_ADJ)
                value = adj.linux.oom_score_adj.value
                self.ctr.linux.oom_score_adj.value = value
                self.reply.linux.oom_score_adj.value = value
        if at_least(10):
            self.args(adj)
        if adj.HasField("linux"):
            self.newer_linux(adj.linux)

    # ------------------------------------------------------------------ keyed fields

    def annotations(self, adj: api_pb2.ContainerAdjustment) -> None:
        dels = {key for key, marked in map(removal_key, adj.annotations) if marked}
        for key in sorted(k for k in adj.annotations if not k.startswith("-")):
            if key in dels:  # "remove, then set": override an owner or the original
                self.cleared(F.FIELD_ANNOTATIONS, key)
                self.ctr.annotations.pop(key, None)
                self.reply.annotations["-" + key] = ""
                dels.discard(key)
            self.claim(F.FIELD_ANNOTATIONS, key)
            self.ctr.annotations[key] = adj.annotations[key]
            self.reply.annotations[key] = adj.annotations[key]
        for key in sorted(dels):
            # a plain removal leaves another plugin's ownership alone before v0.10
            if self.version.removal_claims_ownership:
                self.owners.remove(F.FIELD_ANNOTATIONS, self.plugin, key)
            self.ctr.annotations.pop(key, None)
            self.reply.annotations.pop(key, None)
            self.reply.annotations["-" + key] = ""

    def keyed_list(
        self,
        field: int,
        entries: Sequence[M],
        reply: Any,
        container: Any,
        key_of: Callable[[M], str],
        to_container: Callable[[M], Any],
    ) -> None:
        """Mounts, devices, namespaces: entries keyed by destination / path / type."""
        if not entries:
            return
        add: list[M] = []
        dels: set[str] = set()
        mods: set[str] = set()
        for entry in entries:
            key, marked = removal_key(key_of(entry))
            if marked:
                dels.add(key)
            else:
                add.append(entry)
                mods.add(key)
        kept = [copy_of(e) for e in reply if removal_key(key_of(e))[0] not in dels]
        for key in sorted(dels):
            self.cleared(field, key)
        del reply[:]
        reply.extend(kept)
        if self.version.removal_claims_ownership:
            reply.extend(_marker(entries, key_of, key) for key in sorted(dels))
        survivors = [copy_of(e) for e in container if key_of(e) not in dels | mods]
        del container[:]
        container.extend(survivors)
        for entry in add:
            self.claim(field, key_of(entry))
            reply.append(entry)
        container.extend(to_container(entry) for entry in add)

    def env(self, adj: api_pb2.ContainerAdjustment) -> None:
        if not adj.env:
            return
        add = [kv for kv in adj.env if not kv.key.startswith("-")]
        dels = {kv.key[1:] for kv in adj.env if kv.key.startswith("-")}
        mods = {kv.key for kv in add}
        kept = [copy_of(kv) for kv in self.reply.env if kv.key not in dels]
        for key in sorted(dels):
            self.cleared(F.FIELD_ENV, key)
        del self.reply.env[:]
        self.reply.env.extend(kept)
        if self.version.removal_claims_ownership:
            self.reply.env.extend(api_pb2.KeyValue(key="-" + key) for key in sorted(dels))
        survivors = [e for e in self.ctr.env if e.partition("=")[0] not in dels | mods]
        del self.ctr.env[:]
        self.ctr.env.extend(survivors)
        for kv in add:
            self.claim(F.FIELD_ENV, kv.key)
            self.reply.env.append(kv)
            self.ctr.env.append(f"{kv.key}={kv.value}")

    def hooks(self, adj: api_pb2.ContainerAdjustment) -> None:
        if not adj.HasField("hooks"):
            return
        for name in (
            "prestart",
            "poststart",
            "poststop",
            "create_runtime",
            "create_container",
            "start_container",
        ):
            hooks = getattr(adj.hooks, name)
            if hooks:
                getattr(self.reply.hooks, name).extend(hooks)
                getattr(self.ctr.hooks, name).extend(hooks)

    def rlimits(self, adj: api_pb2.ContainerAdjustment) -> None:
        for limit in adj.rlimits:
            self.claim(F.FIELD_RLIMITS, limit.type)
            self.reply.rlimits.append(limit)
            for existing in self.ctr.rlimits:
                if existing.type == limit.type:
                    existing.CopyFrom(limit)
                    break
            else:
                self.ctr.rlimits.append(limit)

    def cdi_devices(self, adj: api_pb2.ContainerAdjustment) -> None:
        for device in adj.CDI_devices:
            self.claim(F.FIELD_CDI_DEVICES, device.name)
            self.reply.CDI_devices.append(device)
            if self.version.at_least(10) and device.name not in {
                d.name for d in self.ctr.CDI_devices
            }:
                self.ctr.CDI_devices.append(device)

    def args(self, adj: api_pb2.ContainerAdjustment) -> None:
        args = list(adj.args)
        if not args:
            return
        if args[0] == "":  # a leading "" overrides whoever set the command line before
            self.owners.release(F.FIELD_ARGS)
            args = args[1:]
        self.claim(F.FIELD_ARGS)
        del self.ctr.args[:]
        self.ctr.args.extend(args)
        del self.reply.args[:]
        self.reply.args.extend(args)

    # ------------------------------------------------------------------ v0.10+ linux fields

    def newer_linux(self, linux: api_pb2.LinuxContainerAdjustment) -> None:
        at_least = self.version.at_least
        ctr, reply = self.ctr.linux, self.reply.linux
        if at_least(10):
            for name, field in (
                ("io_priority", F.FIELD_IO_PRIORITY),
                ("seccomp_policy", F.FIELD_SECCOMP_POLICY),
            ):
                if has_field(linux, name):
                    self.claim(field)
                    getattr(ctr, name).CopyFrom(getattr(linux, name))
                    getattr(reply, name).CopyFrom(getattr(linux, name))
            self.keyed_list(
                F.FIELD_NAMESPACE,
                linux.namespaces,
                reply.namespaces,
                ctr.namespaces,
                _type_key,
                _namespace_of,
            )
        if at_least(11):
            self.keyed_map(F.FIELD_SYSCTL, linux.sysctl, reply.sysctl, ctr.sysctl)
            self.keyed_map(
                F.FIELD_LINUX_NET_DEVICES, linux.net_devices, reply.net_devices, ctr.net_devices
            )
            if linux.HasField("scheduler"):
                self.claim(F.FIELD_LINUX_SCHED)
                ctr.scheduler.CopyFrom(linux.scheduler)
                reply.scheduler.CopyFrom(linux.scheduler)
            if linux.HasField("rdt"):
                self.rdt(linux.rdt)
        if at_least(12) and linux.HasField("memory_policy"):
            self.claim(F.FIELD_MEMORY_POLICY)
            reply.memory_policy.CopyFrom(linux.memory_policy)

    def keyed_map(self, field: int, entries: Any, reply: Any, container: Any) -> None:
        """sysctl, net devices: maps whose ``-key`` entries remove."""
        for raw in sorted(entries):
            key, marked = removal_key(raw)
            if marked:
                self.cleared(field, key)
                container.pop(key, None)
                reply.pop(key, None)
                _map_set(reply, raw, _empty_like(entries[raw]))
                continue
            self.claim(field, key)
            _map_set(container, key, entries[raw])
            _map_set(reply, key, entries[raw])

    def rdt(self, rdt: api_pb2.LinuxRdt) -> None:
        fields = (
            ("clos_id", F.FIELD_RDT_CLOS_ID),
            ("schemata", F.FIELD_RDT_SCHEMATA),
            ("enable_monitoring", F.FIELD_RDT_ENABLE_MONITORING),
        )
        for name, field in fields:
            if rdt.remove or has_field(rdt, name):
                self.claim(field)
        if rdt.remove:
            self.ctr.linux.ClearField("rdt")
        for name, _ in fields:
            if has_field(rdt, name):
                getattr(self.ctr.linux.rdt, name).CopyFrom(getattr(rdt, name))
        self.reply.linux.rdt.CopyFrom(rdt)


def _mount_key(m: api_pb2.Mount) -> str:
    return m.destination


def _path_key(d: api_pb2.LinuxDevice) -> str:
    return d.path


def _type_key(n: api_pb2.LinuxNamespace) -> str:
    return n.type


def _mount_of(m: api_pb2.Mount) -> api_pb2.Mount:
    return copy_of(m)


def _device_of(d: api_pb2.LinuxDevice) -> api_pb2.LinuxDevice:
    return copy_of(d)


def _namespace_of(n: api_pb2.LinuxNamespace) -> api_pb2.LinuxNamespace:
    return copy_of(n)


def _marker(entries: Sequence[M], key_of: Callable[[M], str], key: str) -> M:
    """The removal entry for ``key`` as the plugin sent it."""
    for entry in entries:
        if key_of(entry) == "-" + key:
            return copy_of(entry)
    raise AssertionError(f"no removal entry for {key!r}")  # pragma: no cover


def _empty_like(value: Any) -> Any:
    return type(value)() if isinstance(value, Message) else ""


def _map_set(target: Any, key: str, value: Any) -> None:
    if isinstance(value, Message):
        target[key].CopyFrom(value)
    else:
        target[key] = value
