"""Inbound calls as steps of the simulator's workload (plain data, the keys of ``format``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from nrirp.adapters.recording.format import container_data, pod_data, resources_data
from nrirp.adapters.recording.lines import yaml_bytes
from nrirp.domain.model import Container, Pod
from nrirp.domain.ports.inbound import InboundCall

_Subject = TypeVar("_Subject", Pod, Container)

IMPLIED = frozenset({"post-create", "post-start", "post-update"})
"""Calls a replay's runtime makes itself (after a creation, start or update): not written."""

BY_ID = {
    "stop-pod": ("pod", "stopPodSandbox"),
    "remove-pod": ("pod", "removePodSandbox"),
    "start-container": ("container", "startContainer"),
    "stop-container": ("container", "stopContainer"),
    "remove-container": ("container", "removeContainer"),
}
"""Operations whose step is the id of what the runtime acted on: the call's attribute holding
it (``pod`` or ``container``) and the step's key."""


def id_step(operation: str, subject: str, failure: str | None) -> dict[str, Any]:
    """The step of an operation of :data:`BY_ID` on the pod or container ``subject``."""
    return _refused({BY_ID[operation][1]: {"id": subject}}, failure)


def alone_step(subject: Pod | Container) -> dict[str, Any]:
    """The step of a pod's run (``subject`` a pod) or of a container's creation (a container)
    that succeeded: what :func:`call_step` makes of such a call."""
    if isinstance(subject, Pod):
        return {"runPodSandbox": pod_data(subject)}
    return {"createContainer": container_data(subject)}


def call_step(call: InboundCall, config_document: Any = None) -> dict[str, Any] | None:
    """The workload step for ``call``, or ``None`` for one a replay does not need (implied
    post-events, a refused reconfiguration). A refused call's step expects an error and notes
    the daemon's reason. ``config_document`` is the document form of a reconfiguration's
    configuration."""
    operation = call.operation
    if operation in IMPLIED:
        return None
    by_id = BY_ID.get(operation)
    if by_id is not None:
        subject = getattr(call, by_id[0])
        assert subject is not None
        return id_step(operation, subject.id, call.failure)
    step: dict[str, Any]
    if operation == "synchronize":
        step = {
            "synchronize": {
                "pods": [pod_data(p) for p in call.pods],
                "containers": [container_data(c) for c in call.containers],
            }
        }
    elif operation == "run-pod":
        assert call.pod is not None
        step = {"runPodSandbox": pod_data(call.pod)}
    elif operation == "create-container":
        assert call.container is not None
        step = {"createContainer": container_data(call.container)}
    elif operation == "update-container":
        assert call.container is not None and call.resources is not None
        step = {
            "updateContainerResources": {
                "id": call.container.id,
                "resources": resources_data(call.resources),
            }
        }
    elif operation == "reconfigure":
        if call.failure is not None:
            return None  # nothing changed
        step = {"reconfigure": {"config": config_document}}
    else:
        return None  # an operation this format does not know (a newer pipeline's)
    return _refused(step, call.failure)


def synchronize_line(call: InboundCall, pause: Callable[[], None], every: int = 8) -> bytes:
    """The line of a ``synchronize`` step (what ``yaml_bytes(call_step(call))`` gives), made
    one pod or container at a time, calling ``pause`` between every ``every`` of them: a
    thread making it steps aside for the event loop (a Synchronize may list thousands)."""
    parts = [b'{"synchronize":{"pods":[']
    _append_joined(parts, call.pods, pod_data, pause, every)
    parts.append(b'],"containers":[')
    _append_joined(parts, call.containers, container_data, pause, every)
    parts.append(b"]}")
    if call.failure is not None:
        parts.append(b"," + yaml_bytes(_refused({}, call.failure))[1:-1])
    parts.append(b"}")
    return b"".join(parts)


def _append_joined(
    parts: list[bytes],
    subjects: Sequence[_Subject],
    data: Callable[[_Subject], dict[str, Any]],
    pause: Callable[[], None],
    every: int,
) -> None:
    """Append the encoded ``data`` of each of ``subjects`` to ``parts``, comma-separated,
    calling ``pause`` between every ``every`` of them."""
    for index, subject in enumerate(subjects):
        if index:
            parts.append(b",")
            if index % every == 0:
                pause()
        parts.append(yaml_bytes(data(subject)))


def _refused(step: dict[str, Any], failure: str | None) -> dict[str, Any]:
    if failure is not None:
        step["expectError"] = True
        step["note"] = f"refused by the daemon: {failure}"
    return step
