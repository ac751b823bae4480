"""The policy port: what every resource policy implements, and what it is given."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

from nrirp.domain.config import PolicyConfig
from nrirp.domain.model import Container, LinuxResources
from nrirp.domain.policy.context import PolicyContext
from nrirp.domain.policy.events import PolicyEvent
from nrirp.domain.policy.zones import MetricSample, TopologyZone


class PolicyError(Exception):
    """A policy cannot do what was asked (no room for a container, invalid config, ...).

    The message is the reason given to the runtime / operator; keep it specific.
    """


class Policy(Protocol):
    """A resource policy. Every method runs with the pipeline serialized (never concurrently).

    Decisions are made through ``ctx.cache`` setters (``set_cpus``, ``set_mems``, ...) on any
    container, not just the one the call is about; the pipeline turns the recorded changes into
    the runtime's adjustment and updates. Raise :class:`PolicyError` to refuse: the cache is
    rolled back to the state before the call, so a policy that keeps its own bookkeeping must
    also leave that unchanged when it raises.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    config_type: ClassVar[type[Any] | None]
    """The spec class this policy's configuration uses, ``None`` when it takes none."""

    def start(self, ctx: PolicyContext, config: PolicyConfig | None) -> None:
        """Begin with ``config``; restored containers and policy data are already in the cache."""
        ...

    def reconfigure(self, config: PolicyConfig) -> None:
        """Switch to ``config``; raise :class:`PolicyError` to keep the old one."""
        ...

    def sync(self, added: Sequence[Container], removed: Sequence[Container]) -> None:
        """Reconcile with the runtime: allocate ``added``, release ``removed``.

        Surviving containers are in the cache with the resources they had; ``removed`` are
        no longer in the cache.
        """
        ...

    def allocate(self, container: Container) -> None:
        """Assign resources to a container being created."""
        ...

    def release(self, container: Container) -> None:
        """Take back the resources of a container that stopped or is gone."""
        ...

    def update(self, container: Container, resources: LinuxResources) -> None:
        """The container's resources are being changed to ``resources`` (in-place resize)."""
        ...

    def handle_event(self, event: PolicyEvent) -> None: ...

    def topology_zones(self) -> Sequence[TopologyZone]: ...

    def metrics(self) -> Sequence[MetricSample]: ...

    def describe(self) -> Mapping[str, Any]:
        """JSON-compatible view of the policy's state, for status and debugging."""
        ...

    def export_state(self) -> Any:
        """JSON-compatible data to persist with the snapshot (``None`` for nothing).

        It is handed back through ``ctx.cache.policy_data(name)`` after a restart.
        """
        ...
