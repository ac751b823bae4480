"""Host settings in a pipeline without a host controller: dropped, with a notice.

A policy may give a container settings only the host controller applies (cgroup files, a CPU
class for its CPUs), and the runtime controller routes to it what the runtime cannot carry in
a creation adjustment (a scheduling class or I/O priority on an old runtime). Without a host
controller nobody applies them: the pipeline drops them as soon as they are marked, and says
so once for the container (a notice like the host controller's own when its host control
cannot apply a setting), instead of leaving the mark to linger (a started container would
wait for a process hook that never comes) and be dropped later under another operation.

Only pipelines without a host controller call this, and only for containers that have the
mark: the success path of a pipeline with one is untouched.
"""

from __future__ import annotations

from collections.abc import Iterable

from nrirp.domain.control import ControlContext
from nrirp.domain.model import HOST_CONTROLLER, Container, HostChange
from nrirp.domain.pipeline.labels import ctr_label
from nrirp.domain.ports.documents import label


def drop_host_settings(ctx: ControlContext, containers: Iterable[Container]) -> bool:
    """Drop the host settings of those of ``containers`` marked for the host controller,
    with one notice each (source ``host``, a warning about the container); whether any was
    dropped."""
    dropped = False
    cache = ctx.cache
    for ctr in containers:
        if HOST_CONTROLLER not in ctr.pending.controllers:
            continue
        name = ctr_label(cache.pod(ctr.pod_id), ctr)
        ctx.notice(
            HOST_CONTROLLER,
            f"{name}: {settings_text(ctr.pending.host)} not applied: no host control "
            "(settings the runtime cannot carry need one)",
            ctr.id,
        )
        cache.clear_pending(ctr.id, HOST_CONTROLLER)
        dropped = True
    return dropped


def settings_text(change: HostChange) -> str:
    """What ``change`` sets, for an operator: ``scheduling class and I/O priority``,
    ``CPU class fast``, ``cgroup settings cpu.idle, memory.high``."""
    parts = []
    if change.scheduling is not None:
        parts.append("scheduling class")
    if change.io_priority is not None:
        parts.append("I/O priority")
    if change.cpu_class is not None:
        parts.append(f"CPU class {label(change.cpu_class)}")
    if change.cgroup:
        parts.append(f"cgroup settings {', '.join(sorted(change.cgroup))}")
    if not parts:
        return "host settings"
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]


__all__ = ["drop_host_settings", "settings_text"]
