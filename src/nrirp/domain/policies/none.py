"""The ``none`` policy: tracks containers, decides nothing, takes no configuration."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from nrirp.domain.config import NonePolicySpec, PolicyConfig
from nrirp.domain.model import Container, LinuxResources
from nrirp.domain.policy import MetricSample, PolicyContext, PolicyError, PolicyEvent, TopologyZone
from nrirp.domain.policy.explanation import Explanation, Subject, nothing_decided
from nrirp.domain.policy.settings import NO_SETTINGS, ContainerSettings


class NonePolicy:
    """Leaves every container as the runtime created it."""

    name: ClassVar[str] = "none"
    description: ClassVar[str] = "Leaves container resources untouched."
    config_type: ClassVar[type[Any] | None] = NonePolicySpec
    """An empty spec: only the common blocks (log, instrumentation, ...) apply."""

    def start(self, ctx: PolicyContext, config: PolicyConfig | None) -> None:
        self._check(config)

    def reconfigure(self, config: PolicyConfig) -> None:
        self._check(config)

    def sync(self, added: Sequence[Container], removed: Sequence[Container]) -> None:
        pass

    def allocate(self, container: Container) -> None:
        pass

    def release(self, container: Container) -> None:
        pass

    def update(self, container: Container, resources: LinuxResources) -> None:
        pass

    def handle_event(self, event: PolicyEvent) -> None:
        pass

    def explain(self, subject: Subject) -> Explanation:
        """Nothing to explain: no decision is made."""
        return nothing_decided(
            self.name,
            subject,
            "the none policy decides nothing: the container runs with what the runtime gave it",
        )

    def container_settings(self) -> ContainerSettings:
        """Nothing: the none policy sets nothing on containers."""
        return NO_SETTINGS

    def topology_zones(self) -> Sequence[TopologyZone]:
        return ()

    def metrics(self) -> Sequence[MetricSample]:
        return ()

    def describe(self) -> Mapping[str, Any]:
        return {"policy": self.name}

    def export_state(self) -> Any:
        return None

    def _check(self, config: PolicyConfig | None) -> None:
        if config is not None and config.policy != self.name:
            raise PolicyError(f"none policy cannot use a {config.policy!r} configuration")
