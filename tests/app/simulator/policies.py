"""Policies for simulator tests (``policy_modules=["tests.app.simulator.policies"]``)."""

from __future__ import annotations

from typing import ClassVar

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container
from nrirp.domain.policies import TemplatePolicy
from nrirp.domain.policy import PolicyError, PolicyEvent, PolicyRegistry

MODULE = __name__


class MovePolicy(TemplatePolicy):
    """Pins new containers to CPU 0; events move everyone (``move``: data is a cpu list; none
    means the empty set) or fail (``fail``)."""

    name: ClassVar[str] = "sim-move"
    description: ClassVar[str] = "test policy: cpu 0, events move everyone"

    def allocate(self, container: Container) -> None:
        assert self._ctx is not None
        self._ctx.cache.set_cpus(container.id, CPUSet.of(0))

    def handle_event(self, event: PolicyEvent) -> None:
        assert self._ctx is not None
        if event.kind == "fail":
            raise PolicyError(f"event refused: {event.data}")
        if event.kind == "move":
            cpus = CPUSet.parse(str(event.data)) if event.data else CPUSet()
            for ctr in self._ctx.cache.active_containers():
                self._ctx.cache.set_cpus(ctr.id, cpus)
                self._ctx.record_decision(ctr, f"moved by event to {cpus}")


class BadStatePolicy(TemplatePolicy):
    """Exports state that is not JSON once a container named ``bad`` exists."""

    name: ClassVar[str] = "sim-bad-state"
    description: ClassVar[str] = "test policy: unsaveable state"

    def export_state(self) -> object:
        assert self._ctx is not None
        if any(c.name == "bad" for c in self._ctx.cache.active_containers()):
            return {"oops": object()}
        return None


def register_policies(registry: PolicyRegistry) -> None:
    registry.register(MovePolicy)
    registry.register(BadStatePolicy)
