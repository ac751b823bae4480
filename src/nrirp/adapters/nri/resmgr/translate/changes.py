"""Domain ``Adjustment`` / ``Update`` <-> NRI ``ContainerAdjustment`` / ``ContainerUpdate``.

Only fields that are set are written, so the runtime's merge sees exactly what the policy
changed (NRI treats every field a plugin sets as owned by it).
"""

from __future__ import annotations

from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.resmgr.translate.errors import TranslationError
from nrirp.adapters.nri.resmgr.translate.resources import (
    fill_resources_pb,
    resources_from_pb,
    resources_to_pb,
)
from nrirp.domain.model import (
    Adjustment,
    IOPriority,
    IOPriorityClass,
    LinuxResources,
    Mount,
    Scheduling,
    SchedulingPolicy,
    Update,
)

_POLICIES = {
    SchedulingPolicy.NONE: api_pb2.SCHED_NONE,
    SchedulingPolicy.OTHER: api_pb2.SCHED_OTHER,
    SchedulingPolicy.FIFO: api_pb2.SCHED_FIFO,
    SchedulingPolicy.RR: api_pb2.SCHED_RR,
    SchedulingPolicy.BATCH: api_pb2.SCHED_BATCH,
    SchedulingPolicy.IDLE: api_pb2.SCHED_IDLE,
    SchedulingPolicy.DEADLINE: api_pb2.SCHED_DEADLINE,
}
_POLICIES_BACK = {v: k for k, v in _POLICIES.items()}

# the config's flag names (SchedulingFlag values); "util-clamp" is both clamp flags
_FLAGS: dict[str, tuple[api_pb2.LinuxSchedulerFlag.ValueType, ...]] = {
    "reset-on-fork": (api_pb2.SCHED_FLAG_RESET_ON_FORK,),
    "reclaim": (api_pb2.SCHED_FLAG_RECLAIM,),
    "dl-overrun": (api_pb2.SCHED_FLAG_DL_OVERRUN,),
    "keep-policy": (api_pb2.SCHED_FLAG_KEEP_POLICY,),
    "keep-params": (api_pb2.SCHED_FLAG_KEEP_PARAMS,),
    "util-clamp-min": (api_pb2.SCHED_FLAG_UTIL_CLAMP_MIN,),
    "util-clamp-max": (api_pb2.SCHED_FLAG_UTIL_CLAMP_MAX,),
    "util-clamp": (api_pb2.SCHED_FLAG_UTIL_CLAMP_MIN, api_pb2.SCHED_FLAG_UTIL_CLAMP_MAX),
}
_FLAGS_BACK = {codes[0]: name for name, codes in _FLAGS.items() if len(codes) == 1}

_IO_CLASSES = {
    IOPriorityClass.NONE: api_pb2.IOPRIO_CLASS_NONE,
    IOPriorityClass.REALTIME: api_pb2.IOPRIO_CLASS_RT,
    IOPriorityClass.BEST_EFFORT: api_pb2.IOPRIO_CLASS_BE,
    IOPriorityClass.IDLE: api_pb2.IOPRIO_CLASS_IDLE,
}
_IO_CLASSES_BACK = {v: k for k, v in _IO_CLASSES.items()}


def adjustment_to_pb(adjustment: Adjustment) -> api_pb2.ContainerAdjustment:
    """The NRI adjustment carrying the set fields of ``adjustment``."""
    pb = api_pb2.ContainerAdjustment()
    for key, value in adjustment.annotations.items():
        pb.annotations[key] = value
    for mount in adjustment.mounts:
        pb.mounts.add(
            destination=mount.destination,
            type=mount.type,
            source=mount.source,
            options=list(mount.options),
        )
    for key, value in adjustment.env.items():
        pb.env.add(key=key, value=value)
    if not adjustment.resources.is_empty():
        pb.linux.resources.CopyFrom(resources_to_pb(adjustment.resources))
    if adjustment.scheduling is not None:
        pb.linux.scheduler.CopyFrom(scheduling_to_pb(adjustment.scheduling))
    if adjustment.io_priority is not None:
        priority = adjustment.io_priority
        pb.linux.io_priority.class_ = _IO_CLASSES[priority.io_class]
        pb.linux.io_priority.priority = priority.priority
        pb.linux.io_priority.SetInParent()
    return pb


def adjustment_from_pb(container_id: str, pb: api_pb2.ContainerAdjustment) -> Adjustment:
    """The domain view of an NRI adjustment (the simulated runtime and tests read it back)."""
    linux = pb.linux
    return Adjustment(
        container_id=container_id,
        resources=(
            resources_from_pb(linux.resources) if linux.HasField("resources") else LinuxResources()
        ),
        annotations=dict(pb.annotations),
        env={kv.key: kv.value for kv in pb.env},
        mounts=tuple(
            Mount(destination=m.destination, source=m.source, type=m.type, options=tuple(m.options))
            for m in pb.mounts
        ),
        scheduling=scheduling_from_pb(linux.scheduler) if linux.HasField("scheduler") else None,
        io_priority=(
            IOPriority(
                _IO_CLASSES_BACK.get(linux.io_priority.class_, IOPriorityClass.NONE),
                linux.io_priority.priority,
            )
            if linux.HasField("io_priority")
            else None
        ),
    )


def scheduling_to_pb(scheduling: Scheduling) -> api_pb2.LinuxScheduler:
    pb = api_pb2.LinuxScheduler(policy=_POLICIES[scheduling.policy])
    if scheduling.nice is not None:
        pb.nice = scheduling.nice
    if scheduling.priority is not None:
        pb.priority = scheduling.priority
    for flag in scheduling.flags:
        codes = _FLAGS.get(flag)
        if codes is None:
            known = ", ".join(sorted(_FLAGS))
            raise TranslationError(f"unknown scheduling flag {flag!r} (known: {known})")
        pb.flags.extend(codes)
    if scheduling.runtime is not None:
        pb.runtime = scheduling.runtime
    if scheduling.deadline is not None:
        pb.deadline = scheduling.deadline
    if scheduling.period is not None:
        pb.period = scheduling.period
    return pb


def scheduling_from_pb(pb: api_pb2.LinuxScheduler) -> Scheduling:
    """NRI scheduler -> domain (zero numbers read as unset: NRI has no presence for them)."""
    flags = tuple(_FLAGS_BACK[f] for f in pb.flags if f in _FLAGS_BACK)
    return Scheduling(
        policy=_POLICIES_BACK.get(pb.policy, SchedulingPolicy.NONE),
        nice=pb.nice or None,
        priority=pb.priority or None,
        flags=flags,
        runtime=pb.runtime or None,
        deadline=pb.deadline or None,
        period=pb.period or None,
    )


def update_to_pb(update: Update) -> api_pb2.ContainerUpdate:
    """The NRI update for ``update`` (only the resources it sets; ``linux.resources`` is
    present even when it sets none)."""
    resources = update.resources
    known = _LINUX.get(id(resources))
    if known is None or known[0] is not resources:
        linux = _LinuxContainerUpdate()
        linux.resources.SetInParent()
        fill_resources_pb(linux.resources, resources)
        if len(_LINUX) >= _LINUX_KEPT:
            _LINUX.clear()
        known = _LINUX[id(resources)] = (resources, linux)
    pb = _ContainerUpdate(container_id=update.container_id, linux=known[1])  # copied, in C
    if update.ignore_failure:
        pb.ignore_failure = True
    return pb


_ContainerUpdate = api_pb2.ContainerUpdate
_LinuxContainerUpdate = api_pb2.LinuxContainerUpdate
_LINUX: dict[int, tuple[LinuxResources, api_pb2.LinuxContainerUpdate]] = {}
_LINUX_KEPT = 64
"""Resources translated lately, by identity (each entry keeps its resources alive, so an id
is not reused meanwhile): the updates of a pool's containers carry the very same resources
(a Synchronize's hundreds, a few pools), translated once per pool."""


def update_from_pb(pb: api_pb2.ContainerUpdate) -> Update:
    """The domain view of an NRI update (e.g. one the runtime reports as failed)."""
    linux = pb.linux
    resources = (
        resources_from_pb(linux.resources) if linux.HasField("resources") else LinuxResources()
    )
    return Update(pb.container_id, resources, ignore_failure=pb.ignore_failure)


def updates_to_pb(updates: list[Update] | tuple[Update, ...]) -> list[api_pb2.ContainerUpdate]:
    return [update_to_pb(u) for u in updates]
