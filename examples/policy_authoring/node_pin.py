"""The policy of ``docs/policy-authoring.md``: every container on one NUMA node.

* A container runs on the CPUs and the memory of one NUMA node: the allowed node (``nodes``)
  whose containers request the fewest CPUs so far (the lowest id on a tie).
* Containers of the ``systemNamespaces`` (default ``kube-system``) go to ``systemNode``.
* The node a container got is kept as a tag on it (in the resource manager's cache), so a
  refused operation is undone with the cache and the placement survives a restart.
* A reconfiguration moves the containers whose node is no longer allowed.

Load it with ``--policy-module examples/policy_authoring/node_pin.py`` (``nrirp simulate``,
``nrirp explain``), with ``NRIRP_POLICY_MODULES=examples/policy_authoring/node_pin.py``
(``nrirp run``, which has no ``--policy-module``), or pass the class to
``Engine.build(NodePinPolicy, ...)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import attrs

from nrirp.domain.config import PolicyConfig
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, LinuxResources
from nrirp.domain.policies import TemplatePolicy
from nrirp.domain.policy import PolicyContext, PolicyError, PolicyRegistry

TAG = "node-pin.node"


# ---------------------------------------------------------------------- step 1: the config
@attrs.frozen(kw_only=True)
class NodePinSpec:
    """The policy's configuration (YAML keys in camelCase: ``nodes``, ``systemNamespaces``,
    ``systemNode``; unknown keys are refused with their path)."""

    nodes: str = ""
    """The NUMA nodes containers may use, in cpu-list syntax (``0-1``); empty: every node
    with CPUs."""
    system_namespaces: tuple[str, ...] = ("kube-system",)
    system_node: int = 0


# ---------------------------------------------------------------------- step 2: the policy
class NodePinPolicy(TemplatePolicy):
    """Every container on the CPUs and memory of one NUMA node, spread by requested CPU."""

    name: ClassVar[str] = "node-pin"
    description: ClassVar[str] = "example: every container on one NUMA node, spread by load"
    config_type: ClassVar[type[Any] | None] = NodePinSpec

    def start(self, ctx: PolicyContext, config: PolicyConfig | None) -> None:
        self._ctx = ctx  # the machine is needed to check the configuration
        self._allowed(config)  # a bad configuration is refused before anything changes
        self._config = config

    def reconfigure(self, config: PolicyConfig) -> None:
        allowed = self._allowed(config)
        self._config = config
        for container in self.ctx.cache.active_containers():
            node = container.tags.get(TAG)
            if node and int(node) not in allowed:
                new, why = self._choose(container)
                self._pin(container, new, f"its node {node} is no longer allowed; {why}")

    def sync(self, added: Sequence[Container], removed: Sequence[Container]) -> None:
        for container in added:
            if not container.tags.get(TAG):
                self.allocate(container)

    def allocate(self, container: Container) -> None:
        node, why = self._choose(container)
        self._pin(container, node, why)

    def release(self, container: Container) -> None:
        """Nothing to give back: the load is counted from the running containers."""

    def update(self, container: Container, resources: LinuxResources) -> None:
        """A resized container stays on its node."""

    def describe(self) -> dict[str, Any]:
        return {
            "policy": self.name,
            "nodes": str(self._allowed(self._config)),
            "load_mcpu": {str(n): load for n, load in sorted(self._loads().items())},
        }

    # ------------------------------------------------------------------ helpers
    @property
    def ctx(self) -> PolicyContext:
        if self._ctx is None:
            raise PolicyError("policy not started")
        return self._ctx

    def _spec(self, config: PolicyConfig | None) -> NodePinSpec:
        if config is None:
            return NodePinSpec()
        if not isinstance(config.spec, NodePinSpec):
            raise PolicyError(f"not a {self.name} configuration")
        return config.spec

    def _allowed(self, config: PolicyConfig | None) -> CPUSet:
        machine = self.ctx.machine
        spec = self._spec(config)
        with_cpus = machine.cpu_nodes
        try:
            nodes = CPUSet.parse(spec.nodes) if spec.nodes else with_cpus
        except ValueError as exc:
            raise PolicyError(f"nodes: {exc}") from None
        if not nodes or not nodes <= with_cpus:
            raise PolicyError(f"nodes {spec.nodes!r}: the nodes with CPUs are {with_cpus}")
        if spec.system_node not in with_cpus:
            raise PolicyError(f"systemNode {spec.system_node} is not a node with CPUs")
        return nodes

    def _loads(self) -> dict[int, int]:
        """Requested milli-CPUs per allowed node, over the containers pinned there."""
        loads = dict.fromkeys(self._allowed(self._config), 0)
        for container in self.ctx.cache.active_containers():
            node = container.tags.get(TAG)
            if node and int(node) in loads:
                loads[int(node)] += container.requirements.cpu_request or 0
        return loads

    def _choose(self, container: Container) -> tuple[int, str]:
        """The node for ``container``, and why (the reason of the decision)."""
        spec = self._spec(self._config)
        pod = self.ctx.cache.pod(container.pod_id)
        if pod is not None and pod.namespace in spec.system_namespaces:
            return spec.system_node, f"the system node, for namespace {pod.namespace}"
        loads = self._loads()
        return min(loads, key=lambda node: (loads[node], node)), "the least loaded allowed node"

    def _pin(self, container: Container, node: int, reason: str) -> None:
        cache = self.ctx.cache
        cache.set_tags(container.id, **{TAG: str(node)})
        cache.set_cpus(container.id, self.ctx.machine.node_cpus(node))
        cache.set_mems(container.id, CPUSet.of(node))
        self.ctx.record_decision(container, f"node {node}: {reason}")


# ---------------------------------------------------------------------- step 3: register
def register_policies(registry: PolicyRegistry) -> None:
    """For ``--policy-module`` and ``NRIRP_POLICY_MODULES``: name, description and config
    type are read from the class."""
    registry.register(NodePinPolicy)
