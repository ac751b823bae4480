"""Which lifecycle events the pipeline needs to hear from the runtime, beyond its requests.

The requests (pods run, stopped and removed; containers created, started, updated, stopped and
removed; synchronization) are always needed. A container's process exists only after it
started: settings the host controller applies to the process (a scheduling class the runtime
cannot carry, cgroup files) wait for PostStartContainer, which is therefore needed only when
such settings can arise. PostCreateContainer and PostUpdateContainer are needed by nothing: the
container is created by the time it starts, and an update is known when it is asked for.
"""

from __future__ import annotations

import attrs

from nrirp.domain.control import RuntimeFeatures
from nrirp.domain.policy.settings import ContainerSettings


@attrs.frozen
class LifecycleNeeds:
    """What to subscribe to besides the requests, and why."""

    post_start: bool
    """The container started (its process exists): host-side settings are applied then."""
    reason: str
    """One line: why PostStartContainer is needed, or why not."""


def lifecycle_needs(
    *,
    host_controller: bool,
    settings: ContainerSettings,
    features: RuntimeFeatures,
    pending_host: bool,
) -> LifecycleNeeds:
    """The needs for a pipeline with (or without) a host controller, a policy that may give
    ``settings``, a runtime with ``features``, and containers with host settings still to
    apply (``pending_host``: e.g. restored from the saved state)."""
    if not host_controller:
        return LifecycleNeeds(False, "no host controller")
    if pending_host:
        return LifecycleNeeds(True, "containers have host settings waiting for their process")
    if settings.host:
        return LifecycleNeeds(True, "the policy may give containers host-side settings")
    if settings.scheduling and not (features.scheduling and features.io_priority):
        return LifecycleNeeds(
            True,
            "scheduling classes are applied to the tasks after start: "
            "the runtime cannot carry them",
        )
    if settings.scheduling:
        return LifecycleNeeds(False, "the runtime carries the scheduling classes")
    return LifecycleNeeds(False, "no setting waits for a container's process")
