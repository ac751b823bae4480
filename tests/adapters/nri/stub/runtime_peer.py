"""A scripted NRI runtime for the stub tests, built on the transport alone.

It serves the Runtime service on connection 2 (RegisterPlugin, UpdateContainers) and calls the
Plugin service on connection 1, step by step as each test dictates, so that odd runtimes can be
played precisely: old NRI versions, StateChange-only delivery, chunked sync, a runtime that holds
its lock while an event is in flight (as containerd does), one that vanishes.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from google.protobuf.message import Message

from nrirp.adapters.nri.api import PLUGIN_SERVICE, RUNTIME_SERVICE
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.transport import (
    PLUGIN_SERVICE_CONN,
    RUNTIME_SERVICE_CONN,
    CallContext,
    Listener,
    Session,
    StatusCode,
    TtrpcError,
)

M = TypeVar("M", bound=Message)

TIMEOUT = 10.0


def pod(name: str = "pod0", namespace: str = "default", uid: str = "", **kw: Any) -> Any:
    return api_pb2.PodSandbox(
        id=f"sandbox-{name}", name=name, namespace=namespace, uid=uid or f"uid-{name}", **kw
    )


def container(name: str = "ctr0", pod_name: str = "pod0", **kw: Any) -> Any:
    return api_pb2.Container(
        id=f"{pod_name}-{name}-id", pod_sandbox_id=f"sandbox-{pod_name}", name=name, **kw
    )


class RuntimePeer:
    """The runtime end of one plugin connection."""

    def __init__(
        self,
        session: Session,
        *,
        register_error: TtrpcError | None = None,
        configure_in_register: dict[str, Any] | None = None,
        hold_lock: bool = True,
        fail_updates: Callable[[api_pb2.ContainerUpdate], bool] = lambda _u: False,
    ) -> None:
        self.session = session
        self.register_error = register_error
        self.configure_in_register = configure_in_register
        self.hold_lock = hold_lock
        self.fail_updates = fail_updates
        self.lock = asyncio.Lock()
        self.registration: asyncio.Future[api_pb2.RegisterPluginRequest] = (
            asyncio.get_running_loop().create_future()
        )
        self.early_configure: asyncio.Future[api_pb2.ConfigureResponse] | None = None
        self.update_requests: list[api_pb2.UpdateContainersRequest] = []
        self.update_arrived = asyncio.Event()
        self.log: list[str] = []  # "call X", "reply X", "update" in the order seen here
        session.open(RUNTIME_SERVICE_CONN).serve(
            RUNTIME_SERVICE,
            {"RegisterPlugin": self._register, "UpdateContainers": self._update_containers},
        )
        self.plugin = session.open(PLUGIN_SERVICE_CONN)

    # ------------------------------------------------------------------ Runtime service

    async def _register(self, payload: bytes, _ctx: CallContext) -> bytes:
        request = api_pb2.RegisterPluginRequest.FromString(payload)
        if not self.registration.done():
            self.registration.set_result(request)
        if self.register_error is not None:
            raise self.register_error
        if self.configure_in_register is not None:
            # containerd signals registration before it writes this reply, so Configure may
            # reach the plugin first: play that ordering to the end.
            self.early_configure = asyncio.ensure_future(
                self.configure(**self.configure_in_register)
            )
            await asyncio.wait([self.early_configure])
        return b""

    async def _update_containers(self, payload: bytes, _ctx: CallContext) -> bytes:
        request = api_pb2.UpdateContainersRequest.FromString(payload)
        # containerd's updateFromPlugin takes the same lock its event dispatch holds.
        async with self.lock:
            self.log.append("update")
            self.update_requests.append(request)
            self.update_arrived.set()
            failed = [u for u in request.update if self.fail_updates(u)]
        return api_pb2.UpdateContainersResponse(failed=failed).SerializeToString()

    # ------------------------------------------------------------------ Plugin calls

    async def call(
        self,
        method: str,
        request: Message | bytes,
        response_type: type[M],
        timeout: float | None = 2.0,
    ) -> M:
        payload = request if isinstance(request, bytes) else request.SerializeToString()
        if self.hold_lock:
            async with self.lock:
                reply = await self._call(method, payload, timeout)
        else:
            reply = await self._call(method, payload, timeout)
        return response_type.FromString(reply)

    async def _call(self, method: str, payload: bytes, timeout: float | None) -> bytes:
        self.log.append(f"call {method}")
        reply = await self.plugin.call(PLUGIN_SERVICE, method, payload, timeout=timeout)
        self.log.append(f"reply {method}")
        return reply

    async def raw_call(self, method: str, payload: bytes, timeout: float = 2.0) -> bytes:
        return await self.plugin.call(PLUGIN_SERVICE, method, payload, timeout=timeout)

    async def configure(
        self,
        *,
        runtime_name: str = "containerd",
        runtime_version: str = "v2.3.0",
        nri_version: str = "v0.12.0",
        config: str = "",
        registration_timeout_ms: int = 0,
        request_timeout_ms: int = 0,
    ) -> api_pb2.ConfigureResponse:
        request = api_pb2.ConfigureRequest(
            config=config,
            runtime_name=runtime_name,
            runtime_version=runtime_version,
            registration_timeout=registration_timeout_ms,
            request_timeout=request_timeout_ms,
            NRI_version=nri_version,
        )
        return await self.call("Configure", request, api_pb2.ConfigureResponse)

    async def synchronize(
        self,
        pods: Sequence[api_pb2.PodSandbox] = (),
        containers: Sequence[api_pb2.Container] = (),
        chunk: int = 0,
    ) -> tuple[api_pb2.SynchronizeResponse, list[api_pb2.SynchronizeResponse]]:
        """Synchronize like NRI >= 0.7 (``chunk`` objects per message, 0 = one message).

        Returns the final reply and the replies to the non-final chunks.
        """
        if not chunk:
            request = api_pb2.SynchronizeRequest(pods=pods, containers=containers)
            return await self.call("Synchronize", request, api_pb2.SynchronizeResponse), []
        partial = []
        total = max(len(pods), len(containers))
        starts = list(range(0, max(total, 1), chunk))
        for number, start in enumerate(starts):
            request = api_pb2.SynchronizeRequest(
                pods=pods[start : start + chunk],
                containers=containers[start : start + chunk],
                more=number < len(starts) - 1,
            )
            reply = await self.call("Synchronize", request, api_pb2.SynchronizeResponse)
            if request.more:
                partial.append(reply)
            else:
                return reply, partial
        raise AssertionError("unreachable")

    async def handshake(self, **configure: Any) -> api_pb2.ConfigureResponse:
        """Wait for registration, configure (unless done during registration), empty sync."""
        await asyncio.wait_for(self.registration, TIMEOUT)
        if self.early_configure is not None:
            response = await self.early_configure
        else:
            response = await self.configure(**configure)
        await self.synchronize()
        return response

    async def state_change(
        self, event: int, pod: Any, container: Any | None = None
    ) -> api_pb2.Empty:
        message = api_pb2.StateChangeEvent(event=event, pod=pod)
        if container is not None:
            message.container.CopyFrom(container)
        return await self.call("StateChange", message, api_pb2.Empty)

    async def expect_status(self, method: str, payload: bytes) -> TtrpcError:
        try:
            await self.raw_call(method, payload)
        except TtrpcError as exc:
            return exc
        raise AssertionError(f"{method} succeeded, expected an error status")

    def close(self) -> None:
        self.session.close()


async def socketpair_runtime(**options: Any) -> tuple[RuntimePeer, socket.socket]:
    """A runtime peer on one end of a socketpair; returns it and the plugin's end."""
    runtime_end, plugin_end = socket.socketpair()
    session = Session()
    peer = RuntimePeer(session, **options)
    await session.attach(runtime_end)
    return peer, plugin_end


class RuntimeServer:
    """A runtime listening on a unix socket path: each plugin connection becomes a peer."""

    def __init__(self, path: str | os.PathLike[str], **options: Any) -> None:
        self.path = os.fspath(path)
        self.options = options
        self.peers: asyncio.Queue[RuntimePeer] = asyncio.Queue()
        self.listener: Listener | None = None

    async def start(self) -> RuntimeServer:
        def setup(session: Session) -> None:
            self.peers.put_nowait(RuntimePeer(session, **self.options))

        self.listener = await Listener.start(self.path, setup)
        return self

    async def next_peer(self, timeout: float = 5.0) -> RuntimePeer:
        return await asyncio.wait_for(self.peers.get(), timeout)

    async def stop(self) -> None:
        if self.listener is not None:
            self.listener.close()
            await self.listener.wait_closed()
            self.listener = None


UNIMPLEMENTED = StatusCode.UNIMPLEMENTED
INVALID_ARGUMENT = StatusCode.INVALID_ARGUMENT
