"""NRI events without a reply to merge: the request each one is delivered with from v0.12."""

from __future__ import annotations

from collections.abc import Callable

from google.protobuf.message import Message

from nrirp.adapters.nri.gen import api_pb2

PodRequest = Callable[[api_pb2.PodSandbox], Message]
ContainerRequest = Callable[[api_pb2.PodSandbox, api_pb2.Container], Message]

POD_NOTIFICATIONS: dict[int, PodRequest] = {
    api_pb2.RUN_POD_SANDBOX: lambda pod: api_pb2.RunPodSandboxRequest(pod=pod),
    api_pb2.STOP_POD_SANDBOX: lambda pod: api_pb2.StopPodSandboxRequest(pod=pod),
    api_pb2.REMOVE_POD_SANDBOX: lambda pod: api_pb2.RemovePodSandboxRequest(pod=pod),
    api_pb2.POST_UPDATE_POD_SANDBOX: lambda pod: api_pb2.PostUpdatePodSandboxRequest(pod=pod),
}
"""Pod events without a reply to merge: StateChange before v0.12, own RPCs from v0.12."""

CONTAINER_NOTIFICATIONS: dict[int, ContainerRequest] = {
    api_pb2.POST_CREATE_CONTAINER: lambda pod, ctr: api_pb2.PostCreateContainerRequest(
        pod=pod, container=ctr
    ),
    api_pb2.START_CONTAINER: lambda pod, ctr: api_pb2.StartContainerRequest(pod=pod, container=ctr),
    api_pb2.POST_START_CONTAINER: lambda pod, ctr: api_pb2.PostStartContainerRequest(
        pod=pod, container=ctr
    ),
    api_pb2.POST_UPDATE_CONTAINER: lambda pod, ctr: api_pb2.PostUpdateContainerRequest(
        pod=pod, container=ctr
    ),
    api_pb2.REMOVE_CONTAINER: lambda pod, ctr: api_pb2.RemoveContainerRequest(
        pod=pod, container=ctr
    ),
}
"""Container events without a reply to merge."""
