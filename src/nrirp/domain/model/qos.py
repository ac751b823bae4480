"""Kubernetes QoS classes as kubelet derives them."""

from __future__ import annotations

import enum
from collections.abc import Iterable

from nrirp.domain.model.resources import LinuxResources
from nrirp.domain.model.shares import (
    DEFAULT_CFS_PERIOD_US,
    MIN_SHARES,
    cpu_limit_millis,
    millis_from_shares,
    quota_from_millis,
)


class QOSClass(enum.Enum):
    """Pod QoS class (kubelet's ``v1.PodQOSClass``)."""

    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BESTEFFORT = "BestEffort"


def _tokens(cgroup_parent: str) -> list[str]:
    tokens: list[str] = []
    for component in cgroup_parent.split("/"):
        if component.endswith(".slice"):
            # systemd driver: kubepods-burstable-pod<uid>.slice
            tokens.extend(component[: -len(".slice")].split("-"))
        elif component:
            tokens.append(component)
    return tokens


def qos_from_cgroup_parent(cgroup_parent: str) -> QOSClass | None:
    """QoS class encoded in a pod's cgroup parent, or ``None`` if the path does not say.

    kubelet places pods under ``kubepods/besteffort``, ``kubepods/burstable`` or directly under
    ``kubepods`` (Guaranteed), with both the cgroupfs (``/kubepods/burstable/pod<uid>``) and the
    systemd (``kubepods-burstable-pod<uid>.slice``) drivers.
    """
    tokens = [t.lower() for t in _tokens(cgroup_parent)]
    if "kubepods" not in tokens:
        return None
    last = len(tokens) - 1 - tokens[::-1].index("kubepods")
    after = tokens[last + 1 :]
    if "besteffort" in after:
        return QOSClass.BESTEFFORT
    if "burstable" in after:
        return QOSClass.BURSTABLE
    if after and after[0].startswith("pod"):
        return QOSClass.GUARANTEED
    return None


def qos_from_resources(containers: Iterable[LinuxResources]) -> QOSClass:
    """QoS class from the containers' cgroup settings, as kubelet's ``GetPodQOS`` would decide.

    Requests/limits are recovered from the settings kubelet derives from them: CPU request from
    shares, CPU limit from quota/period, memory limit from the memory limit. BestEffort: nothing
    requested or limited; Guaranteed: every container has CPU and memory limits and its CPU request
    equals the limit; anything else is Burstable.
    """
    items = list(containers)
    if not items:
        return QOSClass.BESTEFFORT
    best_effort = True
    guaranteed = True
    for res in items:
        request = millis_from_shares(res.cpu_shares) if res.cpu_shares is not None else 0
        limit = cpu_limit_millis(res.cpu_quota, res.cpu_period)
        memory_limit = res.memory_limit if res.memory_limit and res.memory_limit > 0 else None
        if request or limit is not None or memory_limit is not None:
            best_effort = False
        if (
            limit is None
            or memory_limit is None
            or res.cpu_shares is None
            or res.cpu_shares <= MIN_SHARES
            or quota_from_millis(request, res.cpu_period or DEFAULT_CFS_PERIOD_US) != res.cpu_quota
        ):
            guaranteed = False
    if best_effort:
        return QOSClass.BESTEFFORT
    return QOSClass.GUARANTEED if guaranteed else QOSClass.BURSTABLE
