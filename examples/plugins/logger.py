"""Example plugin: log one line per NRI event received, subscribing to all of them.

``python examples/plugins/logger.py --socket PATH [--name NAME] [--index NN]
[--events LIST] [--log-file FILE]``

Each line names the event, the pod (namespace/name) and, for container events, the container
name and id. ``--events`` narrows the subscription (Go event names or snake case, comma
separated; ``all``, ``pod``, ``container`` groups); events the runtime's NRI level cannot deliver
are dropped from the subscription by the stub.

Like every example plugin it runs as an external plugin (``--socket``) or pre-launched by the
runtime (an ``NN-name`` executable in its plugin directory that execs it; the socket is fd 3),
from its file or, in a checkout, as ``python -m examples.plugins.logger``. See
``docs/nri-plugins.md``.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Sequence
from typing import Any

from nrirp.adapters.nri.api import EventMask, parse_event_mask
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.stub import Plugin, Stub
from nrirp.adapters.nri.stub.cli import base_parser, run, setup_logging

log = logging.getLogger("nrirp.examples.logger")


class EventLogger(Plugin):
    """Implements every handler; each logs one line and changes nothing.

    Lines are handed to ``logging`` on the next event-loop iteration, after the stub has written
    the reply, so formatting and writing them costs the runtime no latency.
    """

    def __init__(self, events: EventMask | None = None) -> None:
        self.events = events
        self._pending: list[tuple[Any, ...]] = []

    def _info(self, *args: Any) -> None:
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(args)

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for args in pending:
            log.info(*args)

    def _pod(self, event: str, pod: api_pb2.PodSandbox) -> None:
        self._info("%s pod=%s/%s", event, pod.namespace, pod.name)

    def _container(self, event: str, pod: api_pb2.PodSandbox, ctr: api_pb2.Container) -> None:
        self._info(
            "%s pod=%s/%s container=%s id=%s", event, pod.namespace, pod.name, ctr.name, ctr.id
        )

    async def configure(self, request: api_pb2.ConfigureRequest) -> EventMask | None:
        self._info(
            "Configure runtime=%s version=%s nri=%s config=%d bytes",
            request.runtime_name,
            request.runtime_version,
            request.NRI_version or "-",
            len(request.config),
        )
        return self.events

    async def synchronize(
        self, pods: Sequence[api_pb2.PodSandbox], containers: Sequence[api_pb2.Container]
    ) -> None:
        self._info("Synchronize pods=%d containers=%d", len(pods), len(containers))
        for ctr in containers:
            self._info(
                "Synchronize container=%s id=%s pod=%s", ctr.name, ctr.id, ctr.pod_sandbox_id
            )

    async def shutdown(self) -> None:
        self._info("Shutdown")

    async def run_pod_sandbox(self, pod: api_pb2.PodSandbox) -> None:
        self._pod("RunPodSandbox", pod)

    async def update_pod_sandbox(
        self, pod: api_pb2.PodSandbox, overhead: Any, resources: Any
    ) -> None:
        self._pod("UpdatePodSandbox", pod)

    async def post_update_pod_sandbox(self, pod: api_pb2.PodSandbox) -> None:
        self._pod("PostUpdatePodSandbox", pod)

    async def stop_pod_sandbox(self, pod: api_pb2.PodSandbox) -> None:
        self._pod("StopPodSandbox", pod)

    async def remove_pod_sandbox(self, pod: api_pb2.PodSandbox) -> None:
        self._pod("RemovePodSandbox", pod)

    async def create_container(self, pod: api_pb2.PodSandbox, container: api_pb2.Container) -> None:
        self._container("CreateContainer", pod, container)

    async def post_create_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container
    ) -> None:
        self._container("PostCreateContainer", pod, container)

    async def start_container(self, pod: api_pb2.PodSandbox, container: api_pb2.Container) -> None:
        self._container("StartContainer", pod, container)

    async def post_start_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container
    ) -> None:
        self._container("PostStartContainer", pod, container)

    async def update_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container, resources: Any
    ) -> None:
        self._container("UpdateContainer", pod, container)

    async def post_update_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container
    ) -> None:
        self._container("PostUpdateContainer", pod, container)

    async def stop_container(self, pod: api_pb2.PodSandbox, container: api_pb2.Container) -> None:
        self._container("StopContainer", pod, container)

    async def remove_container(self, pod: api_pb2.PodSandbox, container: api_pb2.Container) -> None:
        self._container("RemoveContainer", pod, container)

    async def validate_container_adjustment(
        self, request: api_pb2.ValidateContainerAdjustmentRequest
    ) -> None:
        self._container("ValidateContainerAdjustment", request.pod, request.container)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the exit code."""
    parser = base_parser("NRI plugin that logs every event it receives.")
    parser.add_argument(
        "--events",
        help="subscribe to these events only (e.g. 'CreateContainer,StopContainer' or 'pod')",
    )
    args = parser.parse_args(argv)
    setup_logging(args.log_file, args.log_level)
    try:
        events = parse_event_mask(args.events) if args.events else None
    except ValueError as exc:
        parser.error(str(exc))

    def make_stub() -> Stub:
        return Stub(
            EventLogger(events),
            name=args.name,
            index=args.index,
            socket_path=args.socket,
            reconnect=not args.no_reconnect,
            default_name="logger",
            default_index="50",
        )

    return run(make_stub)


if __name__ == "__main__":
    sys.exit(main())
