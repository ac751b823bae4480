"""Turning pods and containers reported by the runtime into cache entries."""

from __future__ import annotations

import attrs

from nrirp.domain.cache import Cache
from nrirp.domain.model import (
    Container,
    ContainerState,
    LinuxResources,
    Pod,
    QOSClass,
    estimate_requirements,
    qos_from_resources,
)

# fields a policy decides and that are re-asserted on containers surviving a restart
_ASSERTED_FIELDS = (
    "cpus",
    "mems",
    "cpu_shares",
    "cpu_quota",
    "cpu_period",
    "memory_limit",
    "rdt_class",
    "blockio_class",
)


def admit_pod(cache: Cache, pod: Pod, now: float) -> Pod:
    """Insert or refresh ``pod``; keeps the first-seen time and a known QoS class."""
    known = cache.pod(pod.id)
    if known is not None:
        qos = known.qos_class if pod.qos_class is None else pod.qos_class
        admitted = pod.seen(created_at=known.created_at, qos_class=qos)
    elif pod.created_at is None:
        admitted = pod.seen(created_at=now, qos_class=pod.qos_class)
    else:
        admitted = pod
    cache.put_pod(admitted)
    return admitted


def pod_qos(cache: Cache, pod: Pod, newcomer: Container) -> QOSClass:
    """The pod's QoS class; derived from its containers' resources when the parent is silent."""
    if pod.qos_class is not None:
        return pod.qos_class
    resources = [c.resources for c in cache.containers_of(pod.id) if c.id != newcomer.id]
    qos = qos_from_resources([*resources, newcomer.resources])
    cache.put_pod(attrs.evolve(pod, qos_class=qos))
    return qos


def admit_container(
    cache: Cache,
    container: Container,
    *,
    state: ContainerState,
    now: float,
    memory_capacity: int,
) -> Container:
    """A fresh cache entry for ``container`` with its requirements estimated."""
    pod = cache.require_pod(container.pod_id)
    qos = pod_qos(cache, pod, container)
    requirements = estimate_requirements(
        container.resources,
        qos,
        oom_score_adj=container.oom_score_adj,
        memory_capacity=memory_capacity,
    )
    admitted = container.admitted(
        state=state,
        requirements=requirements,
        created_at=container.created_at if container.created_at is not None else now,
    )
    cache.put_container(admitted)
    return admitted


def note_process(cached: Container, reported: Container) -> Container:
    """``cached`` with the process id and cgroups path the runtime reports, when it does.

    The runtime learns both only as the container comes to life (the pid at start), and the
    host controller needs one of them to find the container's cgroup.
    """
    pid = cached.pid if reported.pid is None else reported.pid
    path = reported.cgroups_path or cached.cgroups_path
    if pid == cached.pid and path == cached.cgroups_path:
        return cached
    return cached.with_process(pid, path)


def refresh_survivor(cache: Cache, cached: Container, reported: Container) -> Container:
    """Merge what the runtime reports now into a container the cache already knew.

    The cached resources (the policy's decisions) stay; fields the policy decides that the
    runtime reports differently are marked pending so they are applied again.
    """
    survivor = attrs.evolve(
        note_process(cached, reported),
        name=reported.name or cached.name,
        state=reported.state,
        labels=reported.labels,
        annotations=reported.annotations,
        mounts=reported.mounts or cached.mounts,
        devices=reported.devices or cached.devices,
    )
    drift = {
        name: getattr(cached.resources, name)
        for name in _ASSERTED_FIELDS
        if getattr(cached.resources, name) is not None
        and getattr(cached.resources, name) != getattr(reported.resources, name)
    }
    if drift and survivor.state.holds_resources:
        # start from the runtime's view so that re-applying ours registers as pending
        reported_values = {name: getattr(reported.resources, name) for name in drift}
        runtime_view = attrs.evolve(
            survivor, resources=attrs.evolve(survivor.resources, **reported_values)
        )
        survivor = runtime_view.with_resources(attrs.evolve(LinuxResources(), **drift))
    cache.put_container(survivor)
    return survivor


def resize_container(
    cache: Cache, container: Container, resources: LinuxResources, memory_capacity: int
) -> Container:
    """Record that the runtime is changing ``container``'s resources to ``resources``."""
    pod = cache.require_pod(container.pod_id)
    requested = container.resources.merged(resources)
    resized = attrs.evolve(
        container,
        resources=requested,
        requirements=estimate_requirements(
            requested,
            pod_qos(cache, pod, container),
            oom_score_adj=container.oom_score_adj,
            memory_capacity=memory_capacity,
        ),
    )
    cache.put_container(resized)
    return resized
