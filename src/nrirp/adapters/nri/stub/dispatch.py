"""The Plugin ttRPC service of one connection: payload -> message -> plugin handler -> reply.

Serves every Plugin method of the v0.12 API: the dedicated per-event RPCs (NRI >= 0.12 runtimes)
and ``StateChange`` (older runtimes, and newer ones after a fallback). A method the plugin does not
implement answers an empty response; a method unknown to the API is left to the transport, which
answers UNIMPLEMENTED; a payload that does not parse answers INVALID_ARGUMENT. Synchronize chunks
(``more=true``) are merged and handed to the plugin once. Each handler runs inside a
:class:`~nrirp.adapters.nri.stub.scope.HandlerScope`.

This is the per-event hot path: parse, dispatch, serialize, nothing else. Replies are encoded by
concatenating serialized sub-messages with their field keys, which is what protobuf does, without
copying the plugin's messages into a response object first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar

from google.protobuf.message import DecodeError
from google.protobuf.message import Message as ProtoMessage

from nrirp.adapters.nri.api import EventMask
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.stub.scope import CURRENT_SCOPE, HandlerScope
from nrirp.adapters.nri.stub.wire import WireMessages, split_synchronize
from nrirp.adapters.nri.transport import CallContext, Handler, StatusCode, TtrpcError

M = TypeVar("M", bound=ProtoMessage)
Configurator = Callable[[api_pb2.ConfigureRequest], Awaitable[EventMask]]
"""Applies a ConfigureRequest (stub state, plugin ``configure``) and returns the mask to send."""


class _AnyHandler(Protocol):
    def __call__(self, *args: Any) -> Awaitable[Any]: ...


_ContainerUpdate = api_pb2.ContainerUpdate
_ContainerAdjustment = api_pb2.ContainerAdjustment
_CreateContainerResponse = api_pb2.CreateContainerResponse

_KEY_1 = b"\x0a"  # field 1, length-delimited
_KEY_2 = b"\x12"  # field 2, length-delimited
_SYNC_MORE = b"\x10\x01"  # SynchronizeResponse{more: true}
_REJECT = b"\x08\x01"  # ValidateContainerAdjustmentResponse{reject: true}
_CONFIGURE_EVENTS = b"\x10"  # ConfigureResponse field 2 (events), varint

MAX_SYNC_BYTES = 64 << 20
"""The most request bytes one sync may keep for its ``more=true`` chunks (16 full messages):
every chunk's payload is held until the last one arrives, so without a bound a runtime that
keeps sending ``more=true`` grows the daemon without end."""
MAX_SYNC_OBJECTS = 100_000
"""The most pods plus containers one sync (every chunk, the last included) may report. A
4 MiB message can list 200,000 tiny objects, each of which costs the plugin far more than its
wire form (100,000 pods and containers in one message took 7.5 s and 550 MiB)."""


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _embed(key: bytes, data: bytes) -> bytes:
    return key + _varint(len(data)) + data


def encode_updates(key: bytes, updates: Iterable[api_pb2.ContainerUpdate] | None) -> bytes:
    """The repeated ContainerUpdate field ``key`` holding ``updates`` (b"" for None/empty)."""
    if updates is None:
        return b""
    parts = []
    for update in updates:
        if type(update) is not _ContainerUpdate:
            raise TypeError(
                f"handler returned {type(update).__name__} among its updates, "
                "expected api_pb2.ContainerUpdate"
            )
        parts.append(_embed(key, update.SerializeToString()))
    return b"".join(parts)


def encode_create_result(result: object) -> bytes:
    """A CreateContainerResponse from what ``create_container`` returned."""
    if result is None:
        return b""
    if type(result) is _ContainerAdjustment:
        return _embed(_KEY_1, result.SerializeToString())
    if type(result) is _CreateContainerResponse:
        return result.SerializeToString()
    if type(result) is tuple and len(result) == 2:
        adjust, updates = result
        if adjust is not None and type(adjust) is not _ContainerAdjustment:
            raise TypeError(
                f"create_container returned ({type(adjust).__name__}, ...), "
                "expected (api_pb2.ContainerAdjustment | None, updates)"
            )
        head = b"" if adjust is None else _embed(_KEY_1, adjust.SerializeToString())
        return head + encode_updates(_KEY_2, updates)
    raise TypeError(
        f"create_container returned {type(result).__name__}: expected a ContainerAdjustment, "
        "(adjustment, updates), a CreateContainerResponse or None"
    )


def invalid_argument(message_type: type[ProtoMessage], error: Exception) -> TtrpcError:
    """The INVALID_ARGUMENT status for a request that does not parse."""
    return TtrpcError(StatusCode.INVALID_ARGUMENT, f"invalid {message_type.__name__}: {error}")


def parse(message_type: type[M], payload: bytes) -> M:
    """Decode a request; INVALID_ARGUMENT if it does not parse."""
    try:
        return message_type.FromString(payload)
    except DecodeError as exc:
        raise invalid_argument(message_type, exc) from None


async def scoped(handler: _AnyHandler, *args: Any) -> Any:
    """Run a plugin handler inside a fresh handler scope."""
    scope = HandlerScope()
    token = CURRENT_SCOPE.set(scope)
    try:
        return await handler(*args)
    finally:
        CURRENT_SCOPE.reset(token)
        scope.finish()


class Dispatcher:
    """The Plugin service of one connection (one instance per session: sync chunks are per
    connection)."""

    def __init__(self, methods: Mapping[str, object], configurator: Configurator) -> None:
        self._handlers: dict[str, _AnyHandler] = {
            name: method  # type: ignore[misc]
            for name, method in methods.items()
        }
        self._configurator = configurator
        self._sync_chunks: list[tuple[list[memoryview], list[memoryview]]] = []
        self._sync_bytes = 0
        self._sync_objects = 0
        self._state_change = self._state_change_table()

    def methods(self) -> dict[str, Handler]:
        """The ``{method: handler}`` table to serve as ``nri.pkg.api.v1alpha1.Plugin``."""
        h = self._handlers.get
        pod = self._pod_event
        container = self._container_event
        return {
            "Configure": self._configure,
            "Synchronize": self._synchronize,
            "Shutdown": self._shutdown,
            "RunPodSandbox": pod(h("run_pod_sandbox"), api_pb2.RunPodSandboxRequest),
            "UpdatePodSandbox": self._update_pod_sandbox(h("update_pod_sandbox")),
            "PostUpdatePodSandbox": pod(
                h("post_update_pod_sandbox"), api_pb2.PostUpdatePodSandboxRequest
            ),
            "StopPodSandbox": pod(h("stop_pod_sandbox"), api_pb2.StopPodSandboxRequest),
            "RemovePodSandbox": pod(h("remove_pod_sandbox"), api_pb2.RemovePodSandboxRequest),
            "CreateContainer": self._create_container(h("create_container")),
            "PostCreateContainer": container(
                h("post_create_container"), api_pb2.PostCreateContainerRequest
            ),
            "StartContainer": container(h("start_container"), api_pb2.StartContainerRequest),
            "PostStartContainer": container(
                h("post_start_container"), api_pb2.PostStartContainerRequest
            ),
            "UpdateContainer": self._update_container(h("update_container")),
            "PostUpdateContainer": container(
                h("post_update_container"), api_pb2.PostUpdateContainerRequest
            ),
            "StopContainer": self._stop_container(h("stop_container")),
            "RemoveContainer": container(h("remove_container"), api_pb2.RemoveContainerRequest),
            "ValidateContainerAdjustment": self._validate(h("validate_container_adjustment")),
            "StateChange": self._state_change_event,
        }

    # ------------------------------------------------------------------ setup requests

    async def _configure(self, payload: bytes, _ctx: CallContext) -> bytes:
        request = parse(api_pb2.ConfigureRequest, payload)
        events = await self._configurator(request)
        return _CONFIGURE_EVENTS + _varint(int(events))

    async def _synchronize(self, payload: bytes, _ctx: CallContext) -> bytes:
        try:
            pods, containers, more = split_synchronize(payload)
        except DecodeError as exc:
            raise invalid_argument(api_pb2.SynchronizeRequest, exc) from None
        objects = self._sync_objects + len(pods) + len(containers)
        size = self._sync_bytes + len(payload)
        if objects > MAX_SYNC_OBJECTS or (more and size > MAX_SYNC_BYTES):
            self._drop_sync()
            limit = (
                f"more than {MAX_SYNC_OBJECTS} pods and containers"
                if objects > MAX_SYNC_OBJECTS
                else f"more than {MAX_SYNC_BYTES} bytes of more=true chunks"
            )
            # not RESOURCE_EXHAUSTED: a runtime reads that as "message too big" and resends
            # the same chunk split smaller, after the chunks before it were dropped here
            raise TtrpcError(StatusCode.OUT_OF_RANGE, f"synchronize refused: {limit} in one sync")
        if more:
            if pods or containers:  # an empty chunk adds nothing, and is not kept
                self._sync_chunks.append((pods, containers))
                self._sync_bytes, self._sync_objects = size, objects
            return _SYNC_MORE
        chunks = self._sync_chunks
        self._drop_sync()
        chunks.append((pods, containers))
        handler = self._handlers.get("synchronize")
        if handler is None:
            return b""
        # decoded one at a time as the plugin reads them (wire.py): the plugin makes its own
        # values from each, and never holds every message decoded at once
        all_pods = WireMessages(api_pb2.PodSandbox, [p for chunk in chunks for p in chunk[0]])
        all_containers = WireMessages(api_pb2.Container, [c for chunk in chunks for c in chunk[1]])
        return encode_updates(_KEY_1, await scoped(handler, all_pods, all_containers))

    def _drop_sync(self) -> None:
        self._sync_chunks = []
        self._sync_bytes = self._sync_objects = 0

    async def _shutdown(self, payload: bytes, _ctx: CallContext) -> bytes:
        parse(api_pb2.Empty, payload)
        handler = self._handlers.get("shutdown")
        if handler is not None:
            await scoped(handler)
        return b""

    # ------------------------------------------------------------------ events

    @staticmethod
    def _pod_event(handler: _AnyHandler | None, request_type: type[Any]) -> Handler:
        from_string = request_type.FromString

        async def serve(payload: bytes, _ctx: CallContext) -> bytes:
            try:
                request = from_string(payload)
            except DecodeError as exc:
                raise invalid_argument(request_type, exc) from None
            if handler is not None:
                await scoped(handler, request.pod)
            return b""

        return serve

    @staticmethod
    def _container_event(handler: _AnyHandler | None, request_type: type[Any]) -> Handler:
        from_string = request_type.FromString

        async def serve(payload: bytes, _ctx: CallContext) -> bytes:
            try:
                request = from_string(payload)
            except DecodeError as exc:
                raise invalid_argument(request_type, exc) from None
            if handler is not None:
                await scoped(handler, request.pod, request.container)
            return b""

        return serve

    @staticmethod
    def _create_container(handler: _AnyHandler | None) -> Handler:
        from_string = api_pb2.CreateContainerRequest.FromString

        async def serve(payload: bytes, _ctx: CallContext) -> bytes:
            try:
                request = from_string(payload)
            except DecodeError as exc:
                raise invalid_argument(api_pb2.CreateContainerRequest, exc) from None
            if handler is None:
                return b""
            scope = HandlerScope()
            token = CURRENT_SCOPE.set(scope)
            try:
                result = await handler(request.pod, request.container)
            finally:
                CURRENT_SCOPE.reset(token)
                scope.finish()
            return encode_create_result(result)

        return serve

    @staticmethod
    def _update_container(handler: _AnyHandler | None) -> Handler:
        async def serve(payload: bytes, _ctx: CallContext) -> bytes:
            request = parse(api_pb2.UpdateContainerRequest, payload)
            if handler is None:
                return b""
            updates = await scoped(handler, request.pod, request.container, request.linux_resources)
            return encode_updates(_KEY_1, updates)

        return serve

    @staticmethod
    def _stop_container(handler: _AnyHandler | None) -> Handler:
        async def serve(payload: bytes, _ctx: CallContext) -> bytes:
            request = parse(api_pb2.StopContainerRequest, payload)
            if handler is None:
                return b""
            return encode_updates(_KEY_1, await scoped(handler, request.pod, request.container))

        return serve

    @staticmethod
    def _update_pod_sandbox(handler: _AnyHandler | None) -> Handler:
        async def serve(payload: bytes, _ctx: CallContext) -> bytes:
            request = parse(api_pb2.UpdatePodSandboxRequest, payload)
            if handler is not None:
                await scoped(
                    handler, request.pod, request.overhead_linux_resources, request.linux_resources
                )
            return b""

        return serve

    @staticmethod
    def _validate(handler: _AnyHandler | None) -> Handler:
        async def serve(payload: bytes, _ctx: CallContext) -> bytes:
            request = parse(api_pb2.ValidateContainerAdjustmentRequest, payload)
            if handler is None:
                return b""
            try:
                await scoped(handler, request)
            except Exception as exc:
                reason = str(exc) or type(exc).__name__
                return _REJECT + _embed(_KEY_2, reason.encode())
            return b""

        return serve

    # ------------------------------------------------------------------ StateChange

    def _state_change_table(
        self,
    ) -> dict[int, Callable[[api_pb2.StateChangeEvent], Awaitable[Any]]]:
        table: dict[int, Callable[[api_pb2.StateChangeEvent], Awaitable[Any]]] = {}
        pod_events = {
            api_pb2.RUN_POD_SANDBOX: "run_pod_sandbox",
            api_pb2.POST_UPDATE_POD_SANDBOX: "post_update_pod_sandbox",
            api_pb2.STOP_POD_SANDBOX: "stop_pod_sandbox",
            api_pb2.REMOVE_POD_SANDBOX: "remove_pod_sandbox",
        }
        container_events = {
            api_pb2.POST_CREATE_CONTAINER: "post_create_container",
            api_pb2.START_CONTAINER: "start_container",
            api_pb2.POST_START_CONTAINER: "post_start_container",
            api_pb2.POST_UPDATE_CONTAINER: "post_update_container",
            api_pb2.REMOVE_CONTAINER: "remove_container",
        }
        for event, name in pod_events.items():
            pod_handler = self._handlers.get(name)
            if pod_handler is not None:
                table[event] = _pod_caller(pod_handler)
        for event, name in container_events.items():
            container_handler = self._handlers.get(name)
            if container_handler is not None:
                table[event] = _container_caller(container_handler)
        return table

    async def _state_change_event(self, payload: bytes, _ctx: CallContext) -> bytes:
        event = parse(api_pb2.StateChangeEvent, payload)
        call = self._state_change.get(event.event)
        if call is not None:
            await call(event)
        return b""


def _pod_caller(handler: _AnyHandler) -> Callable[[api_pb2.StateChangeEvent], Awaitable[Any]]:
    def call(event: api_pb2.StateChangeEvent) -> Awaitable[Any]:
        return scoped(handler, event.pod)

    return call


def _container_caller(
    handler: _AnyHandler,
) -> Callable[[api_pb2.StateChangeEvent], Awaitable[Any]]:
    def call(event: api_pb2.StateChangeEvent) -> Awaitable[Any]:
        return scoped(handler, event.pod, event.container)

    return call
