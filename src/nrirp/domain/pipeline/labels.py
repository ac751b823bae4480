"""How the pipeline names a pod or container in its messages (operations, notices): by
namespace and name when known, else by id; names from outside are quoted when odd and never
long or on a second line (``label``)."""

from __future__ import annotations

from nrirp.domain.model import Container, Pod
from nrirp.domain.ports.documents import label


def pod_label(pod: Pod) -> str:
    """``pod ns/name`` (or its id)."""
    text = f"{pod.namespace}/{pod.name}" if pod.name else pod.id
    return f"pod {label(text)}"


def ctr_label(pod: Pod | None, container: Container) -> str:
    """``container ns/pod/name`` (or its id when its pod or a name is unknown)."""
    if pod is not None and pod.name and container.name:
        return f"container {label(f'{pod.namespace}/{pod.name}/{container.name}')}"
    return f"container {label(container.id)}"
