"""The resource manager: the serialized pipeline every request and event goes through.

Each operation runs with the pipeline lock held, in the reference's order:

1. look up or create the cache objects for the request;
2. invoke the policy (allocate / release / update / sync / handle_event);
3. run the controller layer over the containers with pending changes;
4. build the response (adjustment for a container being created, updates for the others),
   or hand the updates to the :class:`RuntimeUpdates` port when the request cannot carry them;
5. save the state once if anything persistent changed;
6. handle policy events injected while the operation ran.

A failing step rolls the cache back to where it was before step 1 and raises
:class:`OperationFailedError`.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

import attrs

from nrirp.domain.cache import (
    Cache,
    CacheError,
    SnapshotError,
    SnapshotSeries,
    structure_snapshot,
)
from nrirp.domain.config import PolicyConfig
from nrirp.domain.control import (
    ControlContext,
    Controller,
    ControllerRegistry,
    Hook,
    HostController,
    RuntimeController,
    enforce,
)
from nrirp.domain.model import (
    Adjustment,
    Container,
    ContainerChangeError,
    ContainerState,
    LinuxResources,
    Pod,
    Update,
)
from nrirp.domain.pipeline.admission import (
    admit_container,
    admit_pod,
    note_process,
    refresh_survivor,
    resize_container,
)
from nrirp.domain.pipeline.config_codec import ConfigCodec, DefaultConfigCodec
from nrirp.domain.pipeline.errors import (
    NotStartedError,
    OperationFailedError,
    PipelineError,
    ReentrantCallError,
    StateRestoreError,
)
from nrirp.domain.pipeline.results import CreateResult, ReconfigureOutcome, StartOutcome
from nrirp.domain.policy import (
    UPDATES_FAILED,
    MetricSample,
    Policy,
    PolicyContext,
    PolicyError,
    PolicyEvent,
    TopologyZone,
    UpdatesFailed,
)
from nrirp.domain.ports.clock import Clock, SystemClock
from nrirp.domain.ports.decisions import Decision, DecisionLog, Notice, NullDecisionLog, Severity
from nrirp.domain.ports.host_control import HostControl
from nrirp.domain.ports.metrics import Metrics
from nrirp.domain.ports.runtime_updates import RuntimeUpdates
from nrirp.domain.ports.state_store import StateStore, StateStoreError
from nrirp.domain.ports.timers import Timers
from nrirp.domain.ports.topology_hints import TopologyHintSource
from nrirp.domain.topology import Machine

T = TypeVar("T")

MAX_EVENTS_PER_DRAIN = 10_000

# failures whose message is meant for the operator (anything else is reported as a bug)
_EXPECTED = (PolicyError, PipelineError, CacheError, ContainerChangeError, ValueError)


class ResourceManager:
    """Runs a policy over the pods and containers the runtime reports.

    Adapters (NRI plugin, host agent, simulator) call the lifecycle methods with neutral
    :class:`Pod` / :class:`Container` values and relay what comes back. All methods are
    thread-safe; they run one at a time.
    """

    def __init__(
        self,
        *,
        policy: Policy,
        machine: Machine,
        store: StateStore | None = None,
        updates: RuntimeUpdates | None = None,
        host: HostControl | None = None,
        controllers: Sequence[Controller] | None = None,
        clock: Clock | None = None,
        decisions: DecisionLog | None = None,
        metrics: Metrics | None = None,
        config_codec: ConfigCodec | None = None,
        hints: TopologyHintSource | None = None,
        timers: Timers | None = None,
    ) -> None:
        self._policy = policy
        self._machine = machine
        self._store = store
        self._updates = updates
        self._clock: Clock = clock or SystemClock()
        self._log: DecisionLog = decisions or NullDecisionLog()
        batch = getattr(self._log, "decision_batch", None)  # a sink may predate the method
        self._log_decisions: Callable[[Sequence[Decision]], None] = (
            batch if callable(batch) else self._log_one_by_one
        )
        self._metrics = metrics
        self._codec: ConfigCodec = config_codec or DefaultConfigCodec()
        if controllers is None:
            default: list[Controller] = [RuntimeController()]
            if host is not None:
                default.append(HostController(host))
            controllers = default
        self._controllers = ControllerRegistry(controllers)
        self.cache = Cache()
        """The cache (read it only through the query methods or from policy calls)."""
        self._memory_capacity = sum(n.memory_bytes for n in machine.nodes.values())
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._events: deque[PolicyEvent] = deque()
        self._decisions: list[Decision] = []
        self._decided: set[str] = set()
        self._outbox: list[Update] = []
        self._snapshots = SnapshotSeries()
        self._config_dumped: tuple[PolicyConfig | None, dict[str, Any] | None] = (None, None)
        self._operation = ""
        self._started = False
        self._reallocate_survivors = False
        self._ctx = PolicyContext(
            cache=self.cache,
            machine=machine,
            clock=self._clock,
            inject=self.inject_event,
            decide=self._record_decision,
            notify=self._notify,
            hints=hints,
            timers=timers,
        )

    # ================================================================== properties
    @property
    def policy(self) -> Policy:
        return self._policy

    @property
    def machine(self) -> Machine:
        return self._machine

    @property
    def started(self) -> bool:
        return self._started

    # ================================================================== lifecycle
    def start(self, config: PolicyConfig | None = None) -> StartOutcome:
        """Restore the saved state, then start the policy with ``config``.

        Without ``config`` the configuration saved with the state is used, if any. Raises
        :class:`StateRestoreError` for unusable saved state and :class:`OperationFailedError`
        when the policy refuses to start; either way nothing is changed.
        """
        with self._serialized("start"):
            if self._started:
                raise PipelineError("resource manager already started")
            checkpoint = self.cache.checkpoint()
            try:
                outcome, saved_config = self._restore()
                if config is None:
                    config = saved_config
                started_at = self._clock.monotonic()
                try:
                    self._policy.start(self._ctx, config)
                    self.cache.set_config(config)
                    self._reallocate_survivors = outcome.policy_changed
                    control = self._enforce("start")
                except Exception as exc:
                    self._reallocate_survivors = False
                    self._abort("start", None, exc, started_at)
                    raise OperationFailedError(
                        "start", f"policy {self._policy.name}", _reason(exc)
                    ) from exc
            except BaseException:
                self.cache.rollback(checkpoint)
                raise
            self.cache.release(checkpoint)
            self._started = True
            self._commit("start", started_at)
            self._submit(control.updates)
            self._drain_events()
            return outcome

    def synchronize(self, pods: Sequence[Pod], containers: Sequence[Container]) -> list[Update]:
        """Reconcile with everything the runtime runs: containers gone are released, new ones
        allocated, survivors keep their resources. Returns updates for existing containers."""

        def body() -> tuple[Update, ...]:
            return self._synchronize(pods, containers)

        return list(self._run("synchronize", "pods and containers", body))

    def run_pod(self, pod: Pod) -> None:
        """A pod sandbox was started."""

        def body() -> None:
            admit_pod(self.cache, pod, self._clock.now())

        self._run("run-pod", _pod_label(pod), body)

    def stop_pod(self, pod: Pod) -> None:
        """A pod sandbox stopped: its containers that still hold resources release them."""

        def body() -> None:
            for ctr in self.cache.containers_of(pod.id):
                self._stop(ctr)
            self._submit_all(self._enforce("stop-pod").updates)

        self._run("stop-pod", _pod_label(pod), body)

    def remove_pod(self, pod: Pod) -> None:
        """A pod sandbox was removed: forget it and its containers."""

        def body() -> None:
            for ctr in self.cache.containers_of(pod.id):
                self._stop(ctr)
                self.cache.remove_container(ctr.id)
            self.cache.remove_pod(pod.id)
            self._submit_all(self._enforce("remove-pod").updates)

        self._run("remove-pod", _pod_label(pod), body)

    def create_container(self, pod: Pod, container: Container) -> CreateResult:
        """Allocate resources for a container being created.

        Returns the adjustment for it and updates for other containers the policy changed.
        Raises :class:`OperationFailedError` (cache unchanged) when the policy refuses.
        """

        def body() -> CreateResult:
            self._ensure_pod(pod)
            existing = self.cache.container(container.id)
            if existing is not None and existing.state.holds_resources:
                raise PipelineError(
                    f"container {container.id} already exists (state {existing.state.value})"
                )
            admitted = admit_container(
                self.cache,
                container,
                state=ContainerState.CREATING,
                now=self._clock.now(),
                memory_capacity=self._memory_capacity,
            )
            self._policy.allocate(admitted)
            control = self._enforce("create-container", container.id, Hook.PRE_CREATE)
            adjustment = control.adjustment or Adjustment(container.id)
            others = tuple(u for u in control.updates if u.container_id != container.id)
            return CreateResult(adjustment, others)

        return self._run("create-container", _ctr_label(pod, container), body)

    def post_create(self, pod: Pod, container: Container) -> None:
        """The container was created."""
        self._transition("post-create", pod, container, ContainerState.CREATED, None)

    def start_container(self, pod: Pod, container: Container) -> None:
        """The container is about to start."""
        self._transition("start-container", pod, container, None, Hook.PRE_START)

    def post_start(self, pod: Pod, container: Container) -> None:
        """The container started."""
        self._transition("post-start", pod, container, ContainerState.RUNNING, Hook.POST_START)

    def update_container(
        self, pod: Pod, container: Container, resources: LinuxResources
    ) -> list[Update]:
        """The container's resources are being changed to ``resources``.

        Returns updates, possibly including one for this container that amends the change.
        """

        def body() -> tuple[Update, ...]:
            current = self.cache.container(container.id)
            if current is None:
                # never seen (missed while disconnected): allocate it like a synced newcomer
                self._ensure_pod(pod)
                current = admit_container(
                    self.cache,
                    attrs.evolve(container, resources=container.resources.merged(resources)),
                    state=container.state,
                    now=self._clock.now(),
                    memory_capacity=self._memory_capacity,
                )
                self._policy.allocate(current)
            else:
                resized = resize_container(self.cache, current, resources, self._memory_capacity)
                self._policy.update(resized, resources)
            return self._enforce("update-container").updates

        return list(self._run("update-container", _ctr_label(pod, container), body))

    def post_update(self, pod: Pod, container: Container) -> None:
        """The container's resources were changed."""
        self._transition("post-update", pod, container, None, None)

    def stop_container(self, pod: Pod, container: Container) -> list[Update]:
        """The container stopped: release its resources; returns updates for others."""

        def body() -> tuple[Update, ...]:
            current = self.cache.container(container.id)
            if current is None:
                return ()
            self._stop(current)
            control = self._enforce("stop-container", container.id, Hook.POST_STOP)
            return control.updates

        return list(self._run("stop-container", _ctr_label(pod, container), body))

    def remove_container(self, pod: Pod, container: Container) -> None:
        """The container was removed: release it if still needed and forget it.

        Removing a pod's last container forgets the pod too: the runtime may never report the
        pod's own removal (containerd 1.7 sends no StopPodSandbox/RemovePodSandbox for pods
        that survived its restart), and a later request for a container of the pod brings it
        back from the pod the request carries.
        """

        def body() -> None:
            current = self.cache.container(container.id)
            if current is None:
                return
            self._stop(current)
            self.cache.remove_container(container.id)
            if not self.cache.containers_of(current.pod_id):
                self.cache.remove_pod(current.pod_id)
            self._submit_all(self._enforce("remove-container").updates)

        self._run("remove-container", _ctr_label(pod, container), body)

    def reconfigure(self, config: PolicyConfig) -> ReconfigureOutcome:
        """Switch the policy to ``config``; if it refuses, the old config stays and the outcome
        says why."""
        with self._serialized("reconfigure"):
            self._require_started()
            if config.policy != self._policy.name:
                return ReconfigureOutcome(
                    False,
                    f"configuration is for policy {config.policy!r}, the active policy is "
                    f"{self._policy.name!r} (switching policies needs a restart)",
                )
            checkpoint = self.cache.checkpoint()
            started_at = self._clock.monotonic()
            try:
                self._policy.reconfigure(config)
                self.cache.set_config(config)
                control = self._enforce("reconfigure")
            except BaseException as exc:
                self.cache.rollback(checkpoint)
                if not isinstance(exc, Exception):
                    raise
                self._abort("reconfigure", None, exc, started_at)
                return ReconfigureOutcome(False, _reason(exc))
            self.cache.release(checkpoint)
            self._commit("reconfigure", started_at)
            self._submit(control.updates)
            self._drain_events()
            return ReconfigureOutcome(True, updates=len(control.updates))

    # ================================================================== events
    def inject_event(self, event: PolicyEvent) -> None:
        """Have the policy handle ``event`` under the pipeline's serialization.

        Called from inside a running operation (a policy call), the event is queued and
        handled right after that operation; from any other thread it waits for the pipeline.
        """
        if self._owner == threading.get_ident():
            self._events.append(event)
            return
        with self._serialized("event"):
            self._require_started()
            self._events.append(event)
            self._drain_events()

    def updates_failed(self, updates: Sequence[Update], reason: str) -> None:
        """The runtime refused ``updates`` (reported by the RuntimeUpdates adapter)."""
        ids = tuple(u.container_id for u in updates)
        self._log.notice(
            Notice("runtime", f"updates failed for {', '.join(ids)}: {reason}", Severity.ERROR)
        )
        self.inject_event(PolicyEvent(UPDATES_FAILED, "runtime", UpdatesFailed(ids, reason)))

    # ================================================================== queries
    def pods(self) -> list[Pod]:
        with self._serialized("query"):
            return self.cache.pods()

    def containers(self) -> list[Container]:
        with self._serialized("query"):
            return self.cache.containers()

    def container(self, container_id: str) -> Container | None:
        with self._serialized("query"):
            return self.cache.container(container_id)

    @property
    def config(self) -> PolicyConfig | None:
        """The configuration in force."""
        config: PolicyConfig | None = self.cache.config
        return config

    def topology_zones(self) -> Sequence[TopologyZone]:
        with self._serialized("query"):
            return self._policy.topology_zones()

    def policy_metrics(self) -> Sequence[MetricSample]:
        with self._serialized("query"):
            return self._policy.metrics()

    def describe(self) -> Mapping[str, Any]:
        with self._serialized("query"):
            return self._policy.describe()

    # ================================================================== internals: steps
    def _ensure_pod(self, pod: Pod) -> None:
        if self.cache.pod(pod.id) is None:
            admit_pod(self.cache, pod, self._clock.now())

    def _stop(self, container: Container) -> None:
        """Mark ``container`` stopped and release it if it held resources.

        The container is gone whatever the policy says, so a failing release is undone and
        reported instead of failing the operation.
        """
        if container.state.holds_resources:
            stopped = container.with_state(ContainerState.STOPPED)
            self.cache.put_container(stopped)
            checkpoint = self.cache.checkpoint()
            try:
                self._policy.release(stopped)
            except BaseException as exc:
                self.cache.rollback(checkpoint)
                if not isinstance(exc, Exception):
                    raise
                self._notify(
                    f"releasing container {stopped.name or stopped.id} failed: {_reason(exc)}",
                    Severity.ERROR,
                    stopped.id,
                )
            else:
                self.cache.release(checkpoint)
        elif container.state is not ContainerState.STOPPED:
            self.cache.put_container(container.with_state(ContainerState.STOPPED))

    def _transition(
        self,
        operation: str,
        pod: Pod,
        container: Container,
        state: ContainerState | None,
        hook: Hook | None,
    ) -> None:
        def body() -> None:
            current = self.cache.container(container.id)
            if current is None:
                return
            current = note_process(current, container)
            if state is not None and _moves_forward(current.state, state):
                current = current.with_state(state)
            self.cache.put_container(current)
            self._submit_all(self._enforce(operation, container.id, hook).updates)

        self._run(operation, _ctr_label(pod, container), body)

    def _synchronize(
        self, pods: Sequence[Pod], containers: Sequence[Container]
    ) -> tuple[Update, ...]:
        cache = self.cache
        now = self._clock.now()
        live_pods = {p.id for p in pods}
        for pod in pods:
            admit_pod(cache, pod, now)
        live = {c.id: c for c in containers}
        removed: list[Container] = []
        for cached in cache.containers():
            reported = live.get(cached.id)
            if reported is None or reported.pod_id not in live_pods:
                cache.remove_container(cached.id)
                if cached.state.holds_resources:
                    removed.append(cached.with_state(ContainerState.STOPPED))
        for cached_pod in cache.pods():
            if cached_pod.id not in live_pods:
                cache.remove_pod(cached_pod.id)
        added: list[Container] = []
        for reported in containers:
            if reported.pod_id not in live_pods:
                self._notify(
                    f"container {reported.name or reported.id} of unknown pod "
                    f"{reported.pod_id} ignored",
                    Severity.WARNING,
                    reported.id,
                )
                continue
            known = cache.container(reported.id)
            if known is None:
                fresh = admit_container(
                    cache,
                    reported,
                    state=reported.state,
                    now=now,
                    memory_capacity=self._memory_capacity,
                )
                if fresh.state.holds_resources:
                    added.append(fresh)
                continue
            survivor = refresh_survivor(cache, known, reported)
            if survivor.state.holds_resources and (
                self._reallocate_survivors or not known.state.holds_resources
            ):
                added.append(survivor)
            elif known.state.holds_resources and not survivor.state.holds_resources:
                removed.append(survivor)
        self._policy.sync(added, removed)
        self._reallocate_survivors = False
        return self._enforce("synchronize").updates

    def _enforce(
        self, operation: str, subject: str | None = None, hook: Hook | None = None
    ) -> ControlContext:
        pending = self.cache.pending_containers()
        decided = self._decided
        for ctr in pending:
            changed = ctr.pending.resources
            if (changed.cpus is not None or changed.mems is not None) and ctr.id not in decided:
                self._record_decision(ctr, operation, True)
        ctx = ControlContext(operation, self.cache)
        enforce(self._controllers, ctx, subject, hook, pending)
        for notice in ctx.notices:
            self._log.notice(notice)
        return ctx

    def _submit_all(self, updates: Sequence[Update]) -> None:
        """Queue updates to send after the operation commits (requests that cannot carry them)."""
        self._outbox.extend(updates)

    def _submit(self, updates: Sequence[Update]) -> None:
        if not updates:
            return
        if self._updates is None:
            self._notify(
                f"{len(updates)} container updates dropped: no runtime updates port",
                Severity.WARNING,
                None,
            )
            return
        self._updates.submit(list(updates))

    # ================================================================== internals: runs
    def _run(self, operation: str, subject: str, body: Callable[[], T]) -> T:
        with self._serialized(operation):
            self._require_started()
            result = self._transaction(operation, subject, body)
            self._drain_events()
            return result

    def _transaction(self, operation: str, subject: str, body: Callable[[], T]) -> T:
        checkpoint = self.cache.checkpoint()
        started_at = self._clock.monotonic()
        self._operation = operation
        self._outbox = []
        try:
            result = body()
        except BaseException as exc:
            self.cache.rollback(checkpoint)
            self._outbox = []
            if not isinstance(exc, Exception):
                raise
            self._abort(operation, subject, exc, started_at)
            raise OperationFailedError(operation, subject, _reason(exc)) from exc
        self.cache.release(checkpoint)
        outbox, self._outbox = self._outbox, []
        self._commit(operation, started_at)
        self._submit(outbox)
        return result

    def _commit(self, operation: str, started_at: float) -> None:
        if self._decisions:
            decisions, self._decisions = self._decisions, []  # handed over: the log may keep it
            self._log_decisions(decisions)
        self._decided.clear()
        for name, problem in self._ctx.take_annotation_problems():
            self._log.notice(Notice("annotations", f"container {name}: {problem}"))
        self._save()
        if self._metrics is not None:
            self._metrics.observe_operation(operation, self._clock.monotonic() - started_at, True)

    def _abort(
        self, operation: str, subject: str | None, exc: BaseException, started_at: float
    ) -> None:
        self._decisions.clear()
        self._decided.clear()
        self._ctx.take_annotation_problems()
        what = f"{operation} {subject}" if subject else operation
        self._log.notice(Notice(operation, f"{what} failed: {_reason(exc)}", Severity.ERROR))
        if self._metrics is not None:
            self._metrics.observe_operation(operation, self._clock.monotonic() - started_at, False)

    def _drain_events(self) -> None:
        handled = 0
        while self._events:
            if handled >= MAX_EVENTS_PER_DRAIN:
                self._notify(
                    f"{len(self._events)} policy events left for the next operation "
                    "(the policy keeps injecting events)",
                    Severity.WARNING,
                    None,
                )
                return
            event = self._events.popleft()
            handled += 1

            def body(event: PolicyEvent = event) -> None:
                self._policy.handle_event(event)
                self._submit_all(self._enforce(f"event {event.kind}").updates)

            # a failed event is reported by _abort and fails no request
            with suppress(OperationFailedError):
                self._transaction(f"event {event.kind}", event.source or "policy", body)

    @contextmanager
    def _serialized(self, operation: str) -> Iterator[None]:
        me = threading.get_ident()
        if self._owner == me:
            raise ReentrantCallError(
                f"{operation} called from inside a running pipeline operation; "
                "policies must use inject_event"
            )
        with self._lock:
            self._owner = me
            self._operation = operation
            try:
                yield
            finally:
                self._owner = None

    def _require_started(self) -> None:
        if not self._started:
            raise NotStartedError("resource manager not started")

    # ================================================================== internals: state
    def _restore(self) -> tuple[StartOutcome, PolicyConfig | None]:
        if self._store is None:
            return StartOutcome(restored=False), None
        try:
            data = self._store.load()
        except StateStoreError as exc:
            raise StateRestoreError(f"cannot read saved state: {exc}") from exc
        if data is None:
            return StartOutcome(restored=False), None
        try:
            snapshot = structure_snapshot(data)
        except SnapshotError as exc:
            raise StateRestoreError(f"refusing saved state: {exc}") from exc
        policy_changed = snapshot.policy != self._policy.name
        policy_data = {} if policy_changed else snapshot.policy_data
        if policy_changed:
            self._notify(
                f"saved state was written by policy {snapshot.policy!r}; its policy data is "
                f"dropped and containers are allocated anew by {self._policy.name!r}",
                Severity.WARNING,
                None,
            )
        self.cache.replace_all(snapshot.pods, snapshot.containers, policy_data)
        config = None
        if snapshot.config is not None and not policy_changed:
            try:
                config = self._codec.load(snapshot.policy, snapshot.config)
            except Exception as exc:
                self._notify(f"saved configuration ignored: {exc}", Severity.WARNING, None)
        return (
            StartOutcome(
                restored=True,
                pods=len(snapshot.pods),
                containers=len(snapshot.containers),
                policy_changed=policy_changed,
            ),
            config,
        )

    def _save(self) -> None:
        exported = self._policy.export_state()
        self.cache.set_policy_data(self._policy.name, exported)
        if self._store is None:
            self.cache.forget_changes()
            return
        if not self.cache.dirty:
            return
        # made from the changes since the last save, listed and unstructured when the store
        # reads it (its writer thread, a flush), not here
        snapshot = self._snapshots.save(
            self.cache.take_changes(),
            policy=self._policy.name,
            policy_data=self.cache.policy_data_view(),
            config=self._config_document(self.cache.config),
        )
        try:
            self._store.save(snapshot)
        except StateStoreError as exc:
            self._notify(f"state not saved (will retry): {exc}", Severity.ERROR, None)
            return
        self.cache.mark_clean()

    def _config_document(self, config: PolicyConfig | None) -> dict[str, Any] | None:
        """The document form of ``config``, dumped once per configuration (configs are
        immutable; snapshots share the document and nothing modifies it)."""
        if config is None:
            return None
        dumped_from, document = self._config_dumped
        if config is not dumped_from:
            document = dict(self._codec.dump(config))
            self._config_dumped = (config, document)
        return document

    # ================================================================== internals: records
    def _record_decision(self, container: Container, reason: str, ok: bool) -> None:
        pod = self.cache.pod(container.pod_id)
        resources = container.resources
        self._decided.add(container.id)
        self._decisions.append(
            Decision(  # positional: one per moved container, and keywords cost a third more
                self._operation,
                container.id,
                container.name,
                pod.name if pod else "",
                pod.namespace if pod else "",
                resources.cpus,
                resources.mems,
                reason,
                ok,
            )
        )

    def _log_one_by_one(self, decisions: Sequence[Decision]) -> None:
        for decision in decisions:
            self._log.decision(decision)

    def _notify(self, message: str, severity: Severity, container_id: str | None) -> None:
        self._log.notice(Notice("policy", message, severity, container_id))


_LIFECYCLE_ORDER = (ContainerState.CREATING, ContainerState.CREATED, ContainerState.RUNNING)


def _moves_forward(current: ContainerState, target: ContainerState) -> bool:
    """Whether a lifecycle event may move ``current`` to ``target`` (late events never
    bring a stopped container back, nor a running one back to created)."""
    if current not in _LIFECYCLE_ORDER or target not in _LIFECYCLE_ORDER:
        return False
    return _LIFECYCLE_ORDER.index(target) > _LIFECYCLE_ORDER.index(current)


def _reason(exc: BaseException) -> str:
    """The policy's own message for expected failures; the exception type for bugs."""
    text = str(exc)
    if text and isinstance(exc, _EXPECTED):
        return text
    return f"internal error: {type(exc).__name__}: {text}" if text else type(exc).__name__


def _pod_label(pod: Pod) -> str:
    return f"pod {pod.namespace}/{pod.name}" if pod.name else f"pod {pod.id}"


def _ctr_label(pod: Pod, container: Container) -> str:
    if pod.name and container.name:
        return f"container {pod.namespace}/{pod.name}/{container.name}"
    return f"container {container.id}"
