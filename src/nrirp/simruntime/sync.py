"""Synchronize: tell a new plugin about every pod and container, split as Go's runtime does.

From NRI v0.7 on, a message that would exceed the ttRPC limit is retried in chunks: the counts
of pods and containers per message shrink by ``max_length / rejected_length`` (at most 0.9) until
it fits, unless that leaves 8 objects or fewer. Every chunk but the last carries ``more=true``
and must be answered with ``more=true`` and no updates; the last reply carries the updates. One
deadline covers the whole exchange. Older releases send one message and fail when it is too big.
"""

from __future__ import annotations

from collections.abc import Sequence

from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.transport import OversizedMessage
from nrirp.simruntime.emulation import NriVersion
from nrirp.simruntime.plugin import PluginConnection

MIN_OBJECTS_PER_MESSAGE = 8
MAX_SHRINK_FACTOR = 0.9


class SyncFailed(Exception):
    """Synchronization failed for a reason of the protocol (not a plugin error status)."""


def shrink(pods: int, containers: int, error: OversizedMessage) -> tuple[int, int]:
    """Go's ``recalcObjsPerSyncMsg``: smaller counts per message after an oversized one."""
    if pods + containers <= MIN_OBJECTS_PER_MESSAGE:
        raise SyncFailed("failed to synchronize plugin with split messages")
    if error.limit <= 0 or error.length <= error.limit:
        raise SyncFailed("failed to synchronize plugin with split messages")
    factor = min(MAX_SHRINK_FACTOR, error.limit / error.length)
    return int(pods * factor), int(containers * factor)


async def synchronize(
    plugin: PluginConnection,
    pods: Sequence[api_pb2.PodSandbox],
    containers: Sequence[api_pb2.Container],
    *,
    version: NriVersion,
    deadline: float,
    size_limit: int | None = None,
) -> list[api_pb2.ContainerUpdate]:
    """Synchronize ``plugin``; return the updates it asks for.

    Raises :class:`SyncFailed`, the plugin's :class:`~.plugin.CallError`, or (before v0.7)
    :class:`OversizedMessage`.
    """
    if not version.splits_sync:
        request = api_pb2.SynchronizeRequest(pods=pods, containers=containers)
        reply = await plugin.call(
            "Synchronize",
            request,
            api_pb2.SynchronizeResponse,
            deadline=deadline,
            size_limit=size_limit,
        )
        return list(reply.update)

    pods_left, containers_left = list(pods), list(containers)
    pods_per, containers_per = len(pods_left), len(containers_left)
    while True:
        if pods_per == containers_per == 0 and (pods_left or containers_left):
            # Go would send empty chunks until the deadline; make progress instead
            pods_per, containers_per = min(1, len(pods_left)), min(1, len(containers_left))
        more = len(pods_left) > pods_per or len(containers_left) > containers_per
        request = api_pb2.SynchronizeRequest(
            pods=pods_left[:pods_per], containers=containers_left[:containers_per], more=more
        )
        try:
            reply = await plugin.call(
                "Synchronize",
                request,
                api_pb2.SynchronizeResponse,
                deadline=deadline,
                size_limit=size_limit,
            )
        except OversizedMessage as exc:
            pods_per, containers_per = shrink(pods_per, containers_per, exc)
            continue
        if not more:
            return list(reply.update)
        if reply.update or reply.more != more:
            raise SyncFailed("plugin does not handle split sync requests")
        pods_left = pods_left[pods_per:]
        containers_left = containers_left[containers_per:]
        pods_per = min(pods_per, len(pods_left))
        containers_per = min(containers_per, len(containers_left))
