"""The node agent: configuration from custom resources, status on them, NodeResourceTopology.

:class:`NodeAgent` runs as tasks on the daemon's (or the simulator's) event loop:

* **configuration**: lists and watches the active policy's custom resources in the config
  namespace and the node itself (for its group label); whenever the resource that applies
  (``node.<node>``, else ``group.<group>``, else ``default``) or its generation changes, it
  awaits the handler the daemon gave it (:meth:`NodeAgent.on_config`: the daemon's reload
  path, which loads the document off the loop) on a task of its own, one resource at a time
  (the latest choice replaces one not started yet), then writes the outcome as
  ``status.nodes[<node>]`` on that resource and removes the node's entry from the resource it
  used before. When none applies any more, the configuration in force stays (as the
  reference does).
* **topology**: :meth:`topology_changed` (the domain's ``Kubernetes`` port, called after
  every committed change) only marks the zones stale; a task reads them from the manager at
  most once per ``topology_interval`` seconds and writes the node's NodeResourceTopology when
  they differ from what it last wrote.

Nothing here is on an NRI request's path: the API server can be down, slow, or deny access
and requests go on; the agent retries with capped exponential backoff, lists again after a
watch expired (410 Gone) and after a reconnect, and says which verb and resource RBAC denied.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import attrs

from nrirp.adapters.kubernetes.cluster import (
    ClusterApi,
    JsonObject,
    ObjectList,
    WatchEvent,
    object_name,
    resource_version,
)
from nrirp.adapters.kubernetes.errors import (
    ClusterError,
    Forbidden,
    Gone,
    NotFound,
)
from nrirp.adapters.kubernetes.nrt import topology_document
from nrirp.domain.config.node_config import choose_config, config_candidates
from nrirp.domain.policy import TopologyZone
from nrirp.domain.ports.kubernetes import ConfigStatus

log = logging.getLogger("nrirp.agent")
_T = TypeVar("_T")

DEFAULT_NAMESPACE = "kube-system"
DEFAULT_TOPOLOGY_INTERVAL = 1.0
"""Seconds between two NodeResourceTopology writes at most (a pod storm is one write a second)."""


@attrs.frozen
class Retry:
    """Delay before retry ``n``: ``min(maximum, initial * 2**n)`` with +-20 % jitter."""

    initial: float = 0.5
    maximum: float = 30.0

    def delay(self, attempt: int) -> float:
        base: float = min(self.maximum, self.initial * 2.0 ** min(attempt, 30))
        return base * random.uniform(0.8, 1.2)


@attrs.frozen
class ConfigChoice:
    """The custom resource that configures the node: its identity and its document (the
    resource without ``status``), as the daemon's config loader takes it."""

    kind: str
    namespace: str
    name: str
    uid: str
    generation: int | None
    document: Mapping[str, Any] = attrs.field(eq=False)

    @property
    def source(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    @classmethod
    def of(cls, kind: str, namespace: str, obj: Mapping[str, Any]) -> ConfigChoice:
        metadata = obj.get("metadata") or {}
        generation = metadata.get("generation")
        document = {k: v for k, v in obj.items() if k != "status"}
        return cls(
            kind=kind,
            namespace=namespace,
            name=str(metadata.get("name", "")),
            uid=str(metadata.get("uid", "")),
            generation=generation if isinstance(generation, int) else None,
            document=document,
        )


ConfigHandler = Callable[[ConfigChoice], Awaitable[ConfigStatus]]
"""Applies a resource's document (awaited on the agent's loop) and says how it went."""
ZoneSource = Callable[[], Sequence[TopologyZone]]


@attrs.define
class AgentStats:
    """What the agent did, for tests and benchmarks."""

    configs_applied: int = 0
    status_writes: int = 0
    topology_writes: int = 0
    topology_reads: int = 0
    relists: int = 0
    failures: int = 0


def rfc3339(seconds: float) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def status_patch(node: str, status: ConfigStatus) -> JsonObject:
    """The merge patch that sets ``status.nodes[node]``; ``errors`` is an explicit null on
    success, so errors of an earlier failure do not stay."""
    entry: JsonObject = {
        "status": status.text,
        "generation": status.generation,
        "errors": list(status.errors) if status.errors else None,
        "timestamp": rfc3339(status.timestamp),
    }
    return {"status": {"nodes": {node: entry}}}


def clear_patch(node: str) -> JsonObject:
    """The merge patch that removes ``status.nodes[node]``."""
    return {"status": {"nodes": {node: None}}}


class NodeAgent:
    """The node agent over a :class:`ClusterApi`; implements the ``Kubernetes`` port.

    ``kind``: the custom-resource kind of the active policy (``None``: no configuration from
    custom resources, e.g. ``--config-file`` or a policy without a kind). ``topology_interval``:
    the least time between two NodeResourceTopology writes.
    """

    def __init__(
        self,
        cluster: ClusterApi,
        *,
        node: str,
        namespace: str = DEFAULT_NAMESPACE,
        kind: str | None = None,
        topology_interval: float = DEFAULT_TOPOLOGY_INTERVAL,
        retry: Retry | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if not node:
            raise ValueError("the node agent needs the node's name (--node-name or NODE_NAME)")
        self.cluster = cluster
        self.node = node
        self.namespace = namespace
        self.kind = kind
        self.topology_interval = topology_interval
        self.retry = retry or Retry()
        self._wall_clock = wall_clock
        self.stats = AgentStats()
        self.in_force_description = "the configuration in force"
        """How the daemon describes the config it runs with until a resource applies."""
        self._handler: ConfigHandler | None = None
        self._configs: dict[str, JsonObject] = {}
        self._labels: dict[str, str] = {}
        self._node: JsonObject | None = None
        self._configs_synced = kind is None
        self._node_synced = False
        self._in_force: ConfigChoice | None = None
        self._to_apply: ConfigChoice | None = None
        self._apply_wake = asyncio.Event()
        self._applying = False
        self._status_on: str | None = None
        self._none_logged = False
        self._status_queue: dict[str, JsonObject] = {}
        self._status_wake = asyncio.Event()
        self._status_busy = False
        self._policy = ""
        self._zones: ZoneSource | None = None
        self._export_topology = True
        self._topology_dirty = False
        self._topology_busy = False
        self._topology_wake = asyncio.Event()
        self._last_topology: JsonObject | None = None
        self._last_export = -1e9
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._busy = 0

    # ------------------------------------------------------------------ wiring
    def on_config(self, handler: ConfigHandler) -> None:
        """``await handler(choice)`` applies a resource's document and says how it went; it
        runs on the agent's event loop, one at a time (the daemon's reload path)."""
        self._handler = handler

    def attach_topology(self, policy: str, zones: ZoneSource) -> None:
        """Export ``zones()`` (the resource manager's ``topology_zones``) for ``policy``."""
        self._policy = policy
        self._zones = zones
        self.topology_changed()

    @property
    def export_topology(self) -> bool:
        """Whether zones are exported (the config's ``agent.nodeResourceTopology``); turning
        it on exports them at once, turning it off leaves the last object as it is."""
        return self._export_topology

    @export_topology.setter
    def export_topology(self, enabled: bool) -> None:
        if enabled and not self._export_topology:
            self._export_topology = True
            self._topology_dirty = False
            self.topology_changed()
        self._export_topology = enabled

    @property
    def in_force(self) -> ConfigChoice | None:
        """The resource that configures the node: the last one applied, refused or being
        applied."""
        return self._in_force

    # ------------------------------------------------------------------ the port
    def topology_changed(self) -> None:
        """Mark the zones stale; cheap and thread-safe (one loop wake-up per export)."""
        if self._topology_dirty:
            return
        self._topology_dirty = True
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._topology_wake.set)

    # ------------------------------------------------------------------ running
    async def start(self) -> None:
        """Start the agent's tasks on the running loop."""
        self._loop = asyncio.get_running_loop()
        if self._topology_dirty:
            self._topology_wake.set()
        self._spawn(self._follow_node(), "node")
        if self.kind is not None:
            self._spawn(self._follow_configs(), "configs")
            self._spawn(self._apply_configs(), "apply")
        self._spawn(self._write_status(), "status")
        self._spawn(self._export(), "topology")

    def _spawn(self, work: Awaitable[None], name: str) -> None:
        async def guarded() -> None:
            try:
                await work
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug: say so, never take the daemon down
                log.exception("node agent: %s task failed", name)

        self._tasks.append(asyncio.create_task(guarded(), name=f"nrirp-agent-{name}"))

    async def stop(self) -> None:
        """Cancel the tasks and close the client."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        with contextlib.suppress(Exception):
            await self.cluster.close()

    def quiet(self) -> bool:
        """Nothing being handled and nothing waiting to be written."""
        return not (
            self._busy
            or self._to_apply is not None
            or self._applying
            or self._status_queue
            or self._status_busy
            or self._topology_busy
            or (self._topology_dirty and self.export_topology and self._zones is not None)
        )

    def reapply(self) -> bool:
        """Apply the resource in force again (SIGHUP); ``False`` if none applies."""
        if self._in_force is None:
            return False
        self._apply(self._choice_now(self._in_force.name) or self._in_force)
        return True

    # ------------------------------------------------------------------ following resources
    async def _follow_node(self) -> None:
        await self._follow(
            f"node {self.node}",
            lambda: self.cluster.list_node(self.node),
            lambda rv: self.cluster.watch_node(self.node, rv),
            self._node_listed,
            self._node_event,
        )

    async def _follow_configs(self) -> None:
        kind = self.kind
        assert kind is not None
        await self._follow(
            f"{kind} resources in {self.namespace}",
            lambda: self.cluster.list_configs(kind, self.namespace),
            lambda rv: self.cluster.watch_configs(kind, self.namespace, rv),
            self._configs_listed,
            self._config_event,
            missing=f"is the {kind} CRD installed? kubectl apply -k deploy/crds",
        )

    async def _follow(
        self,
        what: str,
        list_them: Callable[[], Awaitable[ObjectList]],
        watch_them: Callable[[str], AsyncGenerator[WatchEvent, None]],
        listed: Callable[[Sequence[JsonObject]], None],
        changed: Callable[[WatchEvent], None],
        *,
        missing: str | None = None,
    ) -> None:
        """List, then watch from the list's version for as long as the server allows; list
        again after 410 Gone; back off and list again after any other failure (``missing``:
        what to say when the server does not know the resource type, 404)."""
        attempt = 0
        while True:
            try:
                found = await list_them()
                self._handling(listed, found.items)
                if attempt:
                    log.info("node agent: %s: the API server answers again", what)
                attempt = 0
                version = found.resource_version
                while True:
                    async with contextlib.aclosing(watch_them(version)) as events:
                        async for event in events:
                            version = resource_version(event.object) or version
                            if event.type != "BOOKMARK":
                                self._handling(changed, event)
            except Gone:
                self.stats.relists += 1
                log.info("node agent: %s: watch expired (410 Gone); listing again", what)
                continue
            except Forbidden as exc:
                self.stats.failures += 1
                log.error("node agent: %s: %s", what, exc.explain())
            except NotFound as exc:  # the server answers: not "cannot reach"
                self.stats.failures += 1
                log.warning(
                    "node agent: %s: %s (%s); %s stays",
                    what,
                    exc,
                    missing or "the API server does not serve this resource",
                    self._running_with(),
                )
            except ClusterError as exc:
                self.stats.failures += 1
                log.warning(
                    "node agent: %s: cannot reach the API server (%s); %s stays",
                    what,
                    exc,
                    self._running_with(),
                )
            except Exception:  # a malformed answer, a client bug: keep following, with backoff
                self.stats.failures += 1
                log.exception("node agent: %s: unexpected error", what)
            delay = self.retry.delay(attempt)
            attempt += 1
            log.info("node agent: %s: retrying in %.1f s", what, delay)
            await asyncio.sleep(delay)

    def _running_with(self) -> str:
        if self._in_force is not None:
            return f"the configuration from {self._in_force.source}"
        return self.in_force_description

    def _handling(self, work: Callable[[_T], None], arg: _T) -> None:
        self._busy += 1
        try:
            work(arg)
        finally:
            self._busy -= 1

    def _node_listed(self, items: Sequence[JsonObject]) -> None:
        found = [o for o in items if object_name(o) == self.node]
        if not found:
            log.warning("node agent: node %s not found: no group label is used", self.node)
        self._set_node(found[0] if found else None)
        self._node_synced = True
        self._evaluate()

    def _node_event(self, event: WatchEvent) -> None:
        if object_name(event.object) != self.node:
            return
        self._set_node(None if event.type == "DELETED" else event.object)
        self._evaluate()

    def _set_node(self, obj: JsonObject | None) -> None:
        self._node = obj
        labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
        self._labels = {str(k): str(v) for k, v in labels.items()}

    def _configs_listed(self, items: Sequence[JsonObject]) -> None:
        self._configs = {object_name(o): o for o in items}
        self._configs_synced = True
        self._evaluate()

    def _config_event(self, event: WatchEvent) -> None:
        name = object_name(event.object)
        if event.type == "DELETED":
            self._configs.pop(name, None)
        else:
            self._configs[name] = event.object
        self._evaluate()

    # ------------------------------------------------------------------ choosing and applying
    def _choice_now(self, name: str) -> ConfigChoice | None:
        obj = self._configs.get(name)
        if obj is None or self.kind is None:
            return None
        return ConfigChoice.of(self.kind, self.namespace, obj)

    def _evaluate(self) -> None:
        if not (self._configs_synced and self._node_synced) or self.kind is None:
            return
        name = choose_config(self.node, self._labels, self._configs)
        if name is None:
            if not self._none_logged:
                self._none_logged = True
                log.warning(
                    "node agent: no %s applies to node %s (looked for %s in namespace %s); "
                    "%s stays",
                    self.kind,
                    self.node,
                    ", ".join(config_candidates(self.node, self._labels)),
                    self.namespace,
                    self._running_with(),
                )
            return
        self._none_logged = False
        choice = self._choice_now(name)
        assert choice is not None
        current = self._in_force
        if (
            current is not None
            and current.name == choice.name
            and current.uid == choice.uid
            and current.generation == choice.generation
        ):
            return
        self._apply(choice)

    def _apply(self, choice: ConfigChoice) -> None:
        """Have ``choice`` applied by :meth:`_apply_configs` (it replaces one not started)."""
        if self._handler is None:
            return
        previous = self._in_force
        if previous is None or previous.name != choice.name:
            log.info("node agent: node %s is configured by %s", self.node, choice.source)
        self._in_force = choice
        self._to_apply = choice
        self._apply_wake.set()

    async def _apply_configs(self) -> None:
        """Await the handler for each chosen resource in turn, then queue its status."""
        while True:
            await self._apply_wake.wait()
            self._apply_wake.clear()
            while self._to_apply is not None and self._handler is not None:
                choice, self._to_apply = self._to_apply, None
                self._applying = True
                try:
                    status = await self._handler(choice)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # a bug in the handler: report it on the resource too
                    log.exception("node agent: applying %s failed", choice.source)
                    status = ConfigStatus(False, choice.generation, (f"internal error: {exc}",))
                finally:
                    self._applying = False
                self.stats.configs_applied += 1
                status = attrs.evolve(
                    status, generation=choice.generation, timestamp=self._wall_clock()
                )
                if self._status_on is not None and self._status_on != choice.name:
                    self._queue_status(self._status_on, clear_patch(self.node))
                self._status_on = choice.name
                self._queue_status(choice.name, status_patch(self.node, status))

    # ------------------------------------------------------------------ status writes
    def _queue_status(self, name: str, patch: JsonObject) -> None:
        self._status_queue.pop(name, None)  # the latest patch per resource, in order
        self._status_queue[name] = patch
        self._status_wake.set()

    async def _write_status(self) -> None:
        attempt = 0
        while True:
            await self._status_wake.wait()
            self._status_wake.clear()
            while self._status_queue:
                name = next(iter(self._status_queue))
                patch = self._status_queue.pop(name)
                self._status_busy = True
                try:
                    await self.cluster.patch_config_status(
                        self.kind or "", self.namespace, name, patch
                    )
                    self.stats.status_writes += 1
                    attempt = 0
                except NotFound:
                    log.info(
                        "node agent: %s %s is gone; its status is not written", self.kind, name
                    )
                except ClusterError as exc:
                    self.stats.failures += 1
                    if name not in self._status_queue:  # nothing newer: retry this one
                        self._status_queue[name] = patch
                    delay = self.retry.delay(attempt)
                    attempt += 1
                    what = exc.explain() if isinstance(exc, Forbidden) else str(exc)
                    log.warning(
                        "node agent: status of %s %s not written (%s); retrying in %.1f s",
                        self.kind,
                        name,
                        what,
                        delay,
                    )
                    self._status_busy = False
                    await asyncio.sleep(delay)
                finally:
                    self._status_busy = False

    # ------------------------------------------------------------------ topology
    async def _export(self) -> None:
        attempt = 0
        loop = asyncio.get_running_loop()
        while True:
            await self._topology_wake.wait()
            self._topology_wake.clear()
            wait = self._last_export + self.topology_interval - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            zones_of = self._zones
            if zones_of is None or not self.export_topology:
                self._topology_dirty = False
                continue
            self._topology_busy = True
            try:
                self._topology_dirty = False
                zones = await asyncio.to_thread(zones_of)
                self.stats.topology_reads += 1
                document = topology_document(self.node, self._policy, zones, self._node)
                if document != self._last_topology:
                    self._last_export = loop.time()
                    await self.cluster.apply_topology(document)
                    self._last_topology = document
                    self.stats.topology_writes += 1
                attempt = 0
            except ClusterError as exc:
                self.stats.failures += 1
                delay = self.retry.delay(attempt)
                attempt += 1
                log.warning(
                    "node agent: NodeResourceTopology %s not written (%s); retrying in %.1f s",
                    self.node,
                    _explain(exc),
                    delay,
                )
                self._topology_busy = False
                await asyncio.sleep(delay)
                self.topology_changed()
            except Exception:
                log.exception("node agent: reading the topology zones failed")
            finally:
                self._topology_busy = False


def _explain(exc: ClusterError) -> str:
    if isinstance(exc, Forbidden):
        return exc.explain()
    if isinstance(exc, NotFound):
        return f"{exc} (is the NodeResourceTopology CRD installed?)"
    return str(exc)
