"""An in-process Kubernetes API for the node agent: tests and ``nrirp simulate``.

:class:`FakeCluster` implements :class:`~nrirp.adapters.kubernetes.cluster.ClusterApi` over
objects in memory, with what the agent relies on from a real server: resource versions,
``metadata.generation`` that moves on spec changes only, the status subresource (merge patch,
``null`` removes), watches from a version (410 Gone for an expired one), and failures
(:meth:`FakeCluster.go_down`, :meth:`forbid`, :meth:`expire_watches`). Tests and workloads
change the cluster with :meth:`apply_config`, :meth:`delete_config`, :meth:`label_node`.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections import Counter
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

from nrirp.adapters.kubernetes.cluster import (
    CONFIG_API_VERSION,
    NRT_PLURAL,
    JsonObject,
    ObjectList,
    WatchEvent,
    plural_of,
)
from nrirp.adapters.kubernetes.errors import Forbidden, Gone, NotFound, Unreachable

_Match = Callable[[JsonObject], bool]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: mappings merge, ``None`` removes, anything else replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class FakeCluster:
    """Custom resources, nodes and NodeResourceTopology objects in memory."""

    def __init__(self, *, history: int = 1000) -> None:
        self._versions = itertools.count(1)
        self._uids = itertools.count(1)
        self.version = 0
        self.configs: dict[tuple[str, str, str], JsonObject] = {}
        """``(kind, namespace, name)`` -> the resource."""
        self.nodes: dict[str, JsonObject] = {}
        self.topologies: dict[str, JsonObject] = {}
        self.calls: Counter[str] = Counter()
        """Requests made, by ``verb resource`` (``patch balloonspolicies/status``)."""
        self.down = False
        self._forbidden: set[tuple[str, str]] = set()
        self._history: list[tuple[int, str, WatchEvent]] = []  # (version, stream, event)
        self._history_limit = history
        self._oldest = 0
        self._watchers: list[tuple[str, _Match, asyncio.Queue[WatchEvent | Exception]]] = []

    # ------------------------------------------------------------------ changing the cluster
    def add_node(self, name: str, labels: Mapping[str, str] | None = None) -> JsonObject:
        node: JsonObject = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "uid": self._uid(), "labels": dict(labels or {})},
        }
        return self._store("nodes", self.nodes, name, node, "ADDED")

    def label_node(self, name: str, key: str, value: str | None) -> JsonObject:
        """Set (or with ``None`` remove) a label of node ``name``."""
        node = copy.deepcopy(self.nodes[name])
        labels = node["metadata"].setdefault("labels", {})
        if value is None:
            labels.pop(key, None)
        else:
            labels[key] = value
        return self._store("nodes", self.nodes, name, node, "MODIFIED")

    def apply_config(
        self, document: Mapping[str, Any], namespace: str = "kube-system"
    ) -> JsonObject:
        """Create or replace a ``config.nri/v1alpha1`` resource (its ``status`` is kept, its
        generation moves when its spec changes)."""
        kind = str(document.get("kind", ""))
        metadata = dict(document.get("metadata") or {})
        name = str(metadata.get("name", ""))
        namespace = str(metadata.get("namespace") or namespace)
        if not kind or not name:
            raise ValueError("a config resource needs a kind and metadata.name")
        key = (kind, namespace, name)
        old = self.configs.get(key)
        obj: JsonObject = {
            "apiVersion": document.get("apiVersion", CONFIG_API_VERSION),
            "kind": kind,
            "metadata": {**metadata, "name": name, "namespace": namespace},
            "spec": copy.deepcopy(document.get("spec") or {}),
        }
        if old is None:
            obj["metadata"]["uid"] = self._uid()
            obj["metadata"]["generation"] = 1
            event = "ADDED"
        else:
            obj["metadata"]["uid"] = old["metadata"]["uid"]
            changed = old.get("spec") != obj["spec"]
            obj["metadata"]["generation"] = old["metadata"]["generation"] + int(changed)
            if "status" in old:
                obj["status"] = old["status"]
            event = "MODIFIED"
        return self._store(_config_stream(kind, namespace), self.configs, key, obj, event)

    def delete_config(self, kind: str, name: str, namespace: str = "kube-system") -> None:
        obj = self.configs.pop((kind, namespace, name))
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self._next_version())
        self._publish(_config_stream(kind, namespace), WatchEvent("DELETED", obj))

    def config(self, kind: str, name: str, namespace: str = "kube-system") -> JsonObject | None:
        return self.configs.get((kind, namespace, name))

    def node_status(
        self, kind: str, name: str, node: str, namespace: str = "kube-system"
    ) -> JsonObject | None:
        """``status.nodes[node]`` of a resource, or ``None``."""
        obj = self.configs.get((kind, namespace, name)) or {}
        nodes = (obj.get("status") or {}).get("nodes") or {}
        entry = nodes.get(node)
        return entry if isinstance(entry, dict) else None

    # ------------------------------------------------------------------ faults
    def go_down(self) -> None:
        """Refuse every request and end every watch, as a stopped API server would."""
        self.down = True
        self._fail_watchers(lambda: Unreachable("connection refused"))

    def come_back(self) -> None:
        self.down = False

    def forbid(self, verb: str, resource: str) -> None:
        """Deny ``verb`` on ``resource`` (``list nodes``, ``patch balloonspolicies/status``)."""
        self._forbidden.add((verb, resource))

    def allow(self, verb: str, resource: str) -> None:
        self._forbidden.discard((verb, resource))

    def expire_watches(self) -> None:
        """Forget the history: open watches get 410 Gone and must list again."""
        self._oldest = self.version + 1
        self._history.clear()
        self._fail_watchers(lambda: Gone(410, "Expired", "too old resource version"))

    def pending_events(self) -> int:
        return sum(q.qsize() for _, _, q in self._watchers)

    # ------------------------------------------------------------------ ClusterApi
    async def list_configs(self, kind: str, namespace: str) -> ObjectList:
        self._check("list", plural_of(kind))
        items = [o for (k, ns, _), o in self.configs.items() if k == kind and ns == namespace]
        return ObjectList(tuple(copy.deepcopy(items)), str(self.version))

    def watch_configs(
        self, kind: str, namespace: str, resource_version: str
    ) -> AsyncGenerator[WatchEvent, None]:
        return self._watch(
            "watch", plural_of(kind), _config_stream(kind, namespace), resource_version
        )

    async def list_node(self, name: str) -> ObjectList:
        self._check("list", "nodes")
        items = [copy.deepcopy(self.nodes[name])] if name in self.nodes else []
        return ObjectList(tuple(items), str(self.version))

    def watch_node(self, name: str, resource_version: str) -> AsyncGenerator[WatchEvent, None]:
        return self._watch("watch", "nodes", "nodes", resource_version, name)

    async def patch_config_status(
        self, kind: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> None:
        self._check("patch", f"{plural_of(kind)}/status")
        key = (kind, namespace, name)
        old = self.configs.get(key)
        if old is None:
            raise NotFound(404, "NotFound", f'{plural_of(kind)} "{name}" not found')
        obj = copy.deepcopy(old)
        status = merge_patch(obj.get("status"), patch.get("status"))
        if status:
            obj["status"] = status
        else:
            obj.pop("status", None)
        self._store(_config_stream(kind, namespace), self.configs, key, obj, "MODIFIED")

    async def apply_topology(self, document: Mapping[str, Any]) -> None:
        self._check("patch", NRT_PLURAL)
        name = str(document["metadata"]["name"])
        obj = copy.deepcopy(dict(document))
        old = self.topologies.get(name)
        obj["metadata"]["uid"] = old["metadata"]["uid"] if old else self._uid()
        self._store("topologies", self.topologies, name, obj, "MODIFIED" if old else "ADDED")

    async def close(self) -> None:
        """Nothing to close."""

    # ------------------------------------------------------------------ internals
    def _uid(self) -> str:
        return f"00000000-0000-4000-8000-{next(self._uids):012d}"

    def _next_version(self) -> int:
        self.version = next(self._versions)
        return self.version

    def _check(self, verb: str, resource: str) -> None:
        self.calls[f"{verb} {resource}"] += 1
        if self.down:
            raise Unreachable("connection refused")
        if (verb, resource) in self._forbidden:
            message = (
                f'{resource} is forbidden: User "system:serviceaccount:kube-system:nrirp" '
                f"cannot {verb} resource"
            )
            raise Forbidden(403, "Forbidden", message, verb=verb, resource=resource)

    def _store(
        self, stream: str, table: dict[Any, JsonObject], key: Any, obj: JsonObject, event: str
    ) -> JsonObject:
        obj["metadata"]["resourceVersion"] = str(self._next_version())
        table[key] = obj
        self._publish(stream, WatchEvent(event, copy.deepcopy(obj)))
        return obj

    def _publish(self, stream: str, event: WatchEvent) -> None:
        self._history.append((self.version, stream, event))
        if len(self._history) > self._history_limit:
            dropped = self._history.pop(0)
            self._oldest = dropped[0] + 1
        for watched, match, queue in self._watchers:
            if watched == stream and match(event.object):
                queue.put_nowait(event)

    def _fail_watchers(self, error: Callable[[], Exception]) -> None:
        for _, _, queue in self._watchers:
            queue.put_nowait(error())

    async def _watch(
        self, verb: str, resource: str, stream: str, since: str, name: str | None = None
    ) -> AsyncGenerator[WatchEvent, None]:
        self._check(verb, resource)
        start = int(since or 0)
        if start and start < self._oldest - 1:
            raise Gone(410, "Expired", f"too old resource version: {start} ({self._oldest})")

        def match(obj: JsonObject) -> bool:
            return name is None or obj.get("metadata", {}).get("name") == name

        queue: asyncio.Queue[WatchEvent | Exception] = asyncio.Queue()
        backlog = [e for v, s, e in self._history if v > start and s == stream and match(e.object)]
        entry = (stream, match, queue)
        self._watchers.append(entry)
        try:
            for event in backlog:
                yield event
            while True:
                item = await queue.get()
                if isinstance(item, Exception):
                    raise item
                yield item
        finally:
            self._watchers.remove(entry)


def _config_stream(kind: str, namespace: str) -> str:
    return f"configs/{kind}/{namespace}"


__all__ = ["FakeCluster", "merge_patch"]
