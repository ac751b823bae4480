"""An example policy module: exclusive CPUs for Guaranteed containers, a shared pool for the rest.

Load it with ``--policy-module examples/policies/exclusive_cpus.py`` (``nrirp simulate``), with
``NRIRP_POLICY_MODULES`` when it is importable, or ``Engine.build(policy_modules=[...])``.

* A container of a Guaranteed pod whose CPU request is a whole number of CPUs gets that many
  CPUs of its own (whole cores first), and the memory nodes of those CPUs.
* Every other container runs on the shared pool: the pool's CPUs minus every exclusive CPU.
  When the shared pool shrinks or grows, the containers on it are updated (the NRI reply of the
  operation carries the updates, or they are sent with UpdateContainers).
* The pool is ``availableResources.cpu`` (default: the online CPUs that are not isolated)
  minus ``reservedResources.cpu``; containers of ``kube-system`` run on the reserved CPUs.
* A container that would leave the shared pool empty is refused, and so is a configuration
  whose pool cannot hold the exclusive containers that already run.

The policy keeps no bookkeeping of its own: exclusive CPUs are recorded as a tag on the
container, in the cache, so a refused operation is undone by the cache rollback and the state
survives a restart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from nrirp.domain.config import PolicyConfig, TemplatePolicySpec
from nrirp.domain.config.resources import CPUResource
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, LinuxResources, QOSClass
from nrirp.domain.policies import TemplatePolicy
from nrirp.domain.policy import PolicyContext, PolicyError, PolicyRegistry

TAG = "exclusive-cpus"
RESERVED_NAMESPACE = "kube-system"


class ExclusiveCpusPolicy(TemplatePolicy):
    name: ClassVar[str] = "exclusive-cpus"
    description: ClassVar[str] = "example: exclusive CPUs for whole-CPU Guaranteed containers"
    config_type: ClassVar[type[Any] | None] = TemplatePolicySpec

    def __init__(self) -> None:
        super().__init__()
        self._pool = CPUSet()
        self._reserved = CPUSet()

    # ------------------------------------------------------------------ configuration
    def start(self, ctx: PolicyContext, config: PolicyConfig | None) -> None:
        self._check(config)
        self._ctx = ctx
        self._pool, self._reserved = self._pools(config)
        self._config = config

    def reconfigure(self, config: PolicyConfig) -> None:
        self._check(config)
        pool, reserved = self._pools(config)
        cache = self.ctx.cache
        exclusive = self._exclusive()
        taken = CPUSet()
        for cid, cpus in exclusive.items():  # keep what still fits, move the rest
            ctr = cache.require_container(cid)
            if cpus <= pool - taken:
                taken |= cpus
                continue
            picked = self._pick(pool - taken, len(cpus), ctr, keep_shared=True)
            taken |= picked
            self._assign(ctr, picked, "moved by reconfiguration")
        if not pool - taken:
            raise PolicyError(
                f"the new pool {pool} holds only the exclusive CPUs of running containers "
                "and leaves none for the shared pool"
            )
        self._pool, self._reserved = pool, reserved
        self._config = config
        self._refresh_shared("reconfiguration")

    def _pools(self, config: PolicyConfig | None) -> tuple[CPUSet, CPUSet]:
        machine = self.ctx.machine
        spec = config.spec if config is not None else TemplatePolicySpec()
        available = _cpus_of(spec.available_resources.cpu, machine.online - machine.isolated)
        reserved = _cpus_of(spec.reserved_resources.cpu, CPUSet(), within=available)
        outside = (available | reserved) - machine.online
        if outside:
            raise PolicyError(f"CPUs {outside} are not online (online: {machine.online})")
        pool = available - reserved
        if not pool:
            raise PolicyError(f"no CPUs left for containers (available {available}, reserved)")
        return pool, reserved

    # ------------------------------------------------------------------ containers
    def sync(self, added: Sequence[Container], removed: Sequence[Container]) -> None:
        for container in added:
            self.allocate(container)
        if removed:
            self._refresh_shared("synchronize")

    def allocate(self, container: Container) -> None:
        count = self._exclusive_count(container)
        if count:
            picked = self._pick(self._shared(), count, container, keep_shared=True)
            self._assign(container, picked, f"{count} exclusive CPUs")
            self._refresh_shared(f"{container.name} took {picked}")
        else:
            self._put_shared(container)

    def release(self, container: Container) -> None:
        # the container is stopped already: its exclusive CPUs are back in the shared pool
        if container.tags.get(TAG):
            self._refresh_shared(f"{container.name} released {container.tags[TAG]}")

    def update(self, container: Container, resources: LinuxResources) -> None:
        cache = self.ctx.cache
        current = cache.require_container(container.id)
        held = current.tags.get(TAG)
        if held and len(CPUSet.parse(held)) == self._exclusive_count(current):
            return  # same number of exclusive CPUs: keep them
        if held:
            cache.set_tags(container.id, **{TAG: ""})
        self.allocate(cache.require_container(container.id))
        if held and not cache.require_container(container.id).tags.get(TAG):
            self._refresh_shared(f"{container.name} released {held}")

    def describe(self) -> dict[str, Any]:
        return {
            "policy": self.name,
            "pool": str(self._pool),
            "reserved": str(self._reserved),
            "shared": str(self._shared()),
            "exclusive": {cid: str(cpus) for cid, cpus in self._exclusive().items()},
        }

    # ------------------------------------------------------------------ helpers
    @property
    def ctx(self) -> PolicyContext:
        if self._ctx is None:
            raise PolicyError("policy not started")
        return self._ctx

    def _exclusive_count(self, container: Container) -> int:
        pod = self.ctx.cache.pod(container.pod_id)
        if pod is None or pod.qos_class is not QOSClass.GUARANTEED:
            return 0
        if pod.namespace == RESERVED_NAMESPACE and self._reserved:
            return 0
        millis = container.requirements.cpu_request
        return millis // 1000 if millis and millis % 1000 == 0 else 0

    def _exclusive(self) -> dict[str, CPUSet]:
        return {
            c.id: CPUSet.parse(c.tags[TAG])
            for c in self.ctx.cache.active_containers()
            if c.tags.get(TAG)
        }

    def _shared(self) -> CPUSet:
        taken = CPUSet().union(*self._exclusive().values())
        return self._pool - taken

    def _pick(self, free: CPUSet, count: int, container: Container, *, keep_shared: bool) -> CPUSet:
        if len(free) - (1 if keep_shared else 0) < count:
            raise PolicyError(
                f"cannot give {container.name} {count} exclusive CPUs: only {len(free)} free "
                f"({free or 'none'}) and the shared pool needs one"
            )
        machine = self.ctx.machine
        whole_cores = [c.cpus for c in machine.cores.values() if c.cpus <= free]
        picked = CPUSet()
        for cpus in sorted(whole_cores, key=lambda s: s.min()):
            if len(picked) + len(cpus) <= count:
                picked |= cpus
        return picked | (free - picked).first(count - len(picked))

    def _assign(self, container: Container, cpus: CPUSet, reason: str) -> None:
        cache = self.ctx.cache
        cache.set_tags(container.id, **{TAG: str(cpus)})
        cache.set_cpus(container.id, cpus)
        mems = self._mems_of(cpus)
        if mems:
            cache.set_mems(container.id, mems)
        self.ctx.record_decision(container, reason)

    def _put_shared(self, container: Container) -> None:
        pod = self.ctx.cache.pod(container.pod_id)
        reserved = pod is not None and pod.namespace == RESERVED_NAMESPACE and self._reserved
        cpus = self._reserved if reserved else self._shared()
        cache = self.ctx.cache
        cache.set_cpus(container.id, cpus)
        mems = self._mems_of(cpus)
        if mems:
            cache.set_mems(container.id, mems)
        if container.cpus != cpus:
            self.ctx.record_decision(container, "reserved CPUs" if reserved else "shared pool")

    def _refresh_shared(self, why: str) -> None:
        shared = self._shared()
        for ctr in self.ctx.cache.active_containers():
            if not ctr.tags.get(TAG) and ctr.cpus != shared and not self._on_reserved(ctr):
                self.ctx.cache.set_cpus(ctr.id, shared)
                mems = self._mems_of(shared)
                if mems:
                    self.ctx.cache.set_mems(ctr.id, mems)
                self.ctx.record_decision(ctr, f"shared pool resized: {why}")

    def _on_reserved(self, container: Container) -> bool:
        pod = self.ctx.cache.pod(container.pod_id)
        return bool(self._reserved) and pod is not None and pod.namespace == RESERVED_NAMESPACE

    def _mems_of(self, cpus: CPUSet) -> CPUSet:
        machine = self.ctx.machine
        return CPUSet.from_ids(
            node
            for node in {machine.node_of(cpu) for cpu in cpus}
            if machine.memory_bytes(node) > 0
        )


def _cpus_of(
    resource: CPUResource | None, default: CPUSet, *, within: CPUSet | None = None
) -> CPUSet:
    if resource is None:
        return default
    base = within if within is not None else default
    if resource.cpuset is not None:
        return base - resource.cpuset if resource.exclude else resource.cpuset
    assert resource.amount is not None
    return base.first(math.ceil(resource.amount.milli_value() / 1000))


def register_policies(registry: PolicyRegistry) -> None:
    # name, description and the spec class (config_type) come from the class
    registry.register(ExclusiveCpusPolicy)
