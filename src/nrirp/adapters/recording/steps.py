"""Inbound calls as steps of the simulator's workload (plain data, the keys of ``format``)."""

from __future__ import annotations

from typing import Any

from nrirp.adapters.recording.format import container_data, pod_data, resources_data
from nrirp.domain.ports.inbound import InboundCall

IMPLIED = frozenset({"post-create", "post-start", "post-update"})
"""Calls a replay's runtime makes itself (after a creation, start or update): not written."""


def call_step(call: InboundCall, config_document: Any = None) -> dict[str, Any] | None:
    """The workload step for ``call``, or ``None`` for one a replay does not need (implied
    post-events, a refused reconfiguration). A refused call's step expects an error and notes
    the daemon's reason. ``config_document`` is the document form of a reconfiguration's
    configuration."""
    operation = call.operation
    if operation in IMPLIED:
        return None
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
    elif operation in ("stop-pod", "remove-pod"):
        assert call.pod is not None
        key = "stopPodSandbox" if operation == "stop-pod" else "removePodSandbox"
        step = {key: {"id": call.pod.id}}
    elif operation == "create-container":
        assert call.container is not None
        step = {"createContainer": container_data(call.container)}
    elif operation in ("start-container", "stop-container", "remove-container"):
        assert call.container is not None
        key = {
            "start-container": "startContainer",
            "stop-container": "stopContainer",
            "remove-container": "removeContainer",
        }[operation]
        step = {key: {"id": call.container.id}}
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
    if call.failure is not None:
        step["expectError"] = True
        step["note"] = f"refused by the daemon: {call.failure}"
    return step
