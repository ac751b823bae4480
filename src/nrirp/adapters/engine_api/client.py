"""``EngineClient``: the engine API from Python, with the domain's values in and out.

The same calls as ``nrirp.app.embed.Engine`` (docs/embedding.md), made to an engine served by
``nrirp run --engine-api`` (or ``--nri-v01``) on a unix socket. A refusal raises
:class:`EngineCallError` with the gRPC status (FAILED_PRECONDITION) and its message (the
operation, the container and the policy's reason).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import TracebackType
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from nrirp.adapters.engine_api import translate as tr
from nrirp.adapters.engine_api.gen import engine_pb2 as pb
from nrirp.adapters.engine_api.service import ENGINE_SERVICE, NRI_V01_SERVICE
from nrirp.domain.model import Container, LinuxResources, Pod, Update
from nrirp.domain.pipeline import CreateResult, ReconfigureOutcome

Req = TypeVar("Req", bound=Message)
Resp = TypeVar("Resp", bound=Message)


class EngineCallError(Exception):
    """A call failed: ``code`` is the gRPC status, ``reason`` the engine's message."""

    def __init__(self, method: str, code: grpc.StatusCode, reason: str) -> None:
        super().__init__(f"{method}: {code.name}: {reason}")
        self.method = method
        self.code = code
        self.reason = reason


class EngineClient:
    """A client of the engine API at ``socket_path`` (one channel, thread-safe)."""

    def __init__(self, socket_path: str, timeout: float = 10.0) -> None:
        self.socket_path = socket_path
        self.timeout = timeout
        self._channel = grpc.insecure_channel(f"unix:{socket_path}")

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Wait until the server accepts connections (raises ``TimeoutError``)."""
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise TimeoutError(f"no engine API at {self.socket_path} after {timeout}s") from None

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> EngineClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _call(
        self,
        method: str,
        request: Req,
        reply_type: type[Resp],
        service: str = ENGINE_SERVICE,
        timeout: float | None = None,
    ) -> Resp:
        def serialize(message: Req) -> bytes:
            return message.SerializeToString()

        stub: grpc.UnaryUnaryMultiCallable[Req, Resp] = self._channel.unary_unary(
            f"/{service}/{method}",
            request_serializer=serialize,
            response_deserializer=reply_type.FromString,
        )
        try:
            return stub(request, timeout=timeout or self.timeout)
        except grpc.RpcError as exc:
            raise EngineCallError(method, exc.code(), exc.details() or "") from None

    def _updates(self, method: str, request: Message) -> list[Update]:
        reply = self._call(method, request, pb.Updates)
        return [tr.update_from_pb(u) for u in reply.updates]

    @staticmethod
    def _container_request(pod: Pod, container: Container) -> pb.ContainerRequest:
        return pb.ContainerRequest(pod=tr.pod_to_pb(pod), container=tr.container_to_pb(container))

    # ------------------------------------------------------------------ hooks
    def synchronize(self, pods: Sequence[Pod], containers: Sequence[Container]) -> list[Update]:
        request = pb.SynchronizeRequest(
            pods=[tr.pod_to_pb(p) for p in pods],
            containers=[tr.container_to_pb(c) for c in containers],
        )
        return self._updates("Synchronize", request)

    def run_pod_sandbox(self, pod: Pod) -> list[Update]:
        return self._updates("RunPodSandbox", pb.PodRequest(pod=tr.pod_to_pb(pod)))

    def stop_pod_sandbox(self, pod: Pod) -> list[Update]:
        return self._updates("StopPodSandbox", pb.PodRequest(pod=tr.pod_to_pb(pod)))

    def remove_pod_sandbox(self, pod: Pod) -> list[Update]:
        return self._updates("RemovePodSandbox", pb.PodRequest(pod=tr.pod_to_pb(pod)))

    def create_container(self, pod: Pod, container: Container) -> CreateResult:
        reply = self._call(
            "CreateContainer", self._container_request(pod, container), pb.CreateContainerReply
        )
        return CreateResult(
            tr.adjustment_from_pb(reply.adjustment),
            tuple(tr.update_from_pb(u) for u in reply.updates),
        )

    def post_create_container(self, pod: Pod, container: Container) -> list[Update]:
        return self._updates("PostCreateContainer", self._container_request(pod, container))

    def start_container(self, pod: Pod, container: Container) -> list[Update]:
        return self._updates("StartContainer", self._container_request(pod, container))

    def post_start_container(self, pod: Pod, container: Container) -> list[Update]:
        return self._updates("PostStartContainer", self._container_request(pod, container))

    def update_container(
        self, pod: Pod, container: Container, resources: LinuxResources
    ) -> list[Update]:
        request = pb.UpdateContainerRequest(
            pod=tr.pod_to_pb(pod),
            container=tr.container_to_pb(container),
            resources=tr.resources_to_pb(resources),
        )
        return self._updates("UpdateContainer", request)

    def post_update_container(self, pod: Pod, container: Container) -> list[Update]:
        return self._updates("PostUpdateContainer", self._container_request(pod, container))

    def stop_container(self, pod: Pod, container: Container) -> list[Update]:
        return self._updates("StopContainer", self._container_request(pod, container))

    def remove_container(self, pod: Pod, container: Container) -> list[Update]:
        return self._updates("RemoveContainer", self._container_request(pod, container))

    # ------------------------------------------------------------------ control, queries
    def reconfigure(self, config: str) -> ReconfigureOutcome:
        """Apply a configuration (YAML or JSON text, bare spec or custom resource)."""
        reply = self._call("Reconfigure", pb.ReconfigureRequest(config=config), pb.ReconfigureReply)
        return ReconfigureOutcome(reply.applied, reply.reason, reply.updates)

    def describe(self) -> tuple[str, Any, list[Pod], list[Container]]:
        """The policy's name, its description (parsed JSON), the pods and the containers."""
        reply = self._call("Describe", pb.DescribeRequest(), pb.DescribeReply)
        return (
            reply.policy,
            json.loads(reply.description_json or "null"),
            [tr.pod_from_pb(p, check=False) for p in reply.pods],
            [tr.container_from_pb(c, check=False) for c in reply.containers],
        )

    def explain(self, container: str) -> dict[str, Any]:
        """The policy's explanation of ``container`` (an id, ``namespace/pod/name``,
        ``pod/name`` or a unique name) as docs/explain.md's document; an unknown one raises
        :class:`EngineCallError` with NOT_FOUND."""
        reply = self._call("Explain", pb.ExplainRequest(container=container), pb.ExplainReply)
        document: dict[str, Any] = json.loads(reply.explanation_json)
        return document

    def take_updates(self, wait: float = 0.0) -> list[Update]:
        """Updates the engine made outside any call, waiting up to ``wait`` s for some."""
        reply = self._call(
            "TakeUpdates",
            pb.TakeUpdatesRequest(wait_seconds=wait),
            pb.Updates,
            timeout=wait + self.timeout,
        )
        return [tr.update_from_pb(u) for u in reply.updates]

    def invoke_nri_v01(self, request_json: bytes) -> pb.NriV01Reply:
        """One NRI v0.1 invocation (the daemon must run with ``--nri-v01``)."""
        return self._call(
            "Invoke", pb.NriV01Request(request_json=request_json), pb.NriV01Reply, NRI_V01_SERVICE
        )
