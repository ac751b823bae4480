"""The simulator's workload: a YAML list of steps a cluster would make a node go through.

Loading is strict (attrs + the config converter): unknown keys, wrong types and bad quantities
are errors that name the path (``steps[2].createPod.containers[0].resources.limits.cpu``) and
the step. The format is documented key by key in ``docs/simulator.md``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

from nrirp.adapters.documents import WORKLOAD, UnreadableDocument, load_document
from nrirp.adapters.recording.format import (
    ObjectRef,
    RecordedContainer,
    RecordedPod,
    RecordingHeader,
    Synchronize,
    UpdateContainerResources,
)
from nrirp.app.simulator.expect import Expectation
from nrirp.domain.config.converter import structure
from nrirp.domain.config.duration import Duration
from nrirp.domain.config.errors import (
    MAX_SHOWN_PROBLEMS,
    InvalidObject,
    InvalidValue,
    Issue,
    Path,
    format_path,
    quote,
)
from nrirp.domain.config.quantity import Quantity
from nrirp.domain.cpuset import CPUSet, CPUSetError
from nrirp.domain.model.kubelet import HUGEPAGES_PREFIX, InvalidSpec, QuantityValue, Resources
from nrirp.domain.model.pod_spec import (
    DEFAULT_VOLUME_OPTIONS,
    ContainerSpec,
    DeviceSpec,
    MountSpec,
    PodSpec,
)
from nrirp.domain.ports.documents import DocumentError

CONTAINER_ANNOTATION = "/container."
"""The reference's per-container annotation convention: ``KEY/container.NAME`` on the pod."""
DEFAULT_NAMESPACE = "default"
MAX_SLEEP_SECONDS = 600.0


class WorkloadError(DocumentError):
    """A workload that cannot be replayed; ``problems`` lists every ``(path, message)`` (the
    message shows the first few and counts the rest)."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        count = len(problems)
        head = f"invalid workload {source} ({count} problem{'s' if count != 1 else ''})"
        lines = [f"  {p}: {m}" for p, m in problems[:MAX_SHOWN_PROBLEMS]]
        if count > MAX_SHOWN_PROBLEMS:
            lines.append(f"  ... and {count - MAX_SHOWN_PROBLEMS} more")
        super().__init__(head + ":\n" + "\n".join(lines))


# ---------------------------------------------------------------------- resources
@attrs.frozen
class ContainerResources:
    """Kubernetes ``resources: {requests: {...}, limits: {...}}`` of one container.

    Written with Kubernetes quantities (``500m``, ``2``, ``64Mi``); ``resources`` holds them
    parsed, with the API server's defaulting (a missing request defaults to the limit).
    """

    requests: Mapping[str, QuantityValue] = attrs.field(factory=dict)
    limits: Mapping[str, QuantityValue] = attrs.field(factory=dict)
    resources: Resources = attrs.field(factory=Resources, eq=False)

    @classmethod
    def from_config(cls, value: Any) -> ContainerResources:
        if not isinstance(value, Mapping):
            raise InvalidValue(value, "expected a mapping with 'requests' and/or 'limits'")
        issues: list[Issue] = []
        lists: dict[str, dict[str, QuantityValue]] = {"requests": {}, "limits": {}}
        for key, given in value.items():
            if key not in lists:
                issues.append(((str(key),), "unknown field"))
            elif given is None:
                continue
            elif not isinstance(given, Mapping):
                issues.append(((key,), f"invalid value {quote(given)}: expected a mapping"))
            else:
                issues += _quantities(key, given, lists[key])
        if not issues:
            try:
                parsed = Resources.of(lists["requests"], lists["limits"])
            except InvalidSpec as exc:
                issues.append(((), str(exc)))
            else:
                return cls(lists["requests"], lists["limits"], parsed)
        raise InvalidObject(issues)

    def to_config(self) -> dict[str, Any]:
        return {"requests": dict(self.requests), "limits": dict(self.limits)}


def _quantities(
    kind: str, given: Mapping[Any, Any], out: dict[str, QuantityValue]
) -> Iterator[Issue]:
    for name, raw in given.items():
        path: Path = (kind, str(name))
        if not isinstance(name, str) or not (
            name in ("cpu", "memory") or name.startswith(HUGEPAGES_PREFIX)
        ):
            yield path, "unsupported resource (expected cpu, memory or hugepages-<size>)"
            continue
        try:
            quantity = Quantity.from_config(raw)
        except InvalidValue as exc:
            yield path, exc.describe()
            continue
        if quantity.is_negative():
            yield path, f"invalid value {quote(raw)}: must not be negative"
            continue
        out[name] = raw


# ---------------------------------------------------------------------- steps
def _name_problem(value: str, what: str) -> str | None:
    if not value or "/" in value or "\x00" in value:
        return f"invalid {what} {quote(value)}: must be non-empty, without '/'"
    return None


def _cpuset_problem(value: str) -> str | None:
    if not value:
        return None
    try:
        CPUSet.parse(value)
    except CPUSetError as exc:
        return f"invalid value {quote(value)}: expected a cpu list such as '0-3,8' ({exc})"
    return None


@attrs.frozen(kw_only=True)
class DeviceDoc:
    """A device node of a container: ``{path, type, major, minor}`` (for topology hints)."""

    path: str
    type: str = "c"
    major: int = 0
    minor: int = 0

    def config_problems(self) -> Iterator[Issue]:
        if not self.path.startswith("/"):
            yield ("path",), f"invalid value {quote(self.path)}: expected an absolute path"
        if self.type not in ("c", "b", "u"):
            yield ("type",), f"invalid value {quote(self.type)}: expected 'c', 'b' or 'u'"
        for key, value in (("major", self.major), ("minor", self.minor)):
            if value < 0:
                yield (key,), f"invalid value {value}: must not be negative"

    def spec(self) -> DeviceSpec:
        return DeviceSpec(self.path, self.type, self.major, self.minor)


@attrs.frozen(kw_only=True)
class MountDoc:
    """A volume of a container: host path ``source`` mounted at ``destination``."""

    source: str
    destination: str
    options: tuple[str, ...] = DEFAULT_VOLUME_OPTIONS

    def config_problems(self) -> Iterator[Issue]:
        for key, value in (("source", self.source), ("destination", self.destination)):
            if not value.startswith("/"):
                yield (key,), f"invalid value {quote(value)}: expected an absolute path"

    def spec(self) -> MountSpec:
        return MountSpec(self.destination, self.source, self.options)


@attrs.frozen(kw_only=True)
class ContainerDoc:
    """A container of ``createPod``."""

    name: str
    resources: ContainerResources = attrs.field(factory=ContainerResources)
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    """Become pod annotations ``KEY/container.NAME`` (the reference's convention)."""
    cpuset_cpus: str = ""
    """CPUs CRI asks for (kubelet's static CPU manager sets them); empty: not restricted."""
    cpuset_mems: str = ""
    devices: tuple[DeviceDoc, ...] = ()
    """Device nodes the container gets (``linux.devices``)."""
    mounts: tuple[MountDoc, ...] = ()
    """Volumes: bind mounts of host paths."""

    def config_problems(self) -> Iterator[Issue]:
        problem = _name_problem(self.name, "container name")
        if problem:
            yield ("name",), problem
        for key, value in (("cpusetCpus", self.cpuset_cpus), ("cpusetMems", self.cpuset_mems)):
            problem = _cpuset_problem(value)
            if problem:
                yield (key,), problem
        for key in self.annotations:
            if CONTAINER_ANNOTATION in key:
                yield (
                    ("annotations", key),
                    "give the plain key: the simulator adds '/container.NAME' itself",
                )
        seen: set[str] = set()
        for index, mount in enumerate(self.mounts):
            if mount.destination in seen:
                yield (
                    ("mounts", index, "destination"),
                    f"another mount is already at {quote(mount.destination)}",
                )
            seen.add(mount.destination)

    def spec(self) -> ContainerSpec:
        return ContainerSpec(
            self.name,
            resources=self.resources.resources,
            cpuset_cpus=self.cpuset_cpus,
            cpuset_mems=self.cpuset_mems,
            devices=[d.spec() for d in self.devices],
            mounts=[m.spec() for m in self.mounts],
        )


@attrs.frozen(kw_only=True)
class CreatePod:
    """``createPod``: RunPodSandbox; each init container created, started and run to
    completion (stopped) in turn; then CreateContainer and StartContainer per container."""

    name: str
    namespace: str = DEFAULT_NAMESPACE
    uid: str = ""
    labels: Mapping[str, str] = attrs.field(factory=dict)
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    runtime_handler: str = ""
    init_containers: tuple[ContainerDoc, ...] = ()
    containers: tuple[ContainerDoc, ...] = ()

    def config_problems(self) -> Iterator[Issue]:
        for what, value in (("pod name", self.name), ("namespace", self.namespace)):
            problem = _name_problem(value, what)
            if problem:
                yield ("name" if what == "pod name" else "namespace",), problem
        if not self.containers:
            yield ("containers",), "a pod needs at least one container"
        seen: set[str] = set()
        for field, ctrs in (
            ("initContainers", self.init_containers),
            ("containers", self.containers),
        ):
            for index, ctr in enumerate(ctrs):
                if ctr.name in seen:
                    yield (field, index, "name"), f"duplicate container name {quote(ctr.name)}"
                seen.add(ctr.name)
                for key in ctr.annotations:
                    pod_key = key + CONTAINER_ANNOTATION + ctr.name
                    if pod_key in self.annotations:
                        yield (
                            (field, index, "annotations", key),
                            f"the pod's annotations already have {quote(pod_key)}",
                        )

    def pod_spec(self) -> PodSpec:
        """The pod as kubelet describes it to the runtime: its init containers first (they
        count for the QoS class too, as in kubelet)."""
        annotations = dict(self.annotations)
        every = (*self.init_containers, *self.containers)
        for ctr in every:
            for key, value in ctr.annotations.items():
                annotations[key + CONTAINER_ANNOTATION + ctr.name] = value
        return PodSpec(
            self.name,
            namespace=self.namespace,
            containers=[c.spec() for c in every],
            uid=self.uid,
            labels=self.labels,
            annotations=annotations,
            runtime_handler=self.runtime_handler,
        )


@attrs.frozen(kw_only=True)
class DeletePod:
    """``deletePod``: stop the pod's containers and sandbox, then remove them (kubelet order)."""

    name: str
    namespace: str = DEFAULT_NAMESPACE


@attrs.frozen(kw_only=True)
class UpdateContainer:
    """``updateContainer``: new requests/limits for a running container (in-place resize)."""

    pod: str
    namespace: str = DEFAULT_NAMESPACE
    container: str
    resources: ContainerResources


@attrs.frozen(kw_only=True)
class RestartContainer:
    """``restartContainer``: the container exits and kubelet starts a new instance of it
    (stop, create and start the next attempt, then remove the old one)."""

    pod: str
    namespace: str = DEFAULT_NAMESPACE
    container: str


@attrs.frozen(kw_only=True)
class ExitContainer:
    """``exitContainer``: a running container exits and is not restarted (restart policy
    ``Never``/``OnFailure`` after success): the runtime reports it stopped, the dead
    container stays until its pod is deleted."""

    pod: str
    namespace: str = DEFAULT_NAMESPACE
    container: str


@attrs.frozen(kw_only=True)
class Reconfigure:
    """``reconfigure``: a new policy configuration, inline or from a file."""

    config: Any = None
    """A bare spec or a whole custom resource (a mapping, or YAML text)."""
    file: str = ""
    """Path of a config file, relative to the workload file."""

    def config_problems(self) -> Iterator[Issue]:
        if (self.config is None) == (not self.file):
            yield (), "give exactly one of 'config' or 'file'"
        elif self.config is not None and not isinstance(self.config, Mapping | str):
            yield ("config",), f"invalid value {quote(self.config)}: expected a mapping"


@attrs.frozen(kw_only=True)
class ApplyConfig:
    """``applyConfig``: create or update a ``config.nri/v1alpha1`` custom resource in the
    simulated cluster, inline or from a file (as ``kubectl apply``); the node agent switches
    the policy's configuration when it is the one for the node (``node.<node>``, else
    ``group.<group>``, else ``default``), and writes its status back."""

    config: Any = None
    """The whole resource (a mapping, or YAML text)."""
    file: str = ""
    """Path of a file holding the resource, relative to the workload file."""

    def config_problems(self) -> Iterator[Issue]:
        if (self.config is None) == (not self.file):
            yield (), "give exactly one of 'config' or 'file'"
        elif self.config is not None and not isinstance(self.config, Mapping | str):
            yield ("config",), f"invalid value {quote(self.config)}: expected a mapping"


@attrs.frozen(kw_only=True)
class DeleteConfig:
    """``deleteConfig``: delete a configuration resource (``kind`` defaults to the policy's)."""

    name: str
    kind: str = ""
    namespace: str = "kube-system"


@attrs.frozen(kw_only=True)
class LabelNode:
    """``labelNode``: set a label of the simulated node (``value: null`` removes it), e.g.
    ``config.nri/group`` to move it to ``group.<value>``."""

    key: str
    value: str | None = None

    def config_problems(self) -> Iterator[Issue]:
        if not self.key:
            yield ("key",), "must not be empty"


@attrs.frozen(kw_only=True)
class Event:
    """``event``: a policy event injected into the pipeline (as a policy's own timer would)."""

    kind: str
    source: str = "simulator"
    data: Any = None

    def config_problems(self) -> Iterator[Issue]:
        if not self.kind:
            yield ("kind",), "must not be empty"


Action = (
    CreatePod
    | DeletePod
    | UpdateContainer
    | RestartContainer
    | ExitContainer
    | Reconfigure
    | ApplyConfig
    | DeleteConfig
    | LabelNode
    | Event
    | Duration
    | Synchronize
    | RecordedPod
    | RecordedContainer
    | ObjectRef
    | UpdateContainerResources
)

_ACTION_KEYS = (
    "createPod",
    "deletePod",
    "updateContainer",
    "restartContainer",
    "exitContainer",
    "reconfigure",
    "applyConfig",
    "deleteConfig",
    "labelNode",
    "event",
    "sleep",
    # the runtime's own events, as a recording has them (nrirp run --record)
    "synchronize",
    "runPodSandbox",
    "createContainer",
    "startContainer",
    "updateContainerResources",
    "stopContainer",
    "removeContainer",
    "stopPodSandbox",
    "removePodSandbox",
)
RECORDED_KINDS = frozenset(_ACTION_KEYS[_ACTION_KEYS.index("synchronize") :])
"""The steps of a recording: the runtime's events, with ids, as the daemon handled them."""


@attrs.frozen(kw_only=True)
class StepDoc:
    """One step: exactly one action key, plus an optional ``note`` and ``expectError``."""

    create_pod: CreatePod | None = None
    delete_pod: DeletePod | None = None
    update_container: UpdateContainer | None = None
    restart_container: RestartContainer | None = None
    exit_container: ExitContainer | None = None
    reconfigure: Reconfigure | None = None
    apply_config: ApplyConfig | None = None
    delete_config: DeleteConfig | None = None
    label_node: LabelNode | None = None
    event: Event | None = None
    sleep: Duration | None = None
    synchronize: Synchronize | None = None
    run_pod_sandbox: RecordedPod | None = None
    create_container: RecordedContainer | None = None
    start_container: ObjectRef | None = None
    update_container_resources: UpdateContainerResources | None = None
    stop_container: ObjectRef | None = None
    remove_container: ObjectRef | None = None
    stop_pod_sandbox: ObjectRef | None = None
    remove_pod_sandbox: ObjectRef | None = None
    note: str = ""
    expect_error: Any = None
    """``true`` (the step must fail) or text the step's errors must contain."""
    expect: tuple[Expectation, ...] = ()
    """Checks of the state after the step (and of its refusals)."""

    def actions(self) -> list[tuple[str, Action]]:
        found = [
            (key, getattr(self, name))
            for key, name in zip(_ACTION_KEYS, _ACTION_ATTRS, strict=True)
            if getattr(self, name) is not None
        ]
        return found

    def config_problems(self) -> Iterator[Issue]:
        given = [key for key, _ in self.actions()]
        if len(given) != 1:
            what = "none" if not given else " and ".join(given)
            yield (), f"expected exactly one of {', '.join(_ACTION_KEYS)}; got {what}"
        if self.expect_error is not None and not (
            self.expect_error is True or (isinstance(self.expect_error, str) and self.expect_error)
        ):
            yield (
                ("expectError",),
                f"invalid value {quote(self.expect_error)}: expected true or a non-empty text",
            )
        if self.sleep is not None and not (0 <= self.sleep.total_seconds() <= MAX_SLEEP_SECONDS):
            yield ("sleep",), f"invalid value {quote(str(self.sleep))}: expected 0 to 10m"


_ACTION_ATTRS = (
    "create_pod",
    "delete_pod",
    "update_container",
    "restart_container",
    "exit_container",
    "reconfigure",
    "apply_config",
    "delete_config",
    "label_node",
    "event",
    "sleep",
    "synchronize",
    "run_pod_sandbox",
    "create_container",
    "start_container",
    "update_container_resources",
    "stop_container",
    "remove_container",
    "stop_pod_sandbox",
    "remove_pod_sandbox",
)


@attrs.frozen(kw_only=True)
class WorkloadDoc:
    description: str = ""
    recording: RecordingHeader | None = None
    steps: tuple[StepDoc, ...] = ()


# ---------------------------------------------------------------------- the loaded workload
@attrs.frozen
class Step:
    """A step ready to replay: its 1-based ``number``, the action and its key, the note."""

    number: int
    kind: str
    action: Action
    note: str = ""
    expect_error: str | bool | None = None
    """``True``: the step must fail; text: its errors must contain it; ``None``: must succeed
    (unless ``expect`` has a ``refused`` check: the step then must fail, as with ``True``)."""
    expect: tuple[Expectation, ...] = ()
    """The checks of the state after the step."""
    subject: str = ""
    """For a recorded step: ``namespace/pod[/container]`` it acts on, when known."""

    @property
    def expected_error(self) -> str | bool | None:
        """``expect_error``, or ``True`` when a check expects a refusal."""
        if self.expect_error is None and any(c.refused is not None for c in self.expect):
            return True
        return self.expect_error

    def unmet_expectation(self, errors: Sequence[str]) -> str | None:
        """Why the outcome (``errors``) is not what the step expects, or ``None``."""
        expected = self.expected_error
        if expected is None:
            return None
        if not errors:
            return "the step was expected to fail"
        if expected is True or (isinstance(expected, str) and expected in "\n".join(errors)):
            return None
        return f"the step was expected to fail with {quote(expected)}"


@attrs.frozen
class Workload:
    """A parsed workload: the steps in order, the description, and where it came from
    (``base_dir`` resolves relative config file paths)."""

    steps: tuple[Step, ...]
    description: str = ""
    source: str = "<workload>"
    base_dir: str = "."
    recording: RecordingHeader | None = None
    """Set for a recording (``nrirp run --record``): where it came from, how it started."""


def _issue_text(path: Path) -> str:
    text = format_path(path)
    if len(path) >= 2 and path[0] == "steps" and isinstance(path[1], int):
        text += f" (step {path[1] + 1})"
    return text


def parse_workload(
    source: str | bytes | Any, *, name: str = "<workload>", base_dir: str = "."
) -> Workload:
    """A workload from YAML/JSON text (or UTF-8 bytes; within the workload budget) or parsed
    data: a list of steps, or a mapping with ``steps`` (and an optional ``description``).
    Raises :class:`WorkloadError` listing every problem with its path."""
    data: Any = source
    if isinstance(source, str | bytes):
        try:
            data = load_document(source, WORKLOAD)
        except UnreadableDocument as exc:
            raise WorkloadError(name, [("<document>", str(exc))]) from None
    if isinstance(data, list):
        data = {"steps": data}
    if not isinstance(data, Mapping):
        found = "nothing" if data is None else type(data).__name__
        raise WorkloadError(
            name, [("<document>", f"expected a list of steps or a mapping, got {found}")]
        )
    doc, issues = structure(data, WorkloadDoc)
    if issues or doc is None:
        raise WorkloadError(name, [(_issue_text(path), message) for path, message in issues])
    if not doc.steps and doc.recording is None:
        raise WorkloadError(name, [("steps", "the workload has no steps")])
    steps = []
    subjects = _Subjects(doc.recording)
    for number, step in enumerate(doc.steps, start=1):
        ((kind, action),) = step.actions()
        subject = subjects.of(action) if kind in RECORDED_KINDS else ""
        steps.append(Step(number, kind, action, step.note, step.expect_error, step.expect, subject))
    return Workload(tuple(steps), doc.description, name, base_dir, doc.recording)


class _Subjects:
    """Readable names of the pods and containers recorded steps refer to by id."""

    def __init__(self, recording: RecordingHeader | None) -> None:
        self.pods: dict[str, str] = {}
        self.containers: dict[str, str] = {}
        state = recording.state if recording is not None else None
        if isinstance(state, Mapping):  # the saved state's pods and containers, if readable
            for pod in state.get("pods") or ():
                if isinstance(pod, Mapping) and isinstance(pod.get("id"), str):
                    self.pods[pod["id"]] = f"{pod.get('namespace', '')}/{pod.get('name', '')}"
            for ctr in state.get("containers") or ():
                if isinstance(ctr, Mapping) and isinstance(ctr.get("id"), str):
                    pod_name = self.pods.get(str(ctr.get("pod_id")), "?")
                    self.containers[ctr["id"]] = f"{pod_name}/{ctr.get('name', '')}"

    def of(self, action: Action) -> str:
        if isinstance(action, Synchronize):
            for pod in action.pods:
                self.pods[pod.id] = pod.label()
            for ctr in action.containers:
                self._container(ctr)
            return ""
        if isinstance(action, RecordedPod):
            self.pods[action.id] = action.label()
            return self.pods[action.id]
        if isinstance(action, RecordedContainer):
            return self._container(action)
        if isinstance(action, ObjectRef | UpdateContainerResources):
            return self.containers.get(action.id) or self.pods.get(action.id) or action.id[:12]
        return ""

    def _container(self, ctr: RecordedContainer) -> str:
        label = f"{self.pods.get(ctr.pod, ctr.pod[:12])}/{ctr.name or ctr.id[:12]}"
        self.containers[ctr.id] = label
        return label


def load_workload(path: str) -> Workload:
    """Read and parse the workload file at ``path`` (``OSError`` if unreadable)."""
    with open(path, "rb") as handle:
        text = handle.read(WORKLOAD.max_bytes + 1)  # more is refused without reading it all
    return parse_workload(text, name=path, base_dir=os.path.dirname(os.path.abspath(path)))
