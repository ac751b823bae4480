"""A fake kubelet PodResources v1 server: grpcio on a unix socket, devices on known NUMA nodes.

``FakeKubelet(socket).assign(namespace, pod, container, resource, device_ids, numa_nodes)``
records what a device plugin allocation would; ``List`` and ``Get`` answer from it (``Get`` of
an unknown pod is NOT_FOUND, as the kubelet answers). ``without_get=True`` serves only
``List``/``GetAllocatableResources``, like kubelets before ``Get``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc

from nrirp.adapters.podresources.gen import podresources_v1_pb2 as pb


class FakeKubelet:
    def __init__(self, socket_path: str, *, without_get: bool = False, delay: float = 0.0):
        self.socket_path = socket_path
        self.without_get = without_get
        self.delay = delay
        self.pods: dict[tuple[str, str], pb.PodResources] = {}
        self.calls: list[str] = []
        self._lock = threading.Lock()
        self._server: Any = None

    def assign(
        self,
        namespace: str,
        pod: str,
        container: str,
        resource: str,
        device_ids: Sequence[str],
        numa_nodes: Sequence[int],
    ) -> None:
        with self._lock:
            found = self.pods.setdefault(
                (namespace, pod), pb.PodResources(name=pod, namespace=namespace)
            )
            ctr = next((c for c in found.containers if c.name == container), None)
            if ctr is None:
                ctr = found.containers.add(name=container)
            device = ctr.devices.add(resource_name=resource, device_ids=list(device_ids))
            for node in numa_nodes:
                device.topology.nodes.add(ID=node)

    def start(self) -> FakeKubelet:
        handlers = {
            "List": grpc.unary_unary_rpc_method_handler(
                self._list,
                request_deserializer=pb.ListPodResourcesRequest.FromString,
                response_serializer=pb.ListPodResourcesResponse.SerializeToString,
            ),
            "GetAllocatableResources": grpc.unary_unary_rpc_method_handler(
                lambda _req, _ctx: pb.AllocatableResourcesResponse(),
                request_deserializer=pb.AllocatableResourcesRequest.FromString,
                response_serializer=pb.AllocatableResourcesResponse.SerializeToString,
            ),
        }
        if not self.without_get:
            handlers["Get"] = grpc.unary_unary_rpc_method_handler(
                self._get,
                request_deserializer=pb.GetPodResourcesRequest.FromString,
                response_serializer=pb.GetPodResourcesResponse.SerializeToString,
            )
        server = grpc.server(ThreadPoolExecutor(max_workers=4))
        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler("v1.PodResourcesLister", handlers)]
        )
        server.add_insecure_port(f"unix://{self.socket_path}")
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(None)
            self._server = None

    def _pause(self) -> None:
        if self.delay:
            threading.Event().wait(self.delay)

    def _list(self, _request: Any, _context: Any) -> pb.ListPodResourcesResponse:
        self.calls.append("List")
        self._pause()
        with self._lock:
            return pb.ListPodResourcesResponse(pod_resources=list(self.pods.values()))

    def _get(self, request: Any, context: Any) -> pb.GetPodResourcesResponse:
        self.calls.append("Get")
        self._pause()
        with self._lock:
            found = self.pods.get((request.pod_namespace, request.pod_name))
        if found is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"pod {request.pod_name} not found")
        return pb.GetPodResourcesResponse(pod_resources=found)
