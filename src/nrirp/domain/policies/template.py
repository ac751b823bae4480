"""The template policy: every hook a documented no-op. Copy it to start a new policy.

It accepts the reference's TemplatePolicy spec (``availableResources``, ``reservedResources``)
and changes nothing on any container. Each method says what a real policy does there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from nrirp.domain.config import PolicyConfig, TemplatePolicySpec
from nrirp.domain.model import Container, LinuxResources
from nrirp.domain.policy import (
    MetricSample,
    PolicyContext,
    PolicyError,
    PolicyEvent,
    TopologyZone,
)
from nrirp.domain.policy.explanation import (
    Explanation,
    Subject,
    not_explained,
    nothing_decided,
)


class TemplatePolicy:
    """A policy that accepts its config and decides nothing."""

    name: ClassVar[str] = "template"
    description: ClassVar[str] = "A no-op policy to copy when writing a new one."
    config_type: ClassVar[type[Any] | None] = TemplatePolicySpec

    def __init__(self) -> None:
        self._ctx: PolicyContext | None = None
        self._config: PolicyConfig | None = None

    def start(self, ctx: PolicyContext, config: PolicyConfig | None) -> None:
        """Keep the context; validate the config and build allocation state.

        A real policy computes its pools from ``ctx.machine`` and the config here, then
        rebuilds its bookkeeping from restored containers (``ctx.cache.active_containers()``
        with their ``cpus``/``mems``) and from ``ctx.cache.policy_data(self.name)``.
        """
        self._check(config)
        self._ctx = ctx
        self._config = config

    def reconfigure(self, config: PolicyConfig) -> None:
        """Adopt a new config. A real policy recomputes pools and moves containers, or raises
        :class:`PolicyError` (changing nothing) when the config cannot be applied."""
        self._check(config)
        self._config = config

    def sync(self, added: Sequence[Container], removed: Sequence[Container]) -> None:
        """A real policy releases ``removed`` and allocates ``added`` here."""

    def allocate(self, container: Container) -> None:
        """A real policy picks CPUs/memory and calls ``ctx.cache.set_cpus(...)`` etc."""

    def release(self, container: Container) -> None:
        """A real policy returns the container's CPUs/memory to its pools here."""

    def update(self, container: Container, resources: LinuxResources) -> None:
        """A real policy re-sizes the container's allocation to ``resources`` here."""

    def handle_event(self, event: PolicyEvent) -> None:
        """A real policy reacts to its own injected events (timers, failed updates) here."""

    def explain(self, subject: Subject) -> Explanation:
        """Nothing to explain: no decision is made (a real policy says why a container is
        where it is: ``domain/policy/explanation.py``). A subclass that does not override
        this decides things it does not explain: it gets the "does not explain" answer."""
        if type(self) is not TemplatePolicy:
            return not_explained(self.name, subject)
        return nothing_decided(
            self.name,
            subject,
            "the template policy decides nothing: the container runs with what the runtime gave it",
        )

    def topology_zones(self) -> Sequence[TopologyZone]:
        """A real policy describes its pools for NodeResourceTopology export."""
        return ()

    def metrics(self) -> Sequence[MetricSample]:
        return ()

    def describe(self) -> Mapping[str, Any]:
        return {"policy": self.name, "configured": self._config is not None}

    def export_state(self) -> Any:
        """A real policy returns JSON-compatible data to persist, or ``None``."""
        return None

    def _check(self, config: PolicyConfig | None) -> None:
        if config is not None and config.policy != self.name:
            raise PolicyError(f"template policy cannot use a {config.policy!r} configuration")
