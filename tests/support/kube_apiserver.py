"""A wire-level fake Kubernetes API server: HTTP/1.1 + JSON on a real TCP socket.

It serves what the node agent uses, the way kube-apiserver does (see the project's notes on
the API): nodes (``/api/v1/nodes``), the ``config.nri/v1alpha1`` policy kinds (namespaced, with
a status subresource) and ``topology.node.k8s.io/v1alpha2`` NodeResourceTopology
(cluster-scoped), each only once its CRD is "installed" and only at its own group, version,
plural and scope (404 otherwise). Behaviour reproduced:

* list with ``resourceVersion`` and ``fieldSelector=metadata.name=...``; watch from a version,
  one JSON event per line (chunked), ``BOOKMARK`` events with ``allowWatchBookmarks``, the end
  of the stream after ``timeoutSeconds``, 410 Gone for a compacted version (as an HTTP 410
  before the stream starts, or an ``ERROR`` event on an open one);
* ``PATCH`` as merge patch, JSON patch (RFC 6902) or server-side apply (``fieldManager``
  required; a field owned by another manager with another value is 409 unless ``force=true``);
  strategic merge is 415 for custom resources;
* the status subresource: writes to the resource ignore ``status``, writes to ``.../status``
  change only ``status``; ``metadata.generation`` moves on spec changes only;
* errors as ``kind: Status`` bodies with ``code`` and ``reason``, content type exactly
  ``application/json``: 403 Forbidden (``forbid(verb, resource)``), 404 NotFound, 409
  AlreadyExists/Conflict, 410 Gone, 415 UnsupportedMediaType;
* :meth:`FakeApiServer.stop` / :meth:`start` on the same port (an API server restart), with
  or without keeping the objects.

Only the standard library: a ``ThreadingHTTPServer`` whose handler threads wait on one
condition for watch events. Used from tests in process, and from e2e tests by address.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import itertools
import json
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs
import httpx2
import yaml

JsonObject = dict[str, Any]

CONFIG_GROUP = "config.nri"
BOOKMARK_EVERY = 0.5
"""Seconds between bookmarks on a quiet watch (a real server sends them about every minute)."""
CONFIG_KINDS = ("TopologyAwarePolicy", "BalloonsPolicy", "TemplatePolicy")


@attrs.frozen
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    status: bool
    custom: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


NODES = ResourceType("", "v1", "Node", "nodes", False, True, False)
NRT = ResourceType(
    "topology.node.k8s.io",
    "v1alpha2",
    "NodeResourceTopology",
    "noderesourcetopologies",
    False,
    False,
    True,
)


def config_type(kind: str) -> ResourceType:
    return ResourceType(CONFIG_GROUP, "v1alpha1", kind, kind.lower()[:-1] + "ies", True, True, True)


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message

    def body(self) -> JsonObject:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 (add, remove, replace, test)."""
    doc = copy.deepcopy(target)
    if not isinstance(operations, list):
        raise ApiError(400, "BadRequest", "json patch must be a list of operations")
    for op in operations:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent: Any = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last = parts[-1]
        kind = op["op"]
        if kind == "test":
            current = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if current != op["value"]:
                raise ApiError(422, "Invalid", f"test failed at {op['path']}")
        elif kind == "remove":
            del parent[int(last) if isinstance(parent, list) else last]
        elif kind in ("add", "replace"):
            if isinstance(parent, list):
                index = len(parent) if last == "-" else int(last)
                if kind == "add":
                    parent.insert(index, op["value"])
                else:
                    parent[index] = op["value"]
            else:
                if kind == "replace" and last not in parent:
                    raise ApiError(422, "Invalid", f"replace of missing {op['path']}")
                parent[last] = op["value"]
        else:
            raise ApiError(400, "BadRequest", f"unsupported json patch op {kind!r}")
    return doc


def _leaves(obj: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Field paths set by an applied object (lists are atomic, as without list-map keys)."""
    if isinstance(obj, Mapping) and obj:
        for key, value in obj.items():
            yield from _leaves(value, (*prefix, str(key)))
    else:
        yield prefix, obj


_IDENTITY = {("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace")}


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(obj, Mapping) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


def _set(obj: JsonObject, path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        obj = obj.setdefault(part, {})
    obj[path[-1]] = copy.deepcopy(value)


def _remove(obj: JsonObject, path: tuple[str, ...]) -> None:
    for part in path[:-1]:
        obj = obj.get(part)  # type: ignore[assignment]
        if not isinstance(obj, dict):
            return
    obj.pop(path[-1], None)


_MISSING = object()


@attrs.define
class Event:
    version: int
    rtype: ResourceType
    namespace: str
    type: str
    object: JsonObject


class Store:
    """Objects, versions and the event history, under one lock."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.versions = itertools.count(100)
        self.version = 99
        self.objects: dict[tuple[str, str, str], JsonObject] = {}  # (plural, ns, name)
        self.managers: dict[tuple[str, str, str], dict[str, set[tuple[str, ...]]]] = {}
        self.history: list[Event] = []
        self.compacted = 0  # watches from versions below this get 410 Gone
        self.epoch = 0  # moved by a compaction: open watches end with an ERROR 410
        self.uids = itertools.count(1)

    def next_version(self) -> int:
        self.version = next(self.versions)
        return self.version

    def publish(self, rtype: ResourceType, namespace: str, kind: str, obj: JsonObject) -> None:
        self.history.append(Event(self.version, rtype, namespace, kind, copy.deepcopy(obj)))
        self.lock.notify_all()


class FakeApiServer:
    """The server; ``url`` once started. Thread-safe helpers change objects directly."""

    def __init__(self, *, token: str = "test-token", install_crds: bool = True) -> None:
        self.token = token
        self.store = Store()
        self.types: dict[tuple[str, str, str], ResourceType] = {}
        self.install(NODES)
        if install_crds:
            for kind in CONFIG_KINDS:
                self.install(config_type(kind))
            self.install(NRT)
        self.forbidden: set[tuple[str, str]] = set()
        self.requests: list[tuple[str, str, str]] = []  # (method, path, content type)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.closing = False
        self.connections: set[Any] = set()

    # ------------------------------------------------------------------ lifecycle
    def install(self, rtype: ResourceType) -> None:
        self.types[(rtype.group, rtype.version, rtype.plural)] = rtype

    def start(self) -> FakeApiServer:
        server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler_for(self))
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self.closing = False
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self, *, keep_objects: bool = True) -> None:
        """Close the listening socket and every open watch (an API server going away)."""
        server = self._server
        if server is None:
            return
        self.closing = True
        with self.store.lock:
            self.store.lock.notify_all()
        server.shutdown()
        server.server_close()
        for connection in list(self.connections):  # kube-apiserver's connections die with it
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self.connections.clear()
        self._server = None
        if not keep_objects:
            self.store = Store()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def admin_client(self) -> httpx2.Client:
        """A plain HTTP client with the server's token (for the conformance tests)."""
        return httpx2.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=10
        )

    def write_kubeconfig(self, path: Path) -> Path:
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
                    "users": [{"name": "agent", "user": {"token": self.token}}],
                    "contexts": [
                        {
                            "name": "fake",
                            "context": {"cluster": "fake", "user": "agent"},
                        }
                    ],
                    "current-context": "fake",
                }
            )
        )
        return path

    # ------------------------------------------------------------------ direct changes
    def forbid(self, verb: str, resource: str) -> None:
        self.forbidden.add((verb, resource))

    def allow(self, verb: str, resource: str) -> None:
        self.forbidden.discard((verb, resource))

    def compact(self) -> None:
        """Expire every version so far: watches from them get 410 Gone."""
        with self.store.lock:
            self.store.compacted = self.store.version
            self.store.epoch += 1
            self.store.history.clear()
            self.store.lock.notify_all()

    def add_node(self, name: str, labels: Mapping[str, str] | None = None) -> JsonObject:
        body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
        if labels:
            body["metadata"]["labels"] = dict(labels)
        return self.create(NODES, "", body)

    def label_node(self, name: str, key: str, value: str | None) -> JsonObject:
        return self.patch(NODES, "", name, {"metadata": {"labels": {key: value}}}, "merge")

    def apply_config(self, document: Mapping[str, Any]) -> JsonObject:
        """Create the resource, or replace its spec (as ``kubectl apply`` of the whole
        document would)."""
        rtype = config_type(str(document["kind"]))
        namespace = str(document["metadata"].get("namespace", "kube-system"))
        name = str(document["metadata"]["name"])
        with self.store.lock:
            exists = (rtype.plural, namespace, name) in self.store.objects
        if not exists:
            return self.create(rtype, namespace, copy.deepcopy(dict(document)))
        replace = [{"op": "replace", "path": "/spec", "value": document.get("spec") or {}}]
        return self.patch(rtype, namespace, name, replace, "json")

    def delete_config(self, kind: str, name: str, namespace: str = "kube-system") -> None:
        self.delete(config_type(kind), namespace, name)

    def get(self, rtype: ResourceType, namespace: str, name: str) -> JsonObject | None:
        with self.store.lock:
            found = self.store.objects.get((rtype.plural, namespace, name))
            return copy.deepcopy(found) if found is not None else None

    def config(self, kind: str, name: str, namespace: str = "kube-system") -> JsonObject | None:
        return self.get(config_type(kind), namespace, name)

    def topology(self, name: str) -> JsonObject | None:
        return self.get(NRT, "", name)

    def count(self, method: str, fragment: str) -> int:
        return sum(1 for m, p, _ in self.requests if m == method and fragment in p)

    # ------------------------------------------------------------------ the API
    def create(self, rtype: ResourceType, namespace: str, body: JsonObject) -> JsonObject:
        store = self.store
        with store.lock:
            name = str((body.get("metadata") or {}).get("name", ""))
            if not name:
                raise ApiError(422, "Invalid", "metadata.name: Required value")
            key = (rtype.plural, namespace, name)
            if key in store.objects:
                raise ApiError(
                    409, "AlreadyExists", f'{rtype.plural}.{rtype.group} "{name}" already exists'
                )
            obj = copy.deepcopy(body)
            obj["apiVersion"] = rtype.api_version
            obj["kind"] = rtype.kind
            if rtype.status:
                obj.pop("status", None)
            meta = obj.setdefault("metadata", {})
            meta.pop("resourceVersion", None)
            meta.update(
                name=name,
                uid=f"uid-{next(store.uids)}",
                creationTimestamp=now_rfc3339(),
                generation=1,
                resourceVersion=str(store.next_version()),
            )
            if rtype.namespaced:
                meta["namespace"] = namespace
            store.objects[key] = obj
            store.publish(rtype, namespace, "ADDED", obj)
            return copy.deepcopy(obj)

    def replace(
        self, rtype: ResourceType, namespace: str, name: str, body: JsonObject, status: bool
    ) -> JsonObject:
        with self.store.lock:
            old = self._existing(rtype, namespace, name)
            given = str((body.get("metadata") or {}).get("resourceVersion", ""))
            if given and given != old["metadata"]["resourceVersion"]:
                raise ApiError(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {rtype.plural}.{rtype.group} "{name}": '
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again",
                )
            return self._write(rtype, namespace, name, old, body, status)

    def patch(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        patch: Any,
        kind: str,
        *,
        status: bool = False,
        manager: str = "",
        force: bool = False,
    ) -> JsonObject:
        with self.store.lock:
            key = (rtype.plural, namespace, name)
            old = self.store.objects.get(key)
            if kind == "apply":
                return self._apply(rtype, namespace, name, old, patch, status, manager, force)
            if old is None:
                raise self._not_found(rtype, name)
            if kind == "merge":
                new = merge_patch(old, patch)
            elif kind == "json":
                new = json_patch(old, patch)
            else:
                raise AssertionError(kind)
            return self._write(rtype, namespace, name, old, new, status)

    def delete(self, rtype: ResourceType, namespace: str, name: str) -> JsonObject:
        store = self.store
        with store.lock:
            old = self._existing(rtype, namespace, name)
            del store.objects[(rtype.plural, namespace, name)]
            store.managers.pop((rtype.plural, namespace, name), None)
            gone = copy.deepcopy(old)
            gone["metadata"]["resourceVersion"] = str(store.next_version())
            store.publish(rtype, namespace, "DELETED", gone)
            return gone

    def _existing(self, rtype: ResourceType, namespace: str, name: str) -> JsonObject:
        found = self.store.objects.get((rtype.plural, namespace, name))
        if found is None:
            raise self._not_found(rtype, name)
        return found

    @staticmethod
    def _not_found(rtype: ResourceType, name: str) -> ApiError:
        what = f"{rtype.plural}.{rtype.group}" if rtype.group else rtype.plural
        return ApiError(404, "NotFound", f'{what} "{name}" not found')

    def _write(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        old: JsonObject,
        new: JsonObject,
        status: bool,
    ) -> JsonObject:
        """Store ``new`` as the next version of ``old``, with the subresource rules."""
        store = self.store
        result = copy.deepcopy(new)
        if rtype.status:
            if status:  # only status changes through .../status
                result = copy.deepcopy(old)
                if "status" in new:
                    result["status"] = copy.deepcopy(new["status"])
                else:
                    result.pop("status", None)
            elif "status" in old:
                result["status"] = copy.deepcopy(old["status"])
            else:
                result.pop("status", None)
        meta = result.setdefault("metadata", {})
        for fixed in ("uid", "creationTimestamp", "name", "namespace"):
            if fixed in old["metadata"]:
                meta[fixed] = old["metadata"][fixed]
        generation = old["metadata"].get("generation", 1)
        spec_keys = [k for k in set(old) | set(result) if k not in ("metadata", "status")]
        if any(old.get(k) != result.get(k) for k in spec_keys) and not status:
            generation += 1
        meta["generation"] = generation
        result["apiVersion"], result["kind"] = rtype.api_version, rtype.kind
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        if result == old:
            return copy.deepcopy(old)  # no change: no new version, no event
        meta["resourceVersion"] = str(store.next_version())
        store.objects[(rtype.plural, namespace, name)] = result
        store.publish(rtype, namespace, "MODIFIED", result)
        return copy.deepcopy(result)

    def _apply(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        old: JsonObject | None,
        applied: Any,
        status: bool,
        manager: str,
        force: bool,
    ) -> JsonObject:
        if not manager:
            raise ApiError(
                400,
                "BadRequest",
                "PatchOptions.meta.k8s.io is invalid: fieldManager: Required value",
            )
        if not isinstance(applied, Mapping):
            raise ApiError(400, "BadRequest", "apply patch must be an object")
        key = (rtype.plural, namespace, name)
        owners = self.store.managers.setdefault(key, {})
        fields = {p for p, _ in _leaves(applied) if p not in _IDENTITY}
        base = copy.deepcopy(old) if old is not None else {"metadata": {"name": name}}
        conflicts = []
        for other, owned in owners.items():
            if other == manager:
                continue
            for path in fields & owned:
                if _get(base, path) != _get(applied, path):
                    conflicts.append((other, path))
        if conflicts and not force:
            text = "; ".join(f'conflict with "{m}": .{".".join(p)}' for m, p in conflicts)
            raise ApiError(409, "Conflict", f"Apply failed with {len(conflicts)} conflict: {text}")
        for other, owned in owners.items():
            if other != manager:
                owned -= fields
        previous = owners.get(manager, set())
        result = base
        for path in previous - fields:
            if not any(path in owned for m, owned in owners.items() if m != manager):
                _remove(result, path)
        for path in fields:
            _set(result, path, _get(applied, path))
        owners[manager] = fields
        if old is None:
            return self.create(rtype, namespace, result)
        return self._write(rtype, namespace, name, old, result, status)

    # ------------------------------------------------------------------ listing and watching
    def list(
        self, rtype: ResourceType, namespace: str | None, selector: Mapping[str, str]
    ) -> JsonObject:
        with self.store.lock:
            items = [
                copy.deepcopy(o)
                for (plural, ns, _), o in sorted(self.store.objects.items())
                if plural == rtype.plural
                and (namespace is None or ns == namespace)
                and _selected(o, selector)
            ]
            return {
                "apiVersion": rtype.api_version,
                "kind": f"{rtype.kind}List",
                "metadata": {"resourceVersion": str(self.store.version)},
                "items": items,
            }


def _selected(obj: JsonObject, selector: Mapping[str, str]) -> bool:
    for key, value in selector.items():
        if key == "metadata.name" and obj["metadata"].get("name") != value:
            return False
        if key == "metadata.namespace" and obj["metadata"].get("namespace") != value:
            return False
    return True


def _parse_selector(text: str) -> dict[str, str]:
    out = {}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        out[key.strip()] = value.lstrip("=").strip()
    return out


_PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/json-patch+json": "json",
    "application/apply-patch+yaml": "apply",
    "application/strategic-merge-patch+json": "strategic",
}


def _handler_for(api: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def setup(self) -> None:
            super().setup()
            # headers and body go out in separate writes: without this, the client's delayed
            # ACK holds every response ~40 ms, as no real API server does
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            api.connections.add(self.connection)

        def finish(self) -> None:
            api.connections.discard(self.connection)
            with contextlib.suppress(OSError):
                super().finish()

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_PUT(self) -> None:
            self._serve("PUT")

        def do_PATCH(self) -> None:
            self._serve("PATCH")

        def do_DELETE(self) -> None:
            self._serve("DELETE")

        # -------------------------------------------------------------- dispatch
        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            url = urllib.parse.urlsplit(self.path)
            query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
            api.requests.append((method, url.path, content_type))
            try:
                if self.headers.get("Authorization") != f"Bearer {api.token}":
                    raise ApiError(401, "Unauthorized", "Unauthorized")
                self._route(method, url.path, query, raw, content_type)
            except ApiError as exc:
                self._send(exc.code, exc.body())
            except (KeyError, ValueError, TypeError, json.JSONDecodeError) as exc:
                self._send(400, ApiError(400, "BadRequest", f"bad request: {exc}").body())

        def _route(
            self, method: str, path: str, query: dict[str, str], raw: bytes, content_type: str
        ) -> None:
            parts = [p for p in path.split("/") if p]
            if parts[:1] == ["api"] and len(parts) >= 2:
                group, version, rest = "", parts[1], parts[2:]
            elif parts[:1] == ["apis"] and len(parts) >= 3:
                group, version, rest = parts[1], parts[2], parts[3:]
            else:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            namespace: str | None = None
            if rest[:1] == ["namespaces"] and len(rest) >= 3:
                namespace, rest = rest[1], rest[2:]
            if not rest:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            rtype = api.types.get((group, version, rest[0]))
            across_namespaces = namespace is None and len(rest) == 1 and method == "GET"
            if (
                rtype is None
                or (rtype.namespaced and namespace is None and not across_namespaces)
                or (not rtype.namespaced and namespace is not None)
            ):
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            name = rest[1] if len(rest) >= 2 else None
            sub = rest[2] if len(rest) >= 3 else None
            if len(rest) > 3 or (sub is not None and not (sub == "status" and rtype.status)):
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            ns = namespace or ""
            verb = self._verb(method, name, query)
            resource = rtype.plural + (f"/{sub}" if sub else "")
            if (verb, resource) in api.forbidden:
                scope = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
                raise ApiError(
                    403,
                    "Forbidden",
                    f"{rtype.plural}{'.' + rtype.group if rtype.group else ''}"
                    f"{' ' + repr(name) if name else ''} is forbidden: User "
                    f'"system:serviceaccount:kube-system:nrirp" cannot {verb} resource '
                    f'"{resource}" in API group "{rtype.group}"{scope}',
                )
            if verb == "watch":
                self._watch(rtype, namespace, query)
            elif verb == "list":
                self._send(
                    200, api.list(rtype, namespace, _parse_selector(query.get("fieldSelector", "")))
                )
            elif verb == "get":
                assert name is not None
                found = api.get(rtype, ns, name)
                if found is None:
                    raise FakeApiServer._not_found(rtype, name)
                self._send(200, found)
            elif verb == "create":
                self._require_json(content_type)
                self._send(201, api.create(rtype, ns, json.loads(raw)))
            elif verb == "update":
                assert name is not None
                self._require_json(content_type)
                self._send(200, api.replace(rtype, ns, name, json.loads(raw), sub == "status"))
            elif verb == "patch":
                assert name is not None
                self._patch(rtype, ns, name, sub == "status", query, raw, content_type)
            elif verb == "delete":
                assert name is not None
                api.delete(rtype, ns, name)
                self._send(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})

        @staticmethod
        def _verb(method: str, name: str | None, query: dict[str, str]) -> str:
            if method == "GET":
                if name is None:
                    return "watch" if query.get("watch") in ("true", "1") else "list"
                return "get"
            return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]

        @staticmethod
        def _require_json(content_type: str) -> None:
            if content_type != "application/json":
                raise ApiError(
                    415,
                    "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types "
                    "include: application/json",
                )

        def _patch(
            self,
            rtype: ResourceType,
            ns: str,
            name: str,
            status: bool,
            query: dict[str, str],
            raw: bytes,
            content_type: str,
        ) -> None:
            kind = _PATCH_TYPES.get(content_type)
            if kind is None or (kind == "strategic" and rtype.custom):
                raise ApiError(
                    415,
                    "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types "
                    "include: application/json-patch+json, application/merge-patch+json, "
                    "application/apply-patch+yaml",
                )
            if kind == "strategic":
                kind = "merge"  # built-in kinds: good enough for labels
            body = yaml.safe_load(raw) if kind == "apply" else json.loads(raw)
            result = api.patch(
                rtype,
                ns,
                name,
                body,
                kind,
                status=status,
                manager=query.get("fieldManager", ""),
                force=query.get("force") == "true",
            )
            self._send(200, result)

        def _watch(self, rtype: ResourceType, namespace: str | None, query: dict[str, str]) -> None:
            store = api.store
            since_text = query.get("resourceVersion") or ""
            timeout = float(query.get("timeoutSeconds") or 1800)
            bookmarks = query.get("allowWatchBookmarks") == "true"
            selector = _parse_selector(query.get("fieldSelector", ""))
            with store.lock:
                since = int(since_text) if since_text else store.version
                epoch = store.epoch
                if since_text and since < store.compacted:
                    raise ApiError(
                        410, "Expired", f"too old resource version: {since} ({store.compacted})"
                    )
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            deadline = time.monotonic() + timeout
            last_bookmark = time.monotonic()
            try:
                while True:
                    out: list[JsonObject] = []
                    finished = False
                    with store.lock:
                        pending = [
                            e
                            for e in store.history
                            if e.version > since
                            and e.rtype.plural == rtype.plural
                            and (namespace is None or e.namespace == namespace)
                            and _selected(e.object, selector)
                        ]
                        if store.epoch != epoch:
                            gone = ApiError(410, "Expired", f"too old resource version: {since}")
                            out.append({"type": "ERROR", "object": gone.body()})
                            finished = True
                        elif pending:
                            out = [{"type": e.type, "object": e.object} for e in pending]
                            since = pending[-1].version
                        elif api.closing or time.monotonic() >= deadline:
                            finished = True
                        elif bookmarks and time.monotonic() - last_bookmark >= BOOKMARK_EVERY:
                            last_bookmark = time.monotonic()
                            since = store.version
                            mark = {"resourceVersion": str(since)}
                            out.append(
                                {
                                    "type": "BOOKMARK",
                                    "object": {
                                        "apiVersion": rtype.api_version,
                                        "kind": rtype.kind,
                                        "metadata": mark,
                                    },
                                }
                            )
                        else:
                            store.lock.wait(min(deadline - time.monotonic(), 0.1))
                    for event in out:
                        self._chunk(event)
                    if finished:
                        break
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

        def _chunk(self, event: JsonObject) -> None:
            data = json.dumps(event).encode() + b"\n"
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _send(self, code: int, body: JsonObject) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
