"""NRI v0.1 requests and results, as ``github.com/containerd/nri`` v0.1 defines them.

The types follow ``types/v1/types.go`` (``Request``, ``Spec``, ``Result``, the five states)
and the exchange follows ``client.go`` / ``skel/skel.go``: the runtime runs ``TYPE invoke``
with the JSON request on stdin and reads one JSON ``Result`` from stdout; a non-empty
``error`` (or a non-zero exit with no parsable result) fails the runtime's operation. The
runtime itself appends each plugin's result to ``results`` before calling the next plugin.

This module is imported by the exec client on every container start: it imports only
``json``, and the values are plain classes.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing itself is not imported: the exec client loads this module
if TYPE_CHECKING:
    from collections.abc import Mapping

CREATE, DELETE, UPDATE, PAUSE, RESUME = "create", "delete", "update", "pause", "resume"
STATES = (CREATE, DELETE, UPDATE, PAUSE, RESUME)
VERSION = "0.1"
MAX_REQUEST_BYTES = 1 << 20
"""A request larger than this is refused unread (a container spec is a few KiB)."""


class RequestError(ValueError):
    """The request (or the plugin's configuration in it) cannot be used; the message says
    which field and why."""


def _map(value: object, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RequestError(f"{where}: expected an object of strings, got {_kind(value)}")
    for key, item in value.items():
        if not isinstance(item, str):
            raise RequestError(f"{where}.{key}: expected a string, got {_kind(item)}")
    return value


def _string(value: object, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RequestError(f"{where}: expected a string, got {_kind(value)}")
    return value


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


class Spec:
    """The container's spec as the runtime passes it (``types.Spec``)."""

    __slots__ = ("annotations", "cgroups_path", "namespaces", "resources")

    def __init__(
        self,
        resources: dict[str, object] | None = None,
        namespaces: Mapping[str, str] | None = None,
        cgroups_path: str = "",
        annotations: Mapping[str, str] | None = None,
    ) -> None:
        self.resources = resources
        """The OCI ``linux.resources`` object (or ``None``)."""
        self.namespaces = dict(namespaces or {})
        self.cgroups_path = cgroups_path
        self.annotations = dict(annotations or {})

    @classmethod
    def from_json(cls, value: object) -> Spec:
        if not isinstance(value, dict):
            raise RequestError(f"spec: expected an object, got {_kind(value)}")
        resources = value.get("resources")
        if resources is not None and not isinstance(resources, dict):
            raise RequestError(f"spec.resources: expected an object, got {_kind(resources)}")
        return cls(
            resources=resources,
            namespaces=_map(value.get("namespaces"), "spec.namespaces"),
            cgroups_path=_string(value.get("cgroupsPath"), "spec.cgroupsPath"),
            annotations=_map(value.get("annotations"), "spec.annotations"),
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Spec) and all(
            getattr(self, name) == getattr(other, name) for name in self.__slots__
        )

    def __repr__(self) -> str:
        return f"Spec(cgroups_path={self.cgroups_path!r}, annotations={self.annotations!r})"


class Result:
    """One plugin's result (``types.Result``)."""

    __slots__ = ("error", "metadata", "plugin", "version")

    def __init__(
        self,
        plugin: str,
        version: str = VERSION,
        error: str = "",
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        self.plugin = plugin
        self.version = version
        self.error = error
        self.metadata = dict(metadata or {})

    @classmethod
    def from_json(cls, value: object, where: str) -> Result:
        if not isinstance(value, dict):
            raise RequestError(f"{where}: expected an object, got {_kind(value)}")
        return cls(
            plugin=_string(value.get("plugin"), f"{where}.plugin"),
            version=_string(value.get("version"), f"{where}.version"),
            error=_string(value.get("error"), f"{where}.error"),
            metadata=_map(value.get("metadata"), f"{where}.metadata"),
        )

    def to_json(self) -> str:
        """The JSON the runtime reads (``metadata`` omitted when empty, as Go does)."""
        data: dict[str, object] = {
            "plugin": self.plugin,
            "version": self.version,
            "error": self.error,
        }
        if self.metadata:
            data["metadata"] = self.metadata
        return json.dumps(data, sort_keys=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Result) and all(
            getattr(self, name) == getattr(other, name) for name in self.__slots__
        )

    def __repr__(self) -> str:
        return f"Result(plugin={self.plugin!r}, error={self.error!r}, metadata={self.metadata!r})"


class Request:
    """One invocation (``types.Request``)."""

    __slots__ = (
        "conf",
        "id",
        "labels",
        "pid",
        "results",
        "sandbox_id",
        "spec",
        "state",
        "version",
    )

    def __init__(
        self,
        state: str,
        id: str,
        *,
        version: str = VERSION,
        sandbox_id: str = "",
        pid: int = 0,
        spec: Spec | None = None,
        labels: Mapping[str, str] | None = None,
        conf: dict[str, object] | None = None,
        results: list[Result] | None = None,
    ) -> None:
        self.state = state
        self.id = id
        self.version = version
        self.sandbox_id = sandbox_id
        self.pid = pid
        """The task's pid; ``0`` or ``-1`` when there is none."""
        self.spec = spec or Spec()
        self.labels = dict(labels or {})
        """The sandbox's labels (empty on delete: containerd passes only the sandbox id)."""
        self.conf = conf
        """This plugin's ``conf`` from ``/etc/nri/conf.json`` (``None`` when absent)."""
        self.results = list(results or [])

    @property
    def is_sandbox(self) -> bool:
        """Whether the request is for a pod sandbox (``ID == SandboxID``, as in types.go)."""
        return self.id == self.sandbox_id

    def new_result(self, plugin: str) -> Result:
        return Result(plugin=plugin, version=self.version)

    def to_json(self) -> str:
        """The request as the runtime writes it (for tests, the simulator and benchmarks)."""
        data: dict[str, object] = {}
        if self.conf is not None:
            data["conf"] = self.conf
        data.update(version=self.version, state=self.state, id=self.id)
        if self.sandbox_id:
            data["sandboxID"] = self.sandbox_id
        if self.pid:
            data["pid"] = self.pid
        spec: dict[str, object] = {"resources": self.spec.resources}
        if self.spec.namespaces:
            spec["namespaces"] = self.spec.namespaces
        if self.spec.cgroups_path:
            spec["cgroupsPath"] = self.spec.cgroups_path
        if self.spec.annotations:
            spec["annotations"] = self.spec.annotations
        data["spec"] = spec
        if self.labels:
            data["labels"] = self.labels
        if self.results:
            data["results"] = [json.loads(r.to_json()) for r in self.results]
        return json.dumps(data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Request) and all(
            getattr(self, name) == getattr(other, name) for name in self.__slots__
        )

    def __repr__(self) -> str:
        return f"Request(state={self.state!r}, id={self.id!r}, sandbox_id={self.sandbox_id!r})"


def parse_request(data: bytes | str) -> Request:
    """The request in ``data`` (the plugin's stdin).

    Required: ``version`` (0.1), ``state`` (one of :data:`STATES`), ``id``, and ``spec`` for
    create and update. Unknown keys are ignored, as Go's decoder ignores them. Raises
    :class:`RequestError` naming the field and the problem.
    """
    if len(data) > MAX_REQUEST_BYTES:
        raise RequestError(f"request of {len(data)} bytes is larger than {MAX_REQUEST_BYTES}")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RequestError(f"request is not UTF-8: {exc.reason} at byte {exc.start}") from None
    if not data.strip():
        raise RequestError("empty request: expected the NRI v0.1 request as JSON on stdin")
    try:
        value = json.loads(data)
    except json.JSONDecodeError as exc:
        raise RequestError(
            f"request is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise RequestError("request is not usable JSON: nested too deeply") from None
    if not isinstance(value, dict):
        raise RequestError(f"request: expected a JSON object, got {_kind(value)}")
    version = _string(value.get("version"), "version")
    if not version:
        raise RequestError("version: missing")
    if version != VERSION and not version.startswith(VERSION + "."):
        raise RequestError(
            f"version: {version!r} is not NRI {VERSION}, the version this plugin speaks"
        )
    state = _string(value.get("state"), "state")
    if state not in STATES:
        shown = repr(state) if state else "missing"
        raise RequestError(f"state: {shown}; expected one of {', '.join(STATES)}")
    ident = _string(value.get("id"), "id")
    if not ident:
        raise RequestError("id: missing")
    pid = value.get("pid", 0)
    if pid is None:
        pid = 0
    if isinstance(pid, bool) or not isinstance(pid, int):
        raise RequestError(f"pid: expected an integer, got {_kind(pid)}")
    spec_value = value.get("spec")
    if spec_value is None:
        if state in (CREATE, UPDATE):
            raise RequestError(f"spec: missing (a {state} request carries the container's spec)")
        spec = Spec()
    else:
        spec = Spec.from_json(spec_value)
    conf = value.get("conf")
    if conf is not None and not isinstance(conf, dict):
        raise RequestError(f"conf: expected an object, got {_kind(conf)}")
    results_value = value.get("results")
    if results_value is not None and not isinstance(results_value, list):
        raise RequestError(f"results: expected an array, got {_kind(results_value)}")
    results = [
        Result.from_json(item, f"results[{index}]")
        for index, item in enumerate(results_value or [])
    ]
    return Request(
        state,
        ident,
        version=version,
        sandbox_id=_string(value.get("sandboxID"), "sandboxID"),
        pid=pid,
        spec=spec,
        labels=_map(value.get("labels"), "labels"),
        conf=conf,
        results=results,
    )


def error_result(plugin: str, message: str, version: str = VERSION) -> Result:
    """A result that fails the runtime's operation with ``message``."""
    return Result(plugin=plugin, version=version, error=message)
