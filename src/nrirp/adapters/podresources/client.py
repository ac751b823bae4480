"""A client of the kubelet's PodResources API (v1) over its unix socket, with grpcio.

The messages are generated from ``proto/podresources_v1.proto`` (``gen/``); the three calls
are bound by their full method names on a plain channel, so no untyped generated stub module
is needed. Every call has a deadline: the kubelet is local, but a stuck one must not hold a
container creation for long.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nrirp.adapters.podresources.gen import podresources_v1_pb2 as pb

DEFAULT_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"
DEFAULT_TIMEOUT = 0.25
SERVICE = "/v1.PodResourcesLister/"

if TYPE_CHECKING:
    import grpc


class PodResourcesError(Exception):
    """The kubelet could not be asked (socket missing, timeout, error status)."""


class PodResourcesClient:
    """``get(namespace, pod)`` and ``list()`` against the kubelet at ``socket_path``."""

    def __init__(self, socket_path: str = DEFAULT_SOCKET, *, timeout: float = DEFAULT_TIMEOUT):
        self.socket_path = socket_path
        self.timeout = timeout
        self._lock = threading.Lock()
        self._channel: grpc.Channel | None = None  # created on first use
        self._calls: dict[str, Any] = {}
        self._get_unimplemented = False

    def _call(self, method: str, request_type: Any, response_type: Any) -> Any:
        import grpc  # on first use: the daemon does not load grpcio unless hints are asked for

        with self._lock:
            if self._channel is None:
                self._channel = grpc.insecure_channel(f"unix://{self.socket_path}")
                self._calls.clear()
            call = self._calls.get(method)
            if call is None:
                call = self._channel.unary_unary(
                    SERVICE + method,
                    request_serializer=request_type.SerializeToString,
                    response_deserializer=response_type.FromString,
                )
                self._calls[method] = call
            return call

    def list(self) -> Sequence[pb.PodResources]:
        call = self._call("List", pb.ListPodResourcesRequest, pb.ListPodResourcesResponse)
        response: pb.ListPodResourcesResponse = self._invoke(call, pb.ListPodResourcesRequest())
        return list(response.pod_resources)

    def get(self, namespace: str, pod: str) -> pb.PodResources | None:
        """One pod's resources (``Get``; ``List`` on kubelets without ``Get``)."""
        if not self._get_unimplemented:
            call = self._call("Get", pb.GetPodResourcesRequest, pb.GetPodResourcesResponse)
            request = pb.GetPodResourcesRequest(pod_name=pod, pod_namespace=namespace)
            try:
                response: pb.GetPodResourcesResponse = self._invoke(call, request)
                return response.pod_resources if response.HasField("pod_resources") else None
            except _Unimplemented:
                self._get_unimplemented = True
        for found in self.list():
            if found.namespace == namespace and found.name == pod:
                return found
        return None

    def _invoke(self, call: Any, request: Any) -> Any:
        import grpc

        try:
            return call(request, timeout=self.timeout)
        except grpc.RpcError as exc:
            code = exc.code()
            if code == grpc.StatusCode.UNIMPLEMENTED:
                raise _Unimplemented() from exc
            if code == grpc.StatusCode.NOT_FOUND:
                return type_default(call)
            raise PodResourcesError(
                f"kubelet pod-resources {self.socket_path}: {code.name}: {exc.details()}"
            ) from exc

    def close(self) -> None:
        with self._lock:
            if self._channel is not None:
                self._channel.close()
                self._channel = None


class _Unimplemented(Exception):
    pass


def type_default(_call: Any) -> Any:
    """A kubelet answers ``Get`` for an unknown pod with NOT_FOUND: no resources."""
    return pb.GetPodResourcesResponse()
