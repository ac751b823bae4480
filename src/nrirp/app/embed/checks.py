"""What the embedding API refuses before the resource manager sees it: values no runtime can
report (the NRI and engine API adapters refuse or cannot carry them on their side)."""

from __future__ import annotations

from collections.abc import Iterable

from nrirp.domain.model import Container, LinuxResources, Pod
from nrirp.domain.model.resources import negative_unsigned


def check_resources(resources: LinuxResources | None, where: str) -> None:
    """Raise ``ValueError`` naming the field when ``resources`` holds a negative value of a
    setting that is unsigned in OCI (a negative CPU quota is kept: it means no limit)."""
    problem = negative_unsigned(resources) if resources is not None else None
    if problem is not None:
        raise ValueError(f"{where}.{problem}")


def check_pod(pod: Pod) -> None:
    """:func:`check_resources` on a pod's resources and overhead."""
    check_resources(pod.resources, f"pod {pod.namespace}/{pod.name}.resources")
    check_resources(pod.overhead, f"pod {pod.namespace}/{pod.name}.overhead")


def check_container(container: Container) -> None:
    """:func:`check_resources` on a container's resources."""
    check_resources(container.resources, f"container {container.name or container.id}.resources")


def check_all(pods: Iterable[Pod], containers: Iterable[Container]) -> None:
    """Every pod and container of a synchronization."""
    for pod in pods:
        check_pod(pod)
    for container in containers:
        check_container(container)
