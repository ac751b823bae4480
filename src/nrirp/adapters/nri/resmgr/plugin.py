"""``ResourceManagerPlugin``: the NRI plugin whose handlers drive a :class:`ResourceManager`.

Each handler translates the runtime's messages into domain values, calls the resource manager
directly (it is synchronous and fast, so the event loop never waits on a thread) and translates
the result back. Subscribed events: what the reference resource manager subscribes to
(Run/Stop/RemovePodSandbox, Create/Start/Update/Stop/RemoveContainer, Synchronize), plus
PostStartContainer only when the manager needs it (:meth:`ResourceManager.lifecycle_needs`:
host-side settings waiting for a container's process, for the configuration in force and the
runtime's features). Each event the runtime delivers costs it a round trip to us, so events
nothing acts on are left out (PostCreate and PostUpdateContainer: handled if delivered anyway).

Failures: a refused CreateContainer or UpdateContainer raises, so the runtime fails that
operation with the manager's reason (``create-container container ns/pod/ctr: <reason>``): an
ordinary refusal (the policy's own reason, a request that cannot be translated) as
:class:`~nrirp.adapters.nri.stub.RequestRefused`, logged as one line; an internal error as it
is, so that its traceback is logged. Failures of events that only report facts (post-events,
stop, remove) are logged and not returned: the runtime could do nothing with them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar

from nrirp.adapters.nri.api import EventMask
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.resmgr.translate import (
    TranslationError,
    adjustment_to_pb,
    container_from_pb,
    pod_from_pb,
    resources_from_pb,
    updates_to_pb,
)
from nrirp.adapters.nri.resmgr.updates import NriRuntimeUpdates
from nrirp.adapters.nri.stub import Plugin, RequestRefused
from nrirp.adapters.nri.versions import runtime_level
from nrirp.domain.control import RuntimeFeatures
from nrirp.domain.model import Container, Pod
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.pipeline.errors import OperationFailedError, PipelineError
from nrirp.domain.pipeline.lifecycle import LifecycleNeeds

log = logging.getLogger("nrirp.resmgr")

REQUEST_EVENTS = (
    EventMask.RUN_POD_SANDBOX
    | EventMask.STOP_POD_SANDBOX
    | EventMask.REMOVE_POD_SANDBOX
    | EventMask.CREATE_CONTAINER
    | EventMask.START_CONTAINER
    | EventMask.UPDATE_CONTAINER
    | EventMask.STOP_CONTAINER
    | EventMask.REMOVE_CONTAINER
)
"""The events the resource manager always handles (Synchronize comes anyway)."""


def events_for(needs: LifecycleNeeds) -> EventMask:
    """The events to subscribe to for the manager's ``needs``."""
    if needs.post_start:
        return REQUEST_EVENTS | EventMask.POST_START_CONTAINER
    return REQUEST_EVENTS


M = TypeVar("M")
T = TypeVar("T")


class ConnectionObserver(Protocol):
    """Told when the runtime configures the plugin (once per connection) and when it has
    synchronized (the daemon's readiness and metrics)."""

    def configured(self, runtime: str, version: str) -> None: ...

    def synchronized(self) -> None: ...


class ResourceManagerPlugin(Plugin):
    """Relays NRI requests and events to ``manager``; policy updates go out via ``updates``;
    ``observer`` (optional) hears of each configuration and synchronization; ``bulk``
    (optional) is entered around a Synchronize, which admits every container the runtime
    runs at once (the daemon pauses garbage collection there)."""

    def __init__(
        self,
        manager: ResourceManager,
        updates: NriRuntimeUpdates,
        observer: ConnectionObserver | None = None,
        bulk: Callable[[], contextlib.AbstractContextManager[None]] | None = None,
    ) -> None:
        self.manager = manager
        self.updates = updates
        self.observer = observer
        self.bulk = bulk or contextlib.nullcontext
        self.subscribed: LifecycleNeeds | None = None
        """What the events subscribed to at the last Configure were chosen for."""
        updates.bind_failures(manager.updates_failed)
        self.synchronizations = 0
        if manager.observed:
            # the recorder hears of each call after its reply was sent (its work, a few
            # microseconds of cold code, then never delays the runtime)
            self.after_reply = manager.tell_observer

    # ------------------------------------------------------------------ requests
    async def configure(self, request: api_pb2.ConfigureRequest) -> EventMask:
        if self.after_reply is not None:
            self.manager.defer_observer()  # the event loop's thread: the one serving requests
        if self.observer is not None:
            self.observer.configured(request.runtime_name, request.runtime_version)
        level = runtime_level(request.runtime_name, request.runtime_version, request.NRI_version)
        carried = level.carries_scheduling
        self.manager.set_runtime_features(RuntimeFeatures(scheduling=carried, io_priority=carried))
        if not carried:
            log.info(
                "the runtime (%s %s, %s) does not apply scheduling classes from NRI: "
                "they are applied to the containers' tasks after they start",
                request.runtime_name or "unknown",
                request.runtime_version or "",
                level,
            )
        needs = self.manager.lifecycle_needs()
        events = events_for(needs)
        self.subscribed = needs
        log.debug(
            "policy %s: subscribing to %s; PostStartContainer %s: %s",
            self.manager.policy.name,
            events.pretty(),
            "included" if needs.post_start else "left out",
            needs.reason,
            extra={"fields": {"policy": self.manager.policy.name, "events": events.pretty()}},
        )
        return events

    def subscription_stale(self) -> bool:
        """True when the configuration in force needs other events than the ones subscribed
        to at the last Configure (the plugin must register again to change them)."""
        subscribed = self.subscribed
        if subscribed is None:
            return False
        return self.manager.lifecycle_needs().post_start != subscribed.post_start

    async def synchronize(
        self, pods: Sequence[api_pb2.PodSandbox], containers: Sequence[api_pb2.Container]
    ) -> list[api_pb2.ContainerUpdate]:
        with self.bulk():
            domain_pods = _translated(pods, pod_from_pb, "pod")
            domain_containers = _translated(containers, container_from_pb, "container")
            # what the log line says, worked out only when it is written
            told = log.isEnabledFor(logging.INFO)
            before = {c.id for c in self.manager.containers()} if told else set()
            updates = self.manager.synchronize(domain_pods, domain_containers)
        self.synchronizations += 1
        if self.observer is not None:
            self.observer.synchronized()
        if told:
            self._log_synchronized(domain_pods, domain_containers, before, len(updates))
        return updates_to_pb(updates)

    def _log_synchronized(
        self, pods: Sequence[Pod], containers: Sequence[Container], before: set[str], updates: int
    ) -> None:
        after = {c.id for c in self.manager.containers()}
        reported = {c.id for c in containers}
        gone = sorted(before - after)
        new = sorted(after - before)
        kept = sorted(after & before & reported)
        log.info(
            "synchronized with the runtime: %d pods, %d containers; %d released (gone), "
            "%d admitted (new), %d kept; %d updates",
            len(pods),
            len(containers),
            len(gone),
            len(new),
            len(kept),
            updates,
            extra={
                "fields": {
                    "released": _listed(gone),
                    "admitted": _listed(new),
                    "kept": _listed(kept),
                }
            },
        )

    # ------------------------------------------------------------------ pods
    async def run_pod_sandbox(self, pod: api_pb2.PodSandbox) -> None:
        self._report(self.manager.run_pod, pod)

    async def stop_pod_sandbox(self, pod: api_pb2.PodSandbox) -> None:
        self._report(self.manager.stop_pod, pod)

    async def remove_pod_sandbox(self, pod: api_pb2.PodSandbox) -> None:
        self._report(self.manager.remove_pod, pod)

    # ------------------------------------------------------------------ containers
    async def create_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container
    ) -> tuple[api_pb2.ContainerAdjustment, list[api_pb2.ContainerUpdate]]:
        with _refusals("create-container"):
            domain_pod, domain_ctr = pod_from_pb(pod), container_from_pb(container)
            result = self.manager.create_container(domain_pod, domain_ctr)
        try:
            return adjustment_to_pb(result.adjustment), updates_to_pb(list(result.updates))
        except TranslationError as exc:
            # the decision cannot be expressed to the runtime: undo it, fail the creation
            self._quietly(lambda: self.manager.remove_container(domain_pod, domain_ctr))
            raise RequestRefused(
                f"create-container {domain_pod.namespace}/{domain_pod.name}/{domain_ctr.name}: "
                f"cannot express the decision to the runtime: {exc}"
            ) from None

    async def post_create_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container
    ) -> None:
        self._report_ctr(self.manager.post_create, pod, container)

    async def start_container(self, pod: api_pb2.PodSandbox, container: api_pb2.Container) -> None:
        self._report_ctr(self.manager.start_container, pod, container)

    async def post_start_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container
    ) -> None:
        self._report_ctr(self.manager.post_start, pod, container)

    async def update_container(
        self,
        pod: api_pb2.PodSandbox,
        container: api_pb2.Container,
        resources: api_pb2.LinuxResources,
    ) -> list[api_pb2.ContainerUpdate]:
        with _refusals("update-container"):
            updates = self.manager.update_container(
                pod_from_pb(pod), container_from_pb(container), resources_from_pb(resources)
            )
        return updates_to_pb(updates)

    async def post_update_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container
    ) -> None:
        self._report_ctr(self.manager.post_update, pod, container)

    async def stop_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container
    ) -> list[api_pb2.ContainerUpdate]:
        try:
            updates = self.manager.stop_container(pod_from_pb(pod), container_from_pb(container))
        except (PipelineError, TranslationError) as exc:
            log.error("stop-container: %s", exc)
            return []
        return updates_to_pb(updates)

    async def remove_container(self, pod: api_pb2.PodSandbox, container: api_pb2.Container) -> None:
        self._report_ctr(self.manager.remove_container, pod, container)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _report(call: Callable[[Pod], None], pod: api_pb2.PodSandbox) -> None:
        try:
            call(pod_from_pb(pod))
        except (PipelineError, TranslationError) as exc:
            log.error("%s", exc)

    @staticmethod
    def _report_ctr(
        call: Callable[[Pod, Container], object],
        pod: api_pb2.PodSandbox,
        container: api_pb2.Container,
    ) -> None:
        try:
            call(pod_from_pb(pod), container_from_pb(container))
        except (PipelineError, TranslationError) as exc:
            log.error("%s", exc)

    @staticmethod
    def _quietly(call: Callable[[], object]) -> None:
        try:
            call()
        except PipelineError as exc:
            log.error("undoing a creation failed: %s", exc)


SYNC_IDS_LISTED = 50
"""Container ids the synchronization's log line lists per field (its counts say the rest):
a node's thousands of containers, or a hostile runtime's, would make one line of megabytes."""


def _listed(ids: Sequence[str]) -> str:
    if len(ids) <= SYNC_IDS_LISTED:
        return ",".join(ids)
    return ",".join(ids[:SYNC_IDS_LISTED]) + f",... ({len(ids) - SYNC_IDS_LISTED} more)"


@contextlib.contextmanager
def _refusals(operation: str) -> Iterator[None]:
    """Ordinary failures of a request as :class:`RequestRefused` (one log line, the reason to
    the runtime); internal errors pass unchanged (the transport logs their traceback)."""
    try:
        yield
    except OperationFailedError as exc:
        if exc.internal:
            raise
        raise RequestRefused(str(exc)) from None
    except TranslationError as exc:
        raise RequestRefused(f"{operation}: invalid request: {exc}") from None


def _translated(messages: Sequence[M], translate: Callable[[M], T], what: str) -> list[T]:
    result = []
    for message in messages:
        try:
            result.append(translate(message))
        except TranslationError as exc:
            log.error("synchronize: %s ignored: %s", what, exc)
    return result
