"""``V01Handler``: one NRI v0.1 invocation against the engine, enforced in cgroups.

The same handler runs in the daemon (``nrirp run --nri-v01``, for requests forwarded by the
exec client) and in the exec client itself when no daemon answers (standalone). Per state:

==========  =====================  ==================================================
state       sandbox (id == sbid)   container
==========  =====================  ==================================================
create      RunPodSandbox          CreateContainer, PostCreate, Start, PostStart; the
                                   adjustment and the other containers' updates are
                                   written to their cgroups before the reply
delete      StopPodSandbox +       StopContainer + RemoveContainer; the updates (a
            RemovePodSandbox       shared pool growing back) are written
update      (nothing)              UpdateContainer + PostUpdate with the spec's
                                   resources; the updates are written
pause       (nothing)              nothing: a frozen container keeps its resources
resume      (nothing)              nothing
==========  =====================  ==================================================

Before a container is created, containers whose cgroup is gone (they disappeared without a
delete) are released first (``stale.py``), so that they do not hold CPUs the newcomer needs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from nrirp.adapters.nri_v01.conf import parse_conf
from nrirp.adapters.nri_v01.enforce import CgroupEnforcer
from nrirp.adapters.nri_v01.protocol import (
    CREATE,
    DELETE,
    UPDATE,
    Request,
    RequestError,
    parse_request,
)
from nrirp.adapters.nri_v01.stale import CgroupPresence
from nrirp.adapters.nri_v01.translate import container_of, pod_of, resources_from_oci
from nrirp.domain.model import Adjustment, Container, ContainerState, Pod, Update
from nrirp.domain.pipeline import OperationFailedError, ResourceManager
from nrirp.domain.ports.host_control import HostTarget

log = logging.getLogger("nrirp.nri_v01")

Capture = Callable[[], AbstractContextManager[list[Update]]]


class V01Outcome:
    """What an invocation did: ``error`` (empty on success), the result's ``metadata``, the
    adjustment applied to the container and the updates applied to others."""

    __slots__ = ("adjustment", "error", "metadata", "updates")

    def __init__(
        self,
        error: str = "",
        metadata: dict[str, str] | None = None,
        adjustment: Adjustment | None = None,
        updates: Sequence[Update] = (),
    ) -> None:
        self.error = error
        self.metadata = dict(metadata or {})
        self.adjustment = adjustment
        self.updates = list(updates)

    def __repr__(self) -> str:
        return f"V01Outcome(error={self.error!r}, metadata={self.metadata!r})"


@contextmanager
def _no_capture() -> Iterator[list[Update]]:
    yield []


class V01Handler:
    """Handles v0.1 requests with ``manager`` (started), writing decisions with ``enforcer``.

    ``capture`` collects the updates the engine submits from this thread during a call (the
    engine's RuntimeUpdates adapter's ``capture``), so they are enforced before the reply.
    """

    def __init__(
        self,
        manager: ResourceManager,
        enforcer: CgroupEnforcer,
        presence: CgroupPresence | None = None,
        capture: Capture | None = None,
    ) -> None:
        self.manager = manager
        self.enforcer = enforcer
        self.presence = presence
        self._capture: Capture = capture or _no_capture

    # ------------------------------------------------------------------ entry points
    def invoke(self, request_json: bytes | str) -> V01Outcome:
        """Parse and handle one request; never raises (an unexpected error is logged with
        its traceback and reported as an internal error)."""
        try:
            request = parse_request(request_json)
            return self.handle(request)
        except RequestError as exc:
            return V01Outcome(f"bad request: {exc}")
        except Exception as exc:
            log.exception("NRI v0.1 request failed")
            return V01Outcome(f"internal error: {type(exc).__name__}: {exc}")

    def handle(self, request: Request) -> V01Outcome:
        """Handle a parsed request. Raises :class:`RequestError` for a bad conf or spec."""
        conf = parse_conf(request.conf)
        policy = self.manager.policy.name
        if conf.policy and conf.policy != policy:
            return V01Outcome(
                f"conf.policy is {conf.policy!r} but the engine runs policy {policy!r}"
            )
        try:
            if request.state == CREATE:
                return self._create(request)
            if request.state == DELETE:
                return self._delete(request)
            if request.state == UPDATE:
                return self._update(request)
        except OperationFailedError as exc:
            if exc.internal:
                log.error("NRI v0.1 %s %s: %s", request.state, request.id, exc)
            return V01Outcome(str(exc))
        return V01Outcome(metadata={"state": request.state, "action": "none"})

    # ------------------------------------------------------------------ states
    def _pod(self, request: Request) -> Pod:
        pod_id = request.sandbox_id or request.id
        for pod in self.manager.pods():
            if pod.id == pod_id:
                return pod
        return pod_of(request)

    def _create(self, request: Request) -> V01Outcome:
        if not request.sandbox_id:  # not a pod's (CRI runs every container in a sandbox)
            return V01Outcome(metadata={"action": "none", "reason": "no sandbox"})
        if request.is_sandbox:
            pod = pod_of(request)
            self.manager.run_pod(pod)
            return V01Outcome(metadata={"pod": f"{pod.namespace}/{pod.name}"})
        released = self.reconcile()
        pod = self._pod(request)
        container = container_of(request, pod)
        with self._capture() as captured:
            result = self.manager.create_container(pod, container)
            created = container.with_state(ContainerState.CREATED)
            self.manager.post_create(pod, created)
            self.manager.start_container(pod, created)
            self.manager.post_start(pod, container.with_state(ContainerState.RUNNING))
        updates = [*result.updates, *captured]
        problems = self._enforce_own(container, pod, result.adjustment)
        if problems:  # the container would run with settings the policy did not decide
            return V01Outcome("; ".join(problems), adjustment=result.adjustment)
        others = self.enforce(updates)
        decided = self.manager.container(container.id)
        metadata = {"container": f"{pod.namespace}/{pod.name}/{container.name}"}
        if decided is not None:
            if decided.resources.cpus is not None:
                metadata["cpus"] = str(decided.resources.cpus)
            if decided.resources.mems is not None:
                metadata["mems"] = str(decided.resources.mems)
        if updates:
            metadata["updated"] = ",".join(sorted({u.container_id[:12] for u in updates}))
        if released:
            metadata["released"] = str(released)
        if others:
            metadata["warnings"] = "; ".join(others)
        return V01Outcome(metadata=metadata, adjustment=result.adjustment, updates=updates)

    def _delete(self, request: Request) -> V01Outcome:
        if not request.sandbox_id:
            return V01Outcome(metadata={"action": "none", "reason": "no sandbox"})
        pod = self._pod(request)
        with self._capture() as captured:
            if request.is_sandbox:
                self.manager.stop_pod(pod)
                self.manager.remove_pod(pod)
                updates: list[Update] = []
            else:
                known = self.manager.container(request.id)
                if known is None:
                    return V01Outcome(metadata={"action": "none", "reason": "not known"})
                updates = self.manager.stop_container(pod, known)
                self.manager.remove_container(pod, known)
        updates += captured
        metadata: dict[str, str] = {}
        if updates:
            metadata["updated"] = ",".join(sorted({u.container_id[:12] for u in updates}))
        problems = self.enforce(updates)
        if problems:
            metadata["warnings"] = "; ".join(problems)
        return V01Outcome(metadata=metadata, updates=updates)

    def _update(self, request: Request) -> V01Outcome:
        if request.is_sandbox:
            return V01Outcome(metadata={"action": "none"})
        pod = self._pod(request)
        known = self.manager.container(request.id) or container_of(request, pod)
        resources = resources_from_oci(request.spec.resources)
        with self._capture() as captured:
            updates = self.manager.update_container(pod, known, resources)
            self.manager.post_update(pod, known)
        updates += captured
        problems = self.enforce(updates)
        metadata = {"warnings": "; ".join(problems)} if problems else {}
        return V01Outcome(metadata=metadata, updates=updates)

    # ------------------------------------------------------------------ reconciliation
    def reconcile(self) -> int:
        """Release the containers whose cgroup is gone; returns how many."""
        if self.presence is None:
            return 0
        stale = self.presence.stale(self.manager.containers())
        if not stale:
            return 0
        pods = {p.id: p for p in self.manager.pods()}
        updates: list[Update] = []
        for container in stale:
            pod = pods.get(container.pod_id) or Pod(id=container.pod_id)
            with self._capture() as captured:
                updates += self.manager.stop_container(pod, container)
                self.manager.remove_container(pod, container)
            updates += captured
            log.info(
                "released container %s (%s): its cgroup is gone (it disappeared without a delete)",
                container.name or container.id,
                container.id[:12],
            )
        gone = {c.id for c in stale}
        self.enforce([u for u in updates if u.container_id not in gone])
        return len(stale)

    # ------------------------------------------------------------------ enforcement
    def _enforce_own(self, container: Container, pod: Pod, adjustment: Adjustment) -> list[str]:
        if adjustment.resources.is_empty():
            return []
        target = HostTarget(
            container.id, pod.id, pod.cgroup_parent, container.cgroups_path, pid=container.pid
        )
        return self.enforcer.apply(target, adjustment.resources)

    def enforce(self, updates: Sequence[Update]) -> list[str]:
        """Write ``updates`` into the containers' cgroups; returns the problems (logged)."""
        if not updates:
            return []
        containers = {c.id: c for c in self.manager.containers()}
        parents = {p.id: p.cgroup_parent for p in self.manager.pods()}
        problems: list[str] = []
        for update in updates:
            known = containers.get(update.container_id)
            if known is None:
                continue  # gone meanwhile: nothing to write
            target = HostTarget(
                known.id,
                known.pod_id,
                parents.get(known.pod_id, ""),
                known.cgroups_path,
                pid=known.pid,
            )
            problems += self.enforcer.apply(target, update.resources)
        for problem in problems:
            log.warning("enforcing an update: %s", problem)
        return problems
