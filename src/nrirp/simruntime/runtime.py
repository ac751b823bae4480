"""The simulated runtime: a kubelet-shaped API over a container model, with NRI plugins.

Every operation takes the runtime lock (containerd's NRI lock) for the whole event delivery, as
containerd does. A plugin's UpdateContainers needs the same lock: called synchronously from
inside an event handler it waits for the event, the event waits for the handler, and after the
request timeout the runtime drops the plugin, exactly the deadlock containerd has.

Which errors fail an operation follows containerd: errors from RunPodSandbox, CreateContainer,
StartContainer, UpdateContainer and UpdatePodSandbox handlers fail the CRI call; errors from
post-events, StopContainer and the Remove/Stop notifications are only logged (and journaled).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import attrs

from nrirp.adapters.nri.gen import api_pb2
from nrirp.domain.model.kubelet import InvalidSpec, Resources
from nrirp.domain.model.pod_spec import ContainerSpec, PodSpec
from nrirp.simruntime.connections import PluginManager
from nrirp.simruntime.dispatch import Dispatcher
from nrirp.simruntime.errors import (
    InvalidAdjustment,
    InvalidRequest,
    InvalidState,
    NotFound,
    OperationFailed,
    Unsupported,
)
from nrirp.simruntime.given import container_record, pod_record
from nrirp.simruntime.journal import Journal, PluginEventKind
from nrirp.simruntime.kubelet import linux_resources
from nrirp.simruntime.model import (
    UPDATABLE,
    ContainerRecord,
    ContainerState,
    ContainerStatus,
    PodRecord,
    PodSandboxStatus,
    PodState,
    RuntimeModel,
)
from nrirp.simruntime.objects import (
    build_container,
    build_pod_sandbox,
    container_id,
    pod_id_for,
    pod_uid_for,
)
from nrirp.simruntime.options import RuntimeOptions
from nrirp.simruntime.plugin import PluginInfo, PluginState
from nrirp.simruntime.resources import check_resources, kubelet_update

log = logging.getLogger("nrirp.nri.simruntime")

FIRST_PID = 10_000

PodRef = str | PodSandboxStatus
ContainerRef = str | ContainerStatus


def _pod_id(ref: PodRef) -> str:
    return ref if isinstance(ref, str) else ref.id


def _container_id(ref: ContainerRef) -> str:
    return ref if isinstance(ref, str) else ref.id


def _copy_container(pb: api_pb2.Container) -> api_pb2.Container:
    out = api_pb2.Container()
    out.CopyFrom(pb)
    return out


class SimRuntime:
    """A container runtime with NRI, in Python, for tests and the simulator.

    Use as ``async with SimRuntime(RuntimeOptions(...)) as runtime:`` (or :meth:`start` /
    :meth:`close`). Plugins connect to ``options.socket_path``, to a socket from
    :meth:`open_plugin_socket`, or are started by :meth:`spawn_plugin`. Pods and containers are
    driven like a kubelet drives CRI: :meth:`run_pod_sandbox`, :meth:`create_container`,
    :meth:`start_container`, :meth:`update_container`, :meth:`stop_container`,
    :meth:`remove_container`, :meth:`stop_pod_sandbox`, :meth:`remove_pod_sandbox` (plus
    :meth:`run_pod` / :meth:`delete_pod` for whole pods). Statuses report each container's
    effective resources after plugin adjustments and updates. :attr:`journal` records every call.
    """

    def __init__(self, options: RuntimeOptions | None = None, **settings: Any) -> None:
        if options is None:
            options = RuntimeOptions(**settings)
        elif settings:
            options = attrs.evolve(options, **settings)
        self.options = options
        self.version = options.nri_version
        self.journal = Journal(options.journal_limit, options.keep_messages)
        self._lock = asyncio.Lock()
        self._model = RuntimeModel(options.host)
        self._plugins = PluginManager(options, self.journal, self._lock, self._model)
        self._dispatch = Dispatcher(self._plugins)
        self._node = options.node
        self._next_pid = FIRST_PID
        self._pod_serial = 0
        self._sandbox_attempts: dict[tuple[str, str, str], int] = {}
        self._container_attempts: dict[tuple[str, str], int] = {}
        self._started = False
        self._closed = False

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> SimRuntime:
        """Start accepting plugins."""
        if self._started:
            raise InvalidState("runtime already started")
        self._started = True
        await self._plugins.start()
        return self

    async def close(self) -> None:
        """Drop every plugin (killing pre-launched ones) and stop listening (idempotent)."""
        if self._closed:
            return
        self._closed = True
        await self._plugins.close()

    async def restart(self, downtime: float = 0.0) -> None:
        """Restart the runtime the way containerd restarts with its shims alive: every plugin
        connection is dropped (pre-launched plugins are killed) and the socket removed; after
        ``downtime`` seconds the socket is back and plugins register again, external ones being
        synchronized with the pods and containers that kept running."""
        self._check_running()
        await self._plugins.close()
        if downtime > 0:
            await asyncio.sleep(downtime)
        self._plugins = PluginManager(self.options, self.journal, self._lock, self._model)
        self._dispatch = Dispatcher(self._plugins)
        await self._plugins.start()

    async def __aenter__(self) -> SimRuntime:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _check_running(self) -> None:
        if not self._started or self._closed:
            raise InvalidState("runtime is not running (use start() or 'async with')")

    # ------------------------------------------------------------------ plugins

    async def open_plugin_socket(self) -> socket.socket:
        """A connected socket for an in-process plugin (e.g. a stub given this connection);
        the runtime handles it like an external plugin dialling its socket."""
        self._check_running()
        return await self._plugins.open_socket()

    async def spawn_plugin(
        self,
        command: Sequence[str],
        name: str,
        index: str,
        config: str = "",
        *,
        synchronize: bool = False,
        log_path: str | None = None,
    ) -> PluginInfo:
        """Start ``command`` as pre-launched plugin ``index-name``, as containerd does: exactly
        ``NRI_PLUGIN_NAME``, ``NRI_PLUGIN_IDX``, ``NRI_PLUGIN_SOCKET=3`` in its environment, fd 3
        a socketpair, stdio on /dev/null (``log_path`` sends stderr to a file). ``config`` is
        passed in Configure. Returns once it is registered and configured (and synchronized, if
        asked: containerd does not synchronize pre-launched plugins). Raises
        :class:`~.errors.PluginStartError` (the process is killed) or :class:`InvalidRequest`.
        """
        self._check_running()
        plugin = await self._plugins.spawn(
            command, name, index, config, synchronize=synchronize, log_path=log_path
        )
        return plugin.info()

    def plugins(self) -> list[PluginInfo]:
        """Every plugin connection since the start or the last :meth:`restart` (also closed
        and rejected ones), oldest first."""
        return [p.info() for p in self._plugins.connections]

    def active_plugins(self) -> list[PluginInfo]:
        """Plugins receiving events, in invocation order."""
        return [p.info() for p in self._plugins.active()]

    def plugin(self, name: str) -> PluginInfo:
        """The newest connection of plugin ``NN-name``."""
        for plugin in reversed(self._plugins.connections):
            if plugin.name == name:
                return plugin.info()
        raise NotFound(f"no plugin {name!r}")

    async def wait_plugin(
        self,
        name: str,
        event: PluginEventKind = PluginEventKind.SYNCHRONIZED,
        timeout: float | None = 10.0,
    ) -> PluginInfo:
        """Wait until plugin ``NN-name`` reached ``event`` (by default: it receives events)."""

        def reached() -> bool:
            return any(e.plugin == name and e.kind is event for e in self.journal.events)

        await self.journal.wait_for(reached, timeout)
        return self.plugin(name)

    async def wait_plugins(self, count: int, timeout: float | None = 10.0) -> list[PluginInfo]:
        """Wait until ``count`` plugins receive events."""
        await self.journal.wait_for(lambda: len(self._plugins.active()) >= count, timeout)
        return self.active_plugins()

    # ------------------------------------------------------------------ queries

    def pods(self) -> list[PodSandboxStatus]:
        """Every pod sandbox, in creation order."""
        return [PodSandboxStatus.of(p) for p in self._model.pods.values()]

    def pod(self, pod: PodRef) -> PodSandboxStatus:
        """The pod sandbox with this id."""
        return PodSandboxStatus.of(self._model.pod(_pod_id(pod)))

    def containers(self, pod: PodRef | None = None) -> list[ContainerStatus]:
        """Every container (of one pod), in creation order."""
        if pod is None:
            return [ContainerStatus.of(c) for c in self._model.containers.values()]
        record = self._model.pod(_pod_id(pod))
        return [ContainerStatus.of(self._model.containers[cid]) for cid in record.containers]

    def container(self, container: ContainerRef) -> ContainerStatus:
        """The container with this id."""
        return ContainerStatus.of(self._model.container(_container_id(container)))

    def find_pod(self, namespace: str, name: str) -> PodSandboxStatus:
        """The newest pod sandbox ``namespace/name``."""
        for record in reversed(self._model.pods.values()):
            if record.pb.namespace == namespace and record.pb.name == name:
                return PodSandboxStatus.of(record)
        raise NotFound(f"no pod sandbox {namespace}/{name}")

    def find_container(self, namespace: str, pod: str, name: str) -> ContainerStatus:
        """The newest container ``name`` of pod ``namespace/pod``."""
        record = self._model.pod(self.find_pod(namespace, pod).id)
        for cid in reversed(record.containers):
            ctr = self._model.containers[cid]
            if ctr.pb.name == name:
                return ContainerStatus.of(ctr)
        raise NotFound(f"pod {namespace}/{pod} has no container {name!r}")

    # ------------------------------------------------------------------ pods

    async def run_pod_sandbox(self, spec: PodSpec) -> PodSandboxStatus:
        """RunPodSandbox: a ready sandbox for ``spec``; fails if a plugin fails RunPodSandbox."""
        self._check_running()
        async with self._lock:
            uid = spec.uid
            if not uid:
                self._pod_serial += 1
                uid = pod_uid_for(spec.namespace, spec.name, self._pod_serial)
            key = (spec.namespace, spec.name, uid)
            attempt = self._sandbox_attempts.get(key, 0)
            pod_id = pod_id_for(spec.namespace, spec.name, uid, attempt)
            pb = build_pod_sandbox(
                spec,
                pod_id=pod_id,
                uid=uid,
                pid=self._new_pid(),
                seen_at=self._seen_at(),
                node=self._node,
            )
            error = await self._dispatch.notify(api_pb2.RUN_POD_SANDBOX, pb)
            if error is not None:
                self._record("RunPodSandbox", pod_id, error)
                raise error
            self._sandbox_attempts[key] = attempt + 1
            record = PodRecord(pb, spec, spec.qos)
            self._model.pods[pod_id] = record
            self._record("RunPodSandbox", pod_id)
            return PodSandboxStatus.of(record)

    async def update_pod_sandbox(
        self,
        pod: PodRef,
        resources: Resources | api_pb2.LinuxResources | None = None,
        overhead: Resources | api_pb2.LinuxResources | None = None,
    ) -> PodSandboxStatus:
        """UpdatePodSandbox (NRI v0.10+): new pod-level resources; then PostUpdatePodSandbox."""
        self._check_running()
        if not self.version.pod_updates:
            raise Unsupported(f"UpdatePodSandbox does not exist in NRI {self.version}")
        async with self._lock:
            record = self._model.pod(_pod_id(pod))
            new = None if resources is None else _as_resources(resources)
            extra = None if overhead is None else _as_resources(overhead)
            try:
                await self._dispatch.update_pod_sandbox(record.pb, extra, new)
            except OperationFailed as exc:
                self._record("UpdatePodSandbox", record.id, exc)
                raise
            if new is not None:
                record.pb.linux.pod_resources.CopyFrom(new)
            if extra is not None:
                record.pb.linux.pod_overhead.CopyFrom(extra)
            self._record("UpdatePodSandbox", record.id)
        await self._notify_later(api_pb2.POST_UPDATE_POD_SANDBOX, record.id)
        return PodSandboxStatus.of(record)

    async def stop_pod_sandbox(self, pod: PodRef) -> PodSandboxStatus:
        """StopPodSandbox: stop its containers, then the sandbox (idempotent)."""
        self._check_running()
        async with self._lock:
            record = self._model.pod(_pod_id(pod))
            await self._stop_pod_locked(record)
            return PodSandboxStatus.of(record)

    async def remove_pod_sandbox(self, pod: PodRef) -> None:
        """RemovePodSandbox: stop it if needed, remove its containers, then the sandbox."""
        self._check_running()
        async with self._lock:
            record = self._model.pod(_pod_id(pod))
            await self._stop_pod_locked(record)
            for cid in list(record.containers):
                await self._remove_container_locked(self._model.containers[cid])
            error = await self._dispatch.notify(api_pb2.REMOVE_POD_SANDBOX, record.pb)
            del self._model.pods[record.id]
            self._record("RemovePodSandbox", record.id, error)

    async def _stop_pod_locked(self, record: PodRecord) -> None:
        if record.state is PodState.NOTREADY:
            return
        for cid in list(record.containers):
            await self._stop_container_locked(self._model.containers[cid])
        record.state = PodState.NOTREADY
        error = await self._dispatch.notify(api_pb2.STOP_POD_SANDBOX, record.pb)
        self._record("StopPodSandbox", record.id, error)

    # ------------------------------------------------------------------ containers

    async def create_container(
        self,
        pod: PodRef,
        container: str | ContainerSpec,
        *,
        resources: Resources | None = None,
        annotations: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        image: str | None = None,
        command: Sequence[str] | None = None,
        args: Sequence[str] | None = None,
        cpuset_cpus: str | None = None,
        cpuset_mems: str | None = None,
    ) -> ContainerStatus:
        """CreateContainer in ``pod``: plugins adjust it; returns it with adjustments applied.

        ``container`` is a name from the pod's spec, a name not in it (a container with just the
        given settings), or a :class:`ContainerSpec`; keyword arguments override the spec.
        Raises :class:`~.errors.OperationFailed` (plugin error, conflict, rejection, a cpuset
        the node cannot apply); nothing is created then, and plugins get StopContainer and
        RemoveContainer for it, as containerd's undo sends.
        """
        self._check_running()
        changes: dict[str, Any] = {
            k: v
            for k, v in (
                ("resources", resources),
                ("annotations", annotations),
                ("labels", labels),
                ("env", env),
                ("image", image),
                ("command", command),
                ("args", args),
                ("cpuset_cpus", cpuset_cpus),
                ("cpuset_mems", cpuset_mems),
            )
            if v is not None
        }
        async with self._lock:
            record = self._model.pod(_pod_id(pod))
            if record.state is not PodState.READY:
                raise InvalidState(f"pod sandbox {record.id!r} is not ready")
            spec = self._container_spec(record, container, changes)
            created = await self._create_locked(record, spec)
        await self._notify_later(api_pb2.POST_CREATE_CONTAINER, record.id, created.id)
        return self._status_if_present(created)

    def _container_spec(
        self, pod: PodRecord, container: str | ContainerSpec, changes: dict[str, Any]
    ) -> ContainerSpec:
        if isinstance(container, ContainerSpec):
            spec = container
        else:
            known = [c for c in pod.spec.containers if c.name == container]
            try:
                spec = known[0] if known else ContainerSpec(container)
            except InvalidSpec as exc:
                raise InvalidRequest(str(exc)) from None
        try:
            return attrs.evolve(spec, **changes) if changes else spec
        except (TypeError, ValueError) as exc:
            raise InvalidRequest(f"invalid container settings: {exc}") from None

    async def _create_locked(self, pod: PodRecord, spec: ContainerSpec) -> ContainerRecord:
        key = (pod.id, spec.name)
        attempt = self._container_attempts.get(key, 0)
        cid = container_id(pod.id, spec.name, attempt)
        ctr = build_container(
            pod.pb,
            pod.qos,
            spec,
            cid=cid,
            attempt=attempt,
            created_at=self.options.clock(),
            node=self._node,
            host_network=pod.spec.host_network,
        )
        record = await self._create_message_locked(pod, ctr, spec, attempt)
        self._container_attempts[key] = attempt + 1
        return record

    async def _create_message_locked(
        self, pod: PodRecord, ctr: api_pb2.Container, spec: ContainerSpec, attempt: int
    ) -> ContainerRecord:
        cid = ctr.id
        pristine = _copy_container(ctr)
        try:
            merge = await self._dispatch.create_container(pod.pb, ctr, pristine)
            problem = check_resources(ctr.linux.resources, self._model.host)
            if problem is not None:
                raise InvalidAdjustment(f"failed to create container {cid!r}: {problem}")
        except OperationFailed as exc:
            self._record("CreateContainer", cid, exc)
            await self._undo_create(pod, pristine)
            raise
        ctr.state = api_pb2.CONTAINER_CREATED
        record = ContainerRecord(ctr, spec, attempt, merge.adjustment)
        self._model.add_container(pod, record)
        failed = self._apply_updates(merge.updates.updates)
        self._record("CreateContainer", cid, None, failed)
        return record

    async def _undo_create(self, pod: PodRecord, pristine: api_pb2.Container) -> None:
        """containerd's undoCreateContainer: StopContainer and RemoveContainer notifications."""
        _, error = await self._dispatch.stop_container(pod.pb, pristine)
        if error is not None:
            log.info("container creation undo (stop) failed: %s", error)
        error = await self._dispatch.notify(api_pb2.REMOVE_CONTAINER, pod.pb, pristine)
        if error is not None:
            log.info("container creation undo (remove) failed: %s", error)

    async def start_container(self, container: ContainerRef) -> ContainerStatus:
        """StartContainer: running, with a pid; fails (staying created) if a plugin fails it."""
        self._check_running()
        async with self._lock:
            record = self._model.container(_container_id(container))
            if record.state is not ContainerState.CREATED:
                raise InvalidState(
                    f"container {record.id!r} is in {record.state.name} state, cannot start"
                )
            pod = self._model.pod_of(record)
            error = await self._dispatch.notify(api_pb2.START_CONTAINER, pod.pb, record.pb)
            if error is not None:
                self._record("StartContainer", record.id, error)
                raise error
            record.pb.state = api_pb2.CONTAINER_RUNNING
            record.pb.pid = self._new_pid()
            if self.version.at_least(10):
                record.pb.started_at = self.options.clock()
            self._record("StartContainer", record.id)
        await self._notify_later(api_pb2.POST_START_CONTAINER, pod.id, record.id)
        return self._status_if_present(record)

    async def update_container(
        self, container: ContainerRef, resources: Resources | api_pb2.LinuxResources
    ) -> ContainerStatus:
        """UpdateContainerResources (e.g. an in-place resize): plugins see the request and may
        change it; fails without changing anything on plugin errors, conflicts or values the
        node cannot apply."""
        self._check_running()
        async with self._lock:
            record = self._model.container(_container_id(container))
            if record.state not in UPDATABLE:
                raise InvalidState(
                    f"container {record.id!r} is in {record.state.name} state, cannot update"
                )
            pod = self._model.pod_of(record)
            requested = kubelet_update(_as_resources(resources))
            try:
                collector = await self._dispatch.update_container(pod.pb, record.pb, requested)
                assert collector.request is not None
                self._model.update_resources(record, collector.request)
            except (OperationFailed, InvalidState) as exc:
                self._record("UpdateContainer", record.id, exc)
                if isinstance(exc, OperationFailed):
                    raise
                raise InvalidAdjustment(str(exc)) from None
            if isinstance(resources, Resources):
                record.spec = attrs.evolve(record.spec, resources=resources)
            failed = self._apply_updates(collector.updates)
            self._record("UpdateContainer", record.id, None, failed)
        await self._notify_later(api_pb2.POST_UPDATE_CONTAINER, pod.id, record.id)
        return self._status_if_present(record)

    async def stop_container(self, container: ContainerRef) -> ContainerStatus:
        """StopContainer (idempotent): stopped, then plugins are told and may update others."""
        self._check_running()
        async with self._lock:
            record = self._model.container(_container_id(container))
            await self._stop_container_locked(record)
            return ContainerStatus.of(record)

    async def _stop_container_locked(self, record: ContainerRecord) -> None:
        if record.state is ContainerState.STOPPED:
            return
        record.pb.state = api_pb2.CONTAINER_STOPPED
        if self.version.at_least(10):
            record.pb.finished_at = self.options.clock()
            record.pb.exit_code = 0
        pod = self._model.pod_of(record)
        collector, error = await self._dispatch.stop_container(pod.pb, record.pb)
        failed = self._apply_updates(collector.updates)
        self._record("StopContainer", record.id, error, failed)

    async def remove_container(self, container: ContainerRef) -> None:
        """RemoveContainer (stopping it first if needed)."""
        self._check_running()
        async with self._lock:
            record = self._model.container(_container_id(container))
            await self._remove_container_locked(record)

    async def _remove_container_locked(self, record: ContainerRecord) -> None:
        await self._stop_container_locked(record)
        pod = self._model.pod_of(record)
        error = await self._dispatch.notify(api_pb2.REMOVE_CONTAINER, pod.pb, record.pb)
        self._model.drop_container(record)
        self._record("RemoveContainer", record.id, error)

    # ------------------------------------------------------------------ given messages

    async def adopt(
        self, pods: Sequence[api_pb2.PodSandbox], containers: Sequence[api_pb2.Container]
    ) -> None:
        """Make the runtime run exactly ``pods`` and ``containers``, telling no plugin: how
        things are when plugins connect (or reconnect: their Synchronize reports them), e.g.
        what a recording's Synchronize held. Pods and containers the runtime has that are not
        listed are forgotten; listed ones it has stay as they are (with every adjustment and
        update since); the others are taken as given (copied). May be called before
        :meth:`start`. Raises :class:`InvalidRequest` (nothing changed) for a container of a
        pod that is not listed, or a pod or container without an id."""
        async with self._lock:
            wanted = {p.id: p for p in pods}
            new_pods = {p.id: pod_record(p) for p in pods if p.id not in self._model.pods}
            new_containers = []
            for pb in containers:
                if pb.pod_sandbox_id not in wanted:
                    raise InvalidRequest(
                        f"container {pb.id!r} is in pod sandbox {pb.pod_sandbox_id!r}, "
                        "which is not listed"
                    )
                if pb.id not in self._model.containers:
                    new_containers.append(container_record(pb))
            listed = {c.id for c in containers}
            for record in list(self._model.containers.values()):
                if record.id not in listed:
                    self._model.drop_container(record)
            for pod_id in list(self._model.pods):
                if pod_id not in wanted:
                    del self._model.pods[pod_id]
            self._model.pods.update(new_pods)
            for record in new_containers:
                self._model.add_container(self._model.pod(record.pb.pod_sandbox_id), record)

    async def run_pod_sandbox_message(self, pb: api_pb2.PodSandbox) -> PodSandboxStatus:
        """RunPodSandbox of exactly this NRI pod (ids and all, e.g. a recording's); fails like
        :meth:`run_pod_sandbox`, or with :class:`InvalidState` if its id is taken."""
        self._check_running()
        async with self._lock:
            if pb.id in self._model.pods:
                raise InvalidState(f"pod sandbox {pb.id!r} already exists")
            record = pod_record(pb)
            error = await self._dispatch.notify(api_pb2.RUN_POD_SANDBOX, record.pb)
            if error is not None:
                self._record("RunPodSandbox", pb.id, error)
                raise error
            self._model.pods[pb.id] = record
            self._record("RunPodSandbox", pb.id)
            return PodSandboxStatus.of(record)

    async def create_container_message(self, pb: api_pb2.Container) -> ContainerStatus:
        """CreateContainer of exactly this NRI container (ids, resources and all, e.g. a
        recording's) in the pod its ``pod_sandbox_id`` names; plugins adjust it as in
        :meth:`create_container`, which it fails like (or with :class:`InvalidState` if the
        id is taken)."""
        self._check_running()
        async with self._lock:
            pod = self._model.pod(pb.pod_sandbox_id)
            if pod.state is not PodState.READY:
                raise InvalidState(f"pod sandbox {pod.id!r} is not ready")
            if pb.id in self._model.containers:
                raise InvalidState(f"container {pb.id!r} already exists")
            given = container_record(pb)
            given.pb.state = api_pb2.CONTAINER_UNKNOWN
            created = await self._create_message_locked(pod, given.pb, given.spec, 0)
        await self._notify_later(api_pb2.POST_CREATE_CONTAINER, pod.id, created.id)
        return self._status_if_present(created)

    # ------------------------------------------------------------------ whole pods

    async def run_pod(self, spec: PodSpec) -> tuple[PodSandboxStatus, list[ContainerStatus]]:
        """RunPodSandbox, then CreateContainer and StartContainer for each container in order.

        Stops at the first failure (raising it); what was created stays, as with a kubelet.
        """
        pod = await self.run_pod_sandbox(spec)
        containers = []
        for container in spec.containers:
            created = await self.create_container(pod, container.name)
            containers.append(await self.start_container(created))
        return self.pod(pod), containers

    async def delete_pod(self, pod: PodRef) -> None:
        """Tear a pod down in kubelet order: stop containers, stop sandbox, remove all."""
        await self.stop_pod_sandbox(pod)
        await self.remove_pod_sandbox(pod)

    # ------------------------------------------------------------------ helpers

    async def _notify_later(self, event: int, pod_id: str, container_id: str = "") -> None:
        """A post-event, after the operation (a separate lock acquisition, as in containerd);
        errors are logged only."""
        async with self._lock:
            pod = self._model.pods.get(pod_id)
            ctr = self._model.containers.get(container_id) if container_id else None
            if pod is None or (container_id and ctr is None):
                return  # removed meanwhile
            error = await self._dispatch.notify(event, pod.pb, None if ctr is None else ctr.pb)
            if error is not None:
                log.info("%s: %s", error.plugin, error)

    def _apply_updates(self, updates: Sequence[api_pb2.ContainerUpdate]) -> list[str]:
        failed, problems = self._model.apply_updates(updates)
        for problem in problems:
            log.info("update requested by a plugin failed: %s", problem)
        return [u.container_id for u in failed]

    def _status_if_present(self, record: ContainerRecord) -> ContainerStatus:
        return ContainerStatus.of(self._model.containers.get(record.id, record))

    def _record(
        self,
        operation: str,
        target: str,
        error: BaseException | None = None,
        failed: Sequence[str] = (),
    ) -> None:
        self.journal.operation(operation, target, None if error is None else str(error), failed)

    def _new_pid(self) -> int:
        self._next_pid += 1
        return self._next_pid

    def _seen_at(self) -> str:
        seconds = self.options.clock() / 1e9
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + ".000000000Z"


def _as_resources(value: Resources | api_pb2.LinuxResources) -> api_pb2.LinuxResources:
    if isinstance(value, Resources):
        return linux_resources(value)
    if not isinstance(value, api_pb2.LinuxResources):
        raise InvalidRequest(f"resources must be Resources or LinuxResources, got {value!r}")
    out = api_pb2.LinuxResources()
    out.CopyFrom(value)
    return out


__all__ = ["PluginState", "SimRuntime"]
