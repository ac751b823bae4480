"""Policies for daemon tests, loaded by ``NRIRP_POLICY_MODULES=tests.e2e.daemon_policies``.

This is also the worked example of a policy module: it defines ``register_policies(registry)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from nrirp.domain.model import Container, policy_key
from nrirp.domain.policies import TemplatePolicy
from nrirp.domain.policy import PolicyRegistry

PIN_CPUS = policy_key("cpus", "annotation-pin.nrirp.test")
"""``cpus.annotation-pin.nrirp.test[/container.NAME]``: the CPUs to pin a container to."""
PIN_MEMS = policy_key("mems", "annotation-pin.nrirp.test")
REFUSE = policy_key("refuse", "annotation-pin.nrirp.test")


class AnnotationPinPolicy(TemplatePolicy):
    """Pins containers to the CPUs (and memory nodes) their pod's annotations name; refuses
    containers annotated with ``refuse``."""

    name: ClassVar[str] = "annotation-pin"
    description: ClassVar[str] = "test policy: cpus/mems from pod annotations"

    def allocate(self, container: Container) -> None:
        from nrirp.domain.policy import PolicyError

        assert self._ctx is not None
        annotations = self._ctx.annotations(container)
        if annotations.get_bool(REFUSE):
            raise PolicyError(f"container {container.name} refused by annotation")
        cpus = annotations.get_cpuset(PIN_CPUS)
        mems = annotations.get_cpuset(PIN_MEMS)
        if cpus is not None:
            self._ctx.cache.set_cpus(container.id, cpus)
        if mems is not None:
            self._ctx.cache.set_mems(container.id, mems)
        if cpus is not None or mems is not None:
            self._ctx.record_decision(container, "pinned by annotation")

    def sync(self, added: Sequence[Container], removed: Sequence[Container]) -> None:
        for container in added:
            self.allocate(container)


def register_policies(registry: PolicyRegistry) -> None:
    # its config is the template policy's spec (config_type, inherited: availableResources,
    # reservedResources)
    registry.register(AnnotationPinPolicy)
