"""One-line descriptions of workload steps, for the table and the JSON document."""

from __future__ import annotations

from collections.abc import Mapping

from nrirp.adapters.recording.format import (
    RecordedContainer,
    RecordedPod,
    Synchronize,
    UpdateContainerResources,
)
from nrirp.app.simulator.workload import (
    ApplyConfig,
    ContainerResources,
    CreatePod,
    DeleteConfig,
    DeletePod,
    Event,
    ExitContainer,
    LabelNode,
    Reconfigure,
    RestartContainer,
    Step,
    UpdateContainer,
)
from nrirp.domain.config.duration import Duration


def _quantities(values: Mapping[str, object]) -> str:
    return ",".join(f"{name}={value}" for name, value in values.items())


def describe_resources(resources: ContainerResources) -> str:
    """``requests cpu=500m,memory=64Mi; limits cpu=1`` (``no requests or limits``)."""
    parts = [
        f"{kind} {_quantities(values)}"
        for kind, values in (("requests", resources.requests), ("limits", resources.limits))
        if values
    ]
    return "; ".join(parts) or "no requests or limits"


def describe_step(step: Step) -> str:
    """What the step does, e.g. ``create pod prod/web (Guaranteed; containers app, log)``."""
    action = step.action
    if isinstance(action, CreatePod):
        spec = action.pod_spec()
        names = ", ".join(c.name for c in action.containers)
        init = ", ".join(c.name for c in action.init_containers)
        plural = "s" if len(action.init_containers) != 1 else ""
        init_text = f"init container{plural} {init}; " if init else ""
        return (
            f"create pod {action.namespace}/{action.name} ({spec.qos.value}; {init_text}"
            f"container{'s' if len(action.containers) != 1 else ''} {names})"
        )
    if isinstance(action, DeletePod):
        return f"delete pod {action.namespace}/{action.name}"
    if isinstance(action, UpdateContainer):
        return (
            f"update container {action.namespace}/{action.pod}/{action.container}: "
            f"{describe_resources(action.resources)}"
        )
    if isinstance(action, RestartContainer):
        return f"restart container {action.namespace}/{action.pod}/{action.container}"
    if isinstance(action, ExitContainer):
        return f"container {action.namespace}/{action.pod}/{action.container} exits (no restart)"
    if isinstance(action, Reconfigure):
        return f"reconfigure from {action.file}" if action.file else "reconfigure (inline config)"
    if isinstance(action, ApplyConfig):
        return f"apply {action.file}" if action.file else f"apply {_resource(action.config)}"
    if isinstance(action, DeleteConfig):
        return f"delete {action.kind or 'configuration'} {action.namespace}/{action.name}"
    if isinstance(action, LabelNode):
        if action.value is None:
            return f"remove node label {action.key}"
        return f"label node {action.key}={action.value}"
    if isinstance(action, Event):
        return f"event {action.kind} from {action.source}"
    if isinstance(action, Duration):
        return f"sleep {action}"
    if isinstance(action, Synchronize):
        pods, containers = len(action.pods), len(action.containers)
        return (
            f"synchronize: the runtime runs {pods} pod{'' if pods == 1 else 's'}, "
            f"{containers} container{'' if containers == 1 else 's'}"
        )
    if isinstance(action, RecordedPod):
        return f"run pod sandbox {step.subject}"
    if isinstance(action, RecordedContainer):
        return f"create container {step.subject}"
    if isinstance(action, UpdateContainerResources):
        return f"update container {step.subject} resources"
    if step.kind in _RECORDED_VERBS:
        return f"{_RECORDED_VERBS[step.kind]} {step.subject}"
    raise TypeError(f"unknown step action {action!r}")  # pragma: no cover


_RECORDED_VERBS = {
    "startContainer": "start container",
    "stopContainer": "stop container",
    "removeContainer": "remove container",
    "stopPodSandbox": "stop pod sandbox",
    "removePodSandbox": "remove pod sandbox",
}


def _resource(config: object) -> str:
    if isinstance(config, Mapping):
        metadata = config.get("metadata")
        name = metadata.get("name", "?") if isinstance(metadata, Mapping) else "?"
        return f"{config.get('kind', 'resource')} {name}"
    return "resource (inline YAML)"
