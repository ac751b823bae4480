"""The engine API's gRPC handlers over a ``ResourceManager``.

``nrirp.engine.v1.Engine``: one method per lifecycle hook of the embedding API
(docs/embedding.md), neutral messages in and out; ``nrirp.engine.v1.NriV01``: one NRI v0.1
invocation (when the server has a v0.1 handler). The handlers are registered by hand
(``grpc.method_handlers_generic_handler``) on the generated messages, so no untyped
``*_pb2_grpc`` module is needed.

Errors: a refusal is FAILED_PRECONDITION with the policy's reason, a bad message
INVALID_ARGUMENT, an engine not started FAILED_PRECONDITION, anything else INTERNAL (and a
traceback in the log).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn, Protocol, TypeVar

import grpc
from google.protobuf.message import DecodeError, Message

from nrirp.adapters.documents import load_policy_config
from nrirp.adapters.engine_api import translate as tr
from nrirp.adapters.engine_api.gen import engine_pb2 as pb
from nrirp.adapters.engine_api.updates import RoutedRuntimeUpdates
from nrirp.domain.config import ConfigError, PolicySpecs
from nrirp.domain.control import RuntimeFeatures
from nrirp.domain.model import Adjustment, Container, ContainerState, Pod, Update
from nrirp.domain.pipeline import (
    OperationFailedError,
    PipelineError,
    ResourceManager,
    UnknownContainerError,
)
from nrirp.domain.policy.explanation import Explanation

log = logging.getLogger("nrirp.engine_api")

ENGINE_SERVICE = "nrirp.engine.v1.Engine"
NRI_V01_SERVICE = "nrirp.engine.v1.NriV01"
MAX_WAIT_SECONDS = 60.0
CARRIED = RuntimeFeatures(scheduling=False, io_priority=False)
"""What an ``Adjustment`` message carries of a creation's settings besides resources."""

Req = TypeVar("Req", bound=Message)
Resp = TypeVar("Resp", bound=Message)


class DecisionWriter(Protocol):
    """Applies decisions on the host (the NRI v0.1 daemon writes them into cgroups)."""

    def write(self, adjustment: Adjustment | None, updates: Sequence[Update]) -> None: ...


class V01Invoker(Protocol):
    """Handles one NRI v0.1 invocation (``nrirp.adapters.nri_v01.handler.V01Handler``)."""

    def invoke_v01(self, request_json: bytes) -> pb.NriV01Reply: ...


class NotServedError(Exception):
    """A call this engine API was composed without (UNIMPLEMENTED)."""


def _abort(context: grpc.ServicerContext, exc: Exception) -> NoReturn:
    if isinstance(exc, tr.MessageError):
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
    if isinstance(exc, OperationFailedError):
        if exc.internal:
            log.error("%s", exc)
        context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
    if isinstance(exc, PipelineError):
        context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
    if isinstance(exc, UnknownContainerError):
        context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
    if isinstance(exc, NotServedError):
        context.abort(grpc.StatusCode.UNIMPLEMENTED, str(exc))
    log.error("engine API call failed", exc_info=exc)
    context.abort(grpc.StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}")


def _pod_and_container(
    request: pb.ContainerRequest | pb.UpdateContainerRequest,
) -> tuple[Pod, Container]:
    """A request's pod and container, the container of that pod (an empty ``pod_id`` is
    the pod's): a container of another pod is a bad message, not an unknown pod."""
    pod = tr.pod_from_pb(request.pod)
    container = tr.container_from_pb(request.container, pod.id)
    if container.pod_id != pod.id:
        raise tr.MessageError(
            f"container.pod_id: {container.pod_id!r} is not the request's pod {pod.id!r}"
        )
    return pod, container


class EngineService:
    """The handlers of both services, over ``manager`` (started) and ``updates`` (the
    engine's RuntimeUpdates adapter). ``writer``, when given, applies every decision a call
    returns (the NRI v0.1 daemon's cgroup enforcement); ``registry`` (the composition's
    policy registry; default: the built-ins) loads configurations for ``Reconfigure``;
    ``explanation_document`` makes ``Explain``'s JSON document of an explanation (the
    application's ``nrirp.app.explain.explanation_document``; without it ``Explain`` is
    UNIMPLEMENTED).

    The messages carry no scheduling class or I/O priority (``engine.proto``'s
    ``Adjustment``), so the manager is told its runtime cannot carry them: they go to the
    host controller, applied to the container's tasks at ``PostStartContainer`` (its
    ``pid``), or are dropped with a notice without one, never silently."""

    def __init__(
        self,
        manager: ResourceManager,
        updates: RoutedRuntimeUpdates,
        *,
        writer: DecisionWriter | None = None,
        v01: V01Invoker | None = None,
        registry: PolicySpecs | None = None,
        explanation_document: Callable[[Explanation], Mapping[str, Any]] | None = None,
    ) -> None:
        self.manager = manager
        manager.set_runtime_features(CARRIED)
        self.explanation_document = explanation_document
        self.registry = registry
        self.updates = updates
        self.max_waiting = 3
        """``TakeUpdates`` calls that may wait at once; one more is answered at once with
        what is queued (the server's threads must stay free for other calls: the server
        sets it to one less than its threads)."""
        self._waiting = 0
        self._waiting_lock = threading.Lock()
        self.writer = writer
        self.v01 = v01

    # ------------------------------------------------------------------ registration
    def handlers(self) -> list[grpc.GenericRpcHandler]:
        engine: dict[str, grpc.RpcMethodHandler] = {
            "Synchronize": self._unary(pb.SynchronizeRequest, self.synchronize),
            "RunPodSandbox": self._unary(pb.PodRequest, self.run_pod_sandbox),
            "StopPodSandbox": self._unary(pb.PodRequest, self.stop_pod_sandbox),
            "RemovePodSandbox": self._unary(pb.PodRequest, self.remove_pod_sandbox),
            "CreateContainer": self._unary(pb.ContainerRequest, self.create_container),
            "PostCreateContainer": self._unary(pb.ContainerRequest, self.post_create_container),
            "StartContainer": self._unary(pb.ContainerRequest, self.start_container),
            "PostStartContainer": self._unary(pb.ContainerRequest, self.post_start_container),
            "UpdateContainer": self._unary(pb.UpdateContainerRequest, self.update_container),
            "PostUpdateContainer": self._unary(pb.ContainerRequest, self.post_update_container),
            "StopContainer": self._unary(pb.ContainerRequest, self.stop_container),
            "RemoveContainer": self._unary(pb.ContainerRequest, self.remove_container),
            "Reconfigure": self._unary(pb.ReconfigureRequest, self.reconfigure),
            "Describe": self._unary(pb.DescribeRequest, self.describe),
            "Explain": self._unary(pb.ExplainRequest, self.explain),
            "TakeUpdates": self._unary(pb.TakeUpdatesRequest, self.take_updates, with_context=True),
        }
        out = [grpc.method_handlers_generic_handler(ENGINE_SERVICE, engine)]
        if self.v01 is not None:
            v01 = {"Invoke": self._unary(pb.NriV01Request, self.invoke_v01)}
            out.append(grpc.method_handlers_generic_handler(NRI_V01_SERVICE, v01))
        return out

    def _unary(
        self,
        request_type: type[Req],
        call: Callable[..., Resp],
        *,
        with_context: bool = False,
    ) -> grpc.RpcMethodHandler:
        """``call(request)``, or ``call(request, context)`` ``with_context``. The request is
        decoded here, not by grpcio: one that does not decode (a string that is not UTF-8, a
        corrupt wire format) is INVALID_ARGUMENT, where grpcio answers INTERNAL."""

        def behavior(raw: bytes, context: grpc.ServicerContext) -> Resp:
            try:
                request = request_type.FromString(raw)
            except DecodeError as exc:
                name = request_type.DESCRIPTOR.full_name
                detail = str(exc).removeprefix(f"Error parsing message with type '{name}': ")
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT, f"request: cannot decode {name}: {detail}"
                )
            try:
                return call(request, context) if with_context else call(request)
            except Exception as exc:
                _abort(context, exc)

        def serialize(reply: Resp) -> bytes:
            return reply.SerializeToString()

        return grpc.unary_unary_rpc_method_handler(behavior, response_serializer=serialize)

    # ------------------------------------------------------------------ helpers
    def _updates_reply(self, run: Callable[[], Sequence[Update] | None]) -> pb.Updates:
        with self.updates.capture() as captured:
            returned = run() or ()
        updates = [*returned, *captured]
        self._write(None, updates)
        return tr.updates_to_pb(updates)

    def _write(self, adjustment: Adjustment | None, updates: Sequence[Update]) -> None:
        if self.writer is not None and (adjustment is not None or updates):
            self.writer.write(adjustment, updates)

    # ------------------------------------------------------------------ Engine
    def synchronize(self, request: pb.SynchronizeRequest) -> pb.Updates:
        pods = [tr.pod_from_pb(p) for p in request.pods]
        containers = [tr.container_from_pb(c) for c in request.containers]
        return self._updates_reply(lambda: self.manager.synchronize(pods, containers))

    def run_pod_sandbox(self, request: pb.PodRequest) -> pb.Updates:
        pod = tr.pod_from_pb(request.pod)
        return self._updates_reply(lambda: self.manager.run_pod(pod))

    def stop_pod_sandbox(self, request: pb.PodRequest) -> pb.Updates:
        pod = tr.pod_from_pb(request.pod)
        return self._updates_reply(lambda: self.manager.stop_pod(pod))

    def remove_pod_sandbox(self, request: pb.PodRequest) -> pb.Updates:
        pod = tr.pod_from_pb(request.pod)
        return self._updates_reply(lambda: self.manager.remove_pod(pod))

    def create_container(self, request: pb.ContainerRequest) -> pb.CreateContainerReply:
        pod, container = _pod_and_container(request)
        container = container.with_state(ContainerState.CREATING)
        with self.updates.capture() as captured:
            result = self.manager.create_container(pod, container)
        updates = [*result.updates, *captured]
        self._write(result.adjustment, updates)
        return pb.CreateContainerReply(
            adjustment=tr.adjustment_to_pb(result.adjustment),
            updates=[tr.update_to_pb(u) for u in updates],
        )

    def _hook(self, request: pb.ContainerRequest, hook: Callable[..., Any]) -> pb.Updates:
        pod, container = _pod_and_container(request)
        return self._updates_reply(lambda: hook(pod, container))

    def post_create_container(self, request: pb.ContainerRequest) -> pb.Updates:
        return self._hook(request, self.manager.post_create)

    def start_container(self, request: pb.ContainerRequest) -> pb.Updates:
        return self._hook(request, self.manager.start_container)

    def post_start_container(self, request: pb.ContainerRequest) -> pb.Updates:
        return self._hook(request, self.manager.post_start)

    def post_update_container(self, request: pb.ContainerRequest) -> pb.Updates:
        return self._hook(request, self.manager.post_update)

    def stop_container(self, request: pb.ContainerRequest) -> pb.Updates:
        return self._hook(request, self.manager.stop_container)

    def remove_container(self, request: pb.ContainerRequest) -> pb.Updates:
        return self._hook(request, self.manager.remove_container)

    def update_container(self, request: pb.UpdateContainerRequest) -> pb.Updates:
        pod, container = _pod_and_container(request)
        resources = tr.resources_from_pb(request.resources)
        return self._updates_reply(lambda: self.manager.update_container(pod, container, resources))

    def reconfigure(self, request: pb.ReconfigureRequest) -> pb.ReconfigureReply:
        """Its updates are not in the reply: like every reconfiguration's, they are queued
        (``TakeUpdates``; the v0.1 daemon writes them)."""
        try:
            config = load_policy_config(self.manager.policy.name, request.config, self.registry)
        except ConfigError as exc:  # the loader's one error class, whatever went wrong
            return pb.ReconfigureReply(applied=False, reason="; ".join(exc.shown_problems()))
        outcome = self.manager.reconfigure(config)
        return pb.ReconfigureReply(
            applied=outcome.applied, reason=outcome.reason, updates=outcome.updates
        )

    def describe(self, request: pb.DescribeRequest) -> pb.DescribeReply:
        return pb.DescribeReply(
            policy=self.manager.policy.name,
            description_json=json.dumps(self.manager.describe(), default=str, sort_keys=True),
            pods=[tr.pod_to_pb(p) for p in self.manager.pods()],
            containers=[tr.container_to_pb(c) for c in self.manager.containers()],
        )

    def explain(self, request: pb.ExplainRequest) -> pb.ExplainReply:
        if self.explanation_document is None:
            raise NotServedError("this engine API serves no explanations")
        if not request.container.strip():  # a bad request, not an unknown container
            raise tr.MessageError("container: no container given")
        explanation = self.manager.explain(request.container)
        document = self.explanation_document(explanation)
        return pb.ExplainReply(explanation_json=json.dumps(document, sort_keys=True))

    def take_updates(
        self, request: pb.TakeUpdatesRequest, context: grpc.ServicerContext | None = None
    ) -> pb.Updates:
        """Waits for updates while the call lasts: a client that gave up (its deadline, a
        cancellation, a closed connection) frees the server's thread within
        ``updates.GIVEN_UP_LOOK_SECONDS`` (the server has a few threads: polls left waiting
        used to hold them all and stop every other call). Beyond :attr:`max_waiting` polls
        waiting at once, a poll does not wait: it gets what is queued, maybe nothing."""
        wait = min(max(0.0, request.wait_seconds), MAX_WAIT_SECONDS)
        with self._waiting_lock:
            if wait > 0 and self._waiting >= self.max_waiting:
                wait = 0.0  # every thread but one is held by waiting polls: do not wait
            waits = wait > 0
            self._waiting += waits
        try:
            if context is None:
                return tr.updates_to_pb(self.updates.take(wait))
            active = context.is_active
            return tr.updates_to_pb(self.updates.take(wait, lambda: not active()))
        finally:
            with self._waiting_lock:
                self._waiting -= waits

    # ------------------------------------------------------------------ NriV01
    def invoke_v01(self, request: pb.NriV01Request) -> pb.NriV01Reply:
        if self.v01 is None:  # not registered then; kept for direct callers
            raise PipelineError("this engine API serves no NRI v0.1 requests")
        return self.v01.invoke_v01(request.request_json)
