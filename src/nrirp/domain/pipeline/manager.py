"""The resource manager: the serialized pipeline every request and event goes through.

Each operation runs with the pipeline lock held, in the reference's order:

1. look up or create the cache objects for the request;
2. invoke the policy (allocate / release / update / sync / handle_event);
3. run the controller layer over the containers with pending changes;
4. build the response (adjustment for a container being created, updates for the others),
   or hand the updates to the :class:`RuntimeUpdates` port when the request cannot carry them;
5. save the state once if anything persistent changed;
6. handle policy events injected while the operation ran.

Each operation is one :class:`~nrirp.domain.pipeline.unit_of_work.UnitOfWork`: a failing step
rolls the cache back to where it was before step 1 and raises :class:`OperationFailedError`;
committing logs the decisions, saves (:mod:`~nrirp.domain.pipeline.persistence`) and measures.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from types import TracebackType
from typing import Any

import attrs

from nrirp.domain.cache import Cache
from nrirp.domain.config import PolicyConfig
from nrirp.domain.control import (
    ControlContext,
    Controller,
    ControllerRegistry,
    Hook,
    HostController,
    RuntimeController,
    RuntimeFeatures,
    enforce,
)
from nrirp.domain.control.runtime import ALL_FEATURES
from nrirp.domain.hostcontrol.enforcer import HostEnforcer
from nrirp.domain.hostcontrol.exports import EXPORT_ANNOTATION, TAG_EXPORT, export_mount
from nrirp.domain.model import (
    HOST_CONTROLLER,
    RUNTIME_CONTROLLER,
    Adjustment,
    Container,
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
)
from nrirp.domain.pipeline.explaining import Refusal, Refusals, explain_query
from nrirp.domain.pipeline.hostless import drop_host_settings
from nrirp.domain.pipeline.labels import ctr_label, pod_label
from nrirp.domain.pipeline.lifecycle import LifecycleNeeds, lifecycle_needs
from nrirp.domain.pipeline.persistence import StatePersistence
from nrirp.domain.pipeline.results import CreateResult, ReconfigureOutcome, StartOutcome
from nrirp.domain.pipeline.unit_of_work import UnitOfWork, failure_reason
from nrirp.domain.policy import (
    UPDATES_FAILED,
    MetricSample,
    Policy,
    PolicyContext,
    PolicyEvent,
    TopologyZone,
    UpdatesFailed,
)
from nrirp.domain.policy.explanation import Explanation
from nrirp.domain.policy.settings import container_settings
from nrirp.domain.ports.clock import Clock, StoppedClock
from nrirp.domain.ports.cpu_power import CPUPowerControl
from nrirp.domain.ports.decisions import DecisionLog, Notice, NullDecisionLog, Severity
from nrirp.domain.ports.documents import AnnotationParser
from nrirp.domain.ports.host_control import HostControl, HostControlError
from nrirp.domain.ports.inbound import InboundObserver
from nrirp.domain.ports.interrupts import InterruptControl
from nrirp.domain.ports.kubernetes import Kubernetes
from nrirp.domain.ports.metrics import Metrics
from nrirp.domain.ports.resctrl import ResctrlControl
from nrirp.domain.ports.resource_export import ResourceExport
from nrirp.domain.ports.runtime_updates import RuntimeUpdates
from nrirp.domain.ports.state_store import StateStore
from nrirp.domain.ports.timers import Timers
from nrirp.domain.ports.topology_hints import TopologyHintSource
from nrirp.domain.topology import Machine

MAX_EVENTS_PER_DRAIN = 10_000


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
        annotation_parser: AnnotationParser | None = None,
        kubernetes: Kubernetes | None = None,
        observer: InboundObserver | None = None,
        cpu_power: CPUPowerControl | None = None,
        interrupts: InterruptControl | None = None,
        resctrl: ResctrlControl | None = None,
        resource_export: ResourceExport | None = None,
    ) -> None:
        self._policy = policy
        self._observer = observer
        self._deferring: int | None = None
        """The thread whose calls the observer hears of later (:meth:`defer_observer`)."""
        self._unheard: list[tuple[Any, ...]] = []
        """Calls of that thread the observer has not heard of yet (at most one: every
        operation tells the observer of them before it runs)."""
        self._kubernetes = kubernetes
        self._machine = machine
        self._updates = updates
        self._clock: Clock = clock or StoppedClock()  # the compositions pass the real one
        self._log: DecisionLog = decisions or NullDecisionLog()
        if controllers is None:
            default: list[Controller] = [RuntimeController()]
            if host is not None:
                default.append(HostController(host))
            controllers = default
        self._controllers = ControllerRegistry(controllers)
        self._hostless = self._controllers.get(HOST_CONTROLLER) is None
        """No host controller: host settings are dropped with a notice (:mod:`.hostless`)."""
        self.host = HostEnforcer(
            notify=self._host_notice,
            power=cpu_power,
            interrupts=interrupts,
            resctrl=resctrl,
            export=resource_export,
        )
        """Host-wide enforcement: CPU classes, interrupts, resctrl, ``resources.sh``."""
        self._changed = False
        self.cache = Cache()
        """The cache (read it only through the query methods or from policy calls)."""
        self._memory_capacity = sum(n.memory_bytes for n in machine.nodes.values())
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._events: deque[PolicyEvent] = deque()
        self._refusals = Refusals()
        """The last refused creations and resizes, for :meth:`explain` (failure path only)."""
        self._started = False
        self._reallocate_survivors = False
        self._persistence = StatePersistence(
            cache=self.cache,
            policy=policy,
            store=store,
            codec=config_codec or DefaultConfigCodec.for_policy(policy),
            notify=self._notify,
            keep_latest=observer is not None,
        )
        self._work = UnitOfWork(
            cache=self.cache,
            clock=self._clock,
            log=self._log,
            metrics=metrics,
            save=self._persistence.save if kubernetes is None else self._save_and_signal,
            submit=self._submit,
            annotation_problems=lambda: self._ctx.take_annotation_problems(),
            after_commit=self._after_commit,
        )
        self._ctx = PolicyContext(
            cache=self.cache,
            machine=machine,
            clock=self._clock,
            inject=self.inject_event,
            decide=self._work.record_decision,
            notify=self._notify,
            hints=hints,
            timers=timers,
            annotation_parser=annotation_parser,
            class_support=self.host.class_support,
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
            saved = self._persistence.read()
            if config is None:
                config = saved.config
            self.host.start(self._machine, self._policy)
            try:
                with self._work.begin("start") as work:  # a refused start undoes the restore
                    self._persistence.restore(saved)
                    self._policy.start(self._ctx, config)
                    self.cache.set_config(config)
                    self._reallocate_survivors = saved.outcome.policy_changed
                    work.send_after_commit(self._enforce("start").updates)
                    self._started = True
                    self.host.configured(config, self.cache)
                    work.commit()
            except OperationFailedError as failed:
                self._reallocate_survivors = False
                raise OperationFailedError(
                    "start", f"policy {self._policy.name}", failed.reason, internal=failed.internal
                ) from failed.__cause__
            if self._observer is not None:
                self._observer.started(config, saved.data, self._persistence.latest)
            self._drain_events()
            return saved.outcome

    def synchronize(self, pods: Sequence[Pod], containers: Sequence[Container]) -> list[Update]:
        """Reconcile with everything the runtime runs: containers gone are released, new ones
        allocated, survivors keep their resources. Returns updates for existing containers."""
        operation = _Operation(self, "synchronize", "pods and containers", None, None, None)
        if self._observer is not None:
            operation._pods, operation._containers = tuple(pods), tuple(containers)
        with operation as work:
            updates = self._synchronize(pods, containers)
            work.commit()
        return list(updates)

    def run_pod(self, pod: Pod) -> None:
        """A pod sandbox was started."""
        with self._operation("run-pod", pod_label(pod), pod) as work:
            admit_pod(self.cache, pod, self._clock.now())
            work.commit()

    def stop_pod(self, pod: Pod) -> None:
        """A pod sandbox stopped: its containers that still hold resources release them."""
        with self._operation("stop-pod", pod_label(pod), pod) as work:
            for ctr in self.cache.containers_of(pod.id):
                self._stop(ctr)
            work.send_after_commit(self._enforce("stop-pod").updates)
            work.commit()

    def remove_pod(self, pod: Pod) -> None:
        """A pod sandbox was removed: forget it and its containers."""
        with self._operation("remove-pod", pod_label(pod), pod) as work:
            for ctr in self.cache.containers_of(pod.id):
                self._stop(ctr)
                self.cache.remove_container(ctr.id)
            self.cache.remove_pod(pod.id)
            work.send_after_commit(self._enforce("remove-pod").updates)
            work.commit()

    def create_container(self, pod: Pod, container: Container) -> CreateResult:
        """Allocate resources for a container being created.

        Returns the adjustment for it and updates for other containers the policy changed.
        Raises :class:`OperationFailedError` (cache unchanged) when the policy refuses.
        """
        try:
            with self._operation(
                "create-container", ctr_label(pod, container), pod, container
            ) as work:
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
                self._export_if_asked(admitted)
                control = self._enforce("create-container", container.id, Hook.PRE_CREATE)
                work.commit()
        except OperationFailedError as failed:
            self._remember_refusal("create-container", pod, container, failed.reason)
            raise
        adjustment = control.adjustment or Adjustment(container.id)
        others = tuple(u for u in control.updates if u.container_id != container.id)
        return CreateResult(adjustment, others)

    def post_create(self, pod: Pod, container: Container) -> None:
        """The container was created."""
        self._transition("post-create", pod, container, ContainerState.CREATED, None)

    def start_container(self, pod: Pod, container: Container) -> None:
        """The container is about to start: running from now on, unless host settings wait
        for its process (then it is created until :meth:`post_start`)."""
        self._transition("start-container", pod, container, _STARTED, Hook.PRE_START)

    def post_start(self, pod: Pod, container: Container) -> None:
        """The container started."""
        self._transition("post-start", pod, container, ContainerState.RUNNING, Hook.POST_START)

    def update_container(
        self, pod: Pod, container: Container, resources: LinuxResources
    ) -> list[Update]:
        """The container's resources are being changed to ``resources``.

        Returns updates, possibly including one for this container that amends the change.
        """
        try:
            return self._update_container(pod, container, resources)
        except OperationFailedError as failed:
            self._remember_refusal("update-container", pod, container, failed.reason)
            raise

    def _update_container(
        self, pod: Pod, container: Container, resources: LinuxResources
    ) -> list[Update]:
        with self._operation(
            "update-container", ctr_label(pod, container), pod, container, resources
        ) as work:
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
            updates = self._enforce("update-container").updates
            work.commit()
        return list(updates)

    def post_update(self, pod: Pod, container: Container) -> None:
        """The container's resources were changed."""
        self._transition("post-update", pod, container, None, None)

    def stop_container(self, pod: Pod, container: Container) -> list[Update]:
        """The container stopped: release its resources; returns updates for others."""
        with self._operation("stop-container", ctr_label(pod, container), pod, container) as work:
            updates: Sequence[Update] = ()
            current = self.cache.container(container.id)
            if current is not None:
                self._stop(current)
                updates = self._enforce("stop-container", container.id, Hook.POST_STOP).updates
            work.commit()
        return list(updates)

    def remove_container(self, pod: Pod, container: Container) -> None:
        """The container was removed: release it if still needed and forget it.

        Removing a pod's last container forgets the pod too: the runtime may never report the
        pod's own removal (containerd 1.7 sends no StopPodSandbox/RemovePodSandbox for pods
        that survived its restart), and a later request for a container of the pod brings it
        back from the pod the request carries.
        """
        with self._operation("remove-container", ctr_label(pod, container), pod, container) as work:
            current = self.cache.container(container.id)
            if current is not None:
                self._stop(current)
                self.cache.remove_container(container.id)
                if not self.cache.containers_of(current.pod_id):
                    self.cache.remove_pod(current.pod_id)
                work.send_after_commit(self._enforce("remove-container").updates)
            work.commit()

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
            try:
                with self._work.begin("reconfigure") as work:
                    self._policy.reconfigure(config)
                    self.cache.set_config(config)
                    self.host.configured(config, self.cache)
                    updates = self._enforce("reconfigure").updates
                    work.send_after_commit(updates)
                    work.commit()
            except OperationFailedError as failed:
                if self._observer is not None:
                    self._observer.handled("reconfigure", config=config, failure=failed.reason)
                return ReconfigureOutcome(False, failed.reason)
            if self._observer is not None:
                self._observer.handled("reconfigure", config=config)
            self._drain_events()
            return ReconfigureOutcome(True, updates=len(updates))

    def lifecycle_needs(self) -> LifecycleNeeds:
        """The lifecycle events this pipeline needs besides its requests, for the policy's
        configuration in force and the runtime's features (:mod:`.lifecycle`): what an adapter
        subscribes to."""
        with self._serialized("query"):
            runtime = self._controllers.get(RUNTIME_CONTROLLER)
            return lifecycle_needs(
                host_controller=self._controllers.get(HOST_CONTROLLER) is not None,
                settings=container_settings(self._policy),
                features=runtime.features
                if isinstance(runtime, RuntimeController)
                else ALL_FEATURES,
                pending_host=any(
                    HOST_CONTROLLER in c.pending.controllers
                    for c in self.cache.pending_containers()
                ),
            )

    def set_runtime_features(self, features: RuntimeFeatures) -> None:
        """What the connected runtime carries in a creation adjustment (the NRI adapter says
        so when the runtime configures it); what it does not goes to the host controller."""
        with self._serialized("runtime-features"):
            runtime = self._controllers.get(RUNTIME_CONTROLLER)
            if isinstance(runtime, RuntimeController):
                runtime.features = features

    def shutdown(self) -> None:
        """Put back what was changed on the host (CPU classes, interrupt affinities, resctrl
        groups); containers keep what they have. Safe to call more than once."""
        with self._serialized("shutdown"):
            self.host.close()

    # ================================================================== observer
    @property
    def observed(self) -> bool:
        """True when an inbound observer (a recorder) hears of the calls."""
        return self._observer is not None

    def defer_observer(self) -> bool:
        """Have the observer hear of the calls made on this thread only when
        :meth:`tell_observer` is called (a driver calls it once its reply is sent, so that
        the observer's work never delays a reply) or before the next operation runs,
        whichever comes first: it hears of every call in the pipeline's order all the same.
        False (and nothing changes) when there is no observer."""
        if self._observer is None:
            return False
        self._deferring = threading.get_ident()
        return True

    def tell_observer(self) -> None:
        """Tell the observer of the calls it has not heard of yet (see
        :meth:`defer_observer`). Never waits: an operation running on another thread tells
        it first."""
        if not self._unheard or not self._lock.acquire(blocking=False):
            return
        try:
            self._tell_unheard()
        finally:
            self._lock.release()

    def _tell_unheard(self) -> None:
        unheard = self._unheard
        self._unheard = []
        observer = self._observer
        if observer is not None:
            for call in unheard:
                observer.handled(*call)

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

    def explain(self, container: str) -> Explanation:
        """The policy's explanation of its decision for ``container`` (an id,
        ``namespace/pod/name``, ``pod/name`` or a name that only one container has), a
        container in the cache or one of the last refused ones. Worked out on demand from the
        policy's state now; nothing changes. Raises :class:`UnknownContainerError`."""
        with self._serialized("explain"):
            self._require_started()
            return explain_query(
                cache=self.cache,
                policy=self._policy,
                policy_name=self._policy.name,
                refusals=self._refusals,
                query=container,
                now=self._clock.now(),
                memory_capacity=self._memory_capacity,
            )

    # ================================================================== internals: steps
    def _remember_refusal(
        self, operation: str, pod: Pod, container: Container, reason: str
    ) -> None:
        """Keep a refusal for :meth:`explain` (on the failure path only)."""
        self._refusals.refused(Refusal(operation, pod, container, reason, self._clock.now()))

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
            try:
                with self._work.savepoint():
                    self._policy.release(stopped)
            except Exception as exc:
                self._notify(
                    f"releasing container {stopped.name or stopped.id} failed: "
                    f"{failure_reason(exc)}",
                    Severity.ERROR,
                    stopped.id,
                )
        elif container.state is not ContainerState.STOPPED:
            self.cache.put_container(container.with_state(ContainerState.STOPPED))

    def _transition(
        self,
        operation: str,
        pod: Pod,
        container: Container,
        state: ContainerState | object | None,
        hook: Hook | None,
    ) -> None:
        """A lifecycle event: note the process, move the state forward, run the hook."""
        with self._operation(operation, ctr_label(pod, container), pod, container) as work:
            current = self.cache.container(container.id)
            if current is not None:
                current = note_process(current, container)
                if state is _STARTED:  # running, unless host settings wait for the process
                    waiting = HOST_CONTROLLER in current.pending.controllers
                    state = ContainerState.CREATED if waiting else ContainerState.RUNNING
                if isinstance(state, ContainerState) and _moves_forward(current.state, state):
                    current = current.with_state(state)
                self.cache.put_container(current)
                work.send_after_commit(self._enforce(operation, container.id, hook).updates)
            work.commit()

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
        work = self._work
        decided = work.decided
        for ctr in pending:
            changed = ctr.pending.resources
            if (changed.cpus is not None or changed.mems is not None) and ctr.id not in decided:
                work.record_decision(ctr, operation, True)
        if pending:
            self._changed = True
        ctx = ControlContext(operation, self.cache)
        if self._hostless and pending:
            pending = self._drop_host_settings(ctx, pending, subject, hook)
        enforce(self._controllers, ctx, subject, hook, pending)
        if self._hostless and hook is Hook.PRE_CREATE and subject is not None:
            # what the runtime controller just routed to the host (the runtime cannot carry it)
            created = self.cache.container(subject)
            if created is not None:
                drop_host_settings(ctx, (created,))
        for notice in ctx.notices:
            self._log.notice(notice)
        return ctx

    def _drop_host_settings(
        self, ctx: ControlContext, pending: list[Container], subject: str | None, hook: Hook | None
    ) -> list[Container]:
        """Without a host controller: drop the host settings of the pending containers, with
        a notice each; the pending containers left. A container being created is left to
        after its creation hook, which may add more (one notice for all)."""
        creating = subject if hook is Hook.PRE_CREATE else None
        if drop_host_settings(ctx, (c for c in pending if c.id != creating)):
            return self.cache.pending_containers()
        return pending

    def _after_commit(self) -> None:
        """Host-wide enforcement once an operation's changes are kept."""
        changed, self._changed = self._changed, False
        self.host.after_commit(self.cache, changed)

    def _export_if_asked(self, container: Container) -> None:
        """Mount ``resources.sh`` into a container whose annotations ask for it."""
        reader = self.cache.annotations(container)
        if not reader.get_bool(EXPORT_ANNOTATION, False):
            return
        try:
            location = self.host.start_export(container.id)
        except HostControlError as exc:
            self._notify(f"resources.sh not exported: {exc}", Severity.WARNING, container.id)
            return
        if location is None:
            self._notify(
                f"resources.sh not exported: policy {self._policy.name} exports no "
                "allocation, or this environment keeps no export files",
                Severity.INFO,
                container.id,
            )
            return
        self.cache.add_creation_extras(container.id, mounts=(export_mount(location),))
        self.cache.set_tags(container.id, **{TAG_EXPORT: "1"})

    def _host_notice(self, message: str, severity: Severity) -> None:
        self._log.notice(Notice("host", message, severity))

    def _submit(self, updates: Sequence[Update]) -> None:
        """Hand updates to the runtime (after the operation that made them committed)."""
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
    def _operation(
        self,
        name: str,
        subject: str,
        pod: Pod | None = None,
        container: Container | None = None,
        resources: LinuxResources | None = None,
    ) -> _Operation:
        """``with self._operation(name, subject) as work:`` one lifecycle operation; the
        observer hears of it with the values the driver passed."""
        return _Operation(self, name, subject, pod, container, resources)

    def _handle_event(self, event: PolicyEvent) -> None:
        operation = f"event {event.kind}"
        with self._work.begin(operation, event.source or "policy") as work:
            self._policy.handle_event(event)
            work.send_after_commit(self._enforce(operation).updates)
            work.commit()

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
            with suppress(OperationFailedError):  # reported by the unit; fails no request
                self._handle_event(event)

    def _acquire(self, operation: str) -> None:
        me = threading.get_ident()
        if self._owner == me:
            raise ReentrantCallError(
                f"{operation} called from inside a running pipeline operation; "
                "policies must use inject_event"
            )
        self._lock.acquire()
        self._owner = me
        if self._unheard:  # the observer hears of the calls in the order they ran
            self._tell_unheard()

    def _release(self) -> None:
        self._owner = None
        self._lock.release()

    @contextmanager
    def _serialized(self, operation: str) -> Iterator[None]:
        self._acquire(operation)
        try:
            yield
        finally:
            self._release()

    def _require_started(self) -> None:
        if not self._started:
            raise NotStartedError("resource manager not started")

    def _save(self) -> None:
        """Save now, as a commit does (for tests that edit the cache behind the policy)."""
        self._persistence.save()

    def _save_and_signal(self) -> None:
        """A commit's save, then tell the node agent when something changed (it reads the
        zones later, off the request path)."""
        changed = self.cache.dirty
        self._persistence.save()
        if changed and self._kubernetes is not None:
            self._kubernetes.topology_changed()

    def _notify(self, message: str, severity: Severity, container_id: str | None) -> None:
        self._log.notice(Notice("policy", message, severity, container_id))


_LIFECYCLE_ORDER = (ContainerState.CREATING, ContainerState.CREATED, ContainerState.RUNNING)
_STARTED = object()
"""The state StartContainer moves a container to: running, or created while host settings
wait for its process (PostStartContainer, subscribed to only when such settings can arise)."""


def _moves_forward(current: ContainerState, target: ContainerState) -> bool:
    """Whether a lifecycle event may move ``current`` to ``target`` (late events never
    bring a stopped container back, nor a running one back to created)."""
    if current not in _LIFECYCLE_ORDER or target not in _LIFECYCLE_ORDER:
        return False
    return _LIFECYCLE_ORDER.index(target) > _LIFECYCLE_ORDER.index(current)


class _Operation:
    """A lifecycle operation: serialized, refused before start, one unit of work; the events
    the policy injected meanwhile are handled once it committed. The manager's inbound
    observer (if any) hears of it once it committed or was refused, with the values the driver
    passed (a Synchronize's pods and containers: ``_pods``, ``_containers``)."""

    __slots__ = (
        "_container",
        "_containers",
        "_manager",
        "_name",
        "_pod",
        "_pods",
        "_resources",
        "_subject",
    )

    def __init__(
        self,
        manager: ResourceManager,
        name: str,
        subject: str,
        pod: Pod | None,
        container: Container | None,
        resources: LinuxResources | None,
    ) -> None:
        self._manager = manager
        self._name = name
        self._subject = subject
        self._pod = pod
        self._container = container
        self._resources = resources
        self._pods: tuple[Pod, ...] = ()
        self._containers: tuple[Container, ...] = ()

    def __enter__(self) -> UnitOfWork:
        manager = self._manager
        manager._acquire(self._name)
        try:
            manager._require_started()
            return manager._work.begin(self._name, self._subject)
        except BaseException:
            manager._release()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        manager = self._manager
        try:
            observer = manager._observer
            if observer is None:
                manager._work.end(exc)  # rolls back, raises OperationFailedError unless committed
            else:  # the same, then the observer hears of it (also of a refusal)
                failure: str | None = None
                try:
                    manager._work.end(exc)
                except OperationFailedError as failed:
                    failure = failed.reason
                    raise
                finally:
                    if failure is None and exc is not None:  # not an Exception: not committed
                        failure = type(exc).__name__
                    call = (
                        self._name,
                        self._pod,
                        self._container,
                        self._resources,
                        self._pods,
                        self._containers,
                        None,
                        failure,
                    )
                    if manager._owner == manager._deferring:  # heard after the reply
                        manager._unheard.append(call)
                    else:
                        observer.handled(*call)
            if exc is None:
                manager._drain_events()
        finally:
            manager._release()
