"""The simulated cluster of a replay: the in-process fake API (``FakeCluster``) with one node,
and the node agent following it as the daemon's does.

Made only for workloads with ``applyConfig``, ``deleteConfig`` or ``labelNode`` steps. The
agent applies the resource that configures the node through the same applier and reload path
as ``nrirp run`` (config loader off the loop, ``ResourceManager.reconfigure``) and writes its
status back; a step whose resource was refused fails with the status's errors, and the old
configuration stays.
NodeResourceTopology is written after every step (no rate limit in the simulator).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any

from nrirp.adapters.documents import CONFIG, UnreadableDocument, load_document
from nrirp.adapters.kubernetes import FakeCluster, NodeAgent, Retry
from nrirp.app.composition.node_agent import CustomResourceApplier
from nrirp.app.composition.reloads import ConfigReloads
from nrirp.app.simulator.workload import ApplyConfig, DeleteConfig, LabelNode, Workload
from nrirp.domain.config import PolicySpecs
from nrirp.domain.pipeline import ResourceManager

NODE = "sim-node"
NAMESPACE = "kube-system"
SETTLE_SECONDS = 10.0

ClusterAction = ApplyConfig | DeleteConfig | LabelNode


class SimulatedCluster:
    """The fake API server, the node ``sim-node`` and its agent."""

    def __init__(self, manager: ResourceManager, specs: PolicySpecs, base_dir: str) -> None:
        registration = specs.spec_registration(manager.policy.name)
        self.kind = registration.kind if registration is not None else None
        self.manager = manager
        self.base_dir = base_dir
        self.cluster = FakeCluster()
        self.cluster.add_node(NODE)
        self.agent = NodeAgent(
            self.cluster,
            node=NODE,
            namespace=NAMESPACE,
            kind=self.kind,
            topology_interval=0.0,
            retry=Retry(initial=0.01, maximum=0.1),
        )
        self.agent.in_force_description = "the workload's configuration"
        self.reloads = ConfigReloads(manager, thread_name="nrirp-sim-config")
        self.agent.on_config(CustomResourceApplier(self.reloads, manager.policy.name, specs))
        self.agent.attach_topology(manager.policy.name, manager.topology_zones)

    async def start(self) -> None:
        await self.agent.start()
        await self.settle()

    async def stop(self) -> None:
        await self.agent.stop()

    async def perform(self, action: ClusterAction) -> list[str]:
        """Change the cluster, wait for the agent; the errors of a configuration the step had
        refused (a failure the resource in force already had is not this step's)."""
        before = self._status()
        if isinstance(action, ApplyConfig):
            self.cluster.apply_config(self._document(action), NAMESPACE)
        elif isinstance(action, DeleteConfig):
            kind = action.kind or self.kind or ""
            if self.cluster.config(kind, action.name, action.namespace) is None:
                return [f"no {kind} {action.namespace}/{action.name} to delete"]
            self.cluster.delete_config(kind, action.name, action.namespace)
        else:
            self.cluster.label_node(NODE, action.key, action.value)
        await self.settle()
        return self._refusal(before)

    async def settle(self) -> None:
        """Until the agent has handled every event and written what it had to."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_SECONDS
        quiet_rounds = 0
        while quiet_rounds < 3 and loop.time() < deadline:
            await asyncio.sleep(0.002)
            quiet = self.agent.quiet() and self.cluster.pending_events() == 0
            quiet_rounds = quiet_rounds + 1 if quiet else 0

    def topology(self) -> Mapping[str, Any] | None:
        """The node's NodeResourceTopology as last written."""
        return self.cluster.topologies.get(NODE)

    def _document(self, action: ApplyConfig) -> Mapping[str, Any]:
        source: Any = action.config
        if action.file:
            with open(os.path.join(self.base_dir, action.file), "rb") as handle:
                source = handle.read(CONFIG.max_bytes + 1)
        if isinstance(source, str | bytes):
            try:
                source = load_document(source, CONFIG)
            except UnreadableDocument as exc:
                raise ValueError(f"applyConfig: {exc}") from None
        if not isinstance(source, Mapping):
            raise ValueError("applyConfig: the resource must be a mapping")
        return source

    def _status(self) -> tuple[str, str, dict[str, Any]] | None:
        """The resource in force and this node's status in it (a copy), if any."""
        choice = self.agent.in_force
        if choice is None or self.kind is None:
            return None
        status = self.cluster.node_status(self.kind, choice.name, NODE, choice.namespace)
        return choice.namespace, choice.name, dict(status or {})

    def _refusal(self, before: tuple[str, str, dict[str, Any]] | None) -> list[str]:
        now = self._status()
        choice = self.agent.in_force
        if now is None or choice is None or now == before:
            return []
        status = now[2]
        if status.get("status") != "Failure":
            return []
        errors = [str(e) for e in status.get("errors") or ()]
        return [*errors, f"{choice.source} not applied, the old configuration stays"]


def needs_cluster(workload: Workload) -> bool:
    return any(
        isinstance(step.action, ApplyConfig | DeleteConfig | LabelNode) for step in workload.steps
    )
