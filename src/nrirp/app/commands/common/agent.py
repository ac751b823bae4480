"""``nrirp run``'s node-agent options and the agent's part in the serving daemon.

Kept apart from ``run.py`` and light to import: lightkube and the agent are imported only when
the agent runs (``docs/kubernetes.md``).
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import TYPE_CHECKING, Any

from nrirp.app.commands.common.parsing import non_negative_seconds

if TYPE_CHECKING:
    from nrirp.adapters.kubernetes import NodeAgent
    from nrirp.app.composition.reloads import ConfigReloads
    from nrirp.app.daemon import DaemonContainer
    from nrirp.domain.config import PolicyConfig
    from nrirp.domain.policy import PolicyRegistry

log = logging.getLogger("nrirp.daemon")

NODE_NAME_ENV = "NODE_NAME"
IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"


class AgentSettingsError(Exception):
    """Agent options that cannot work together."""


def add_agent_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "node agent",
        "configuration from custom resources, their status, NodeResourceTopology "
        "(docs/kubernetes.md); on when the node's name and API access are known",
    )
    group.add_argument("--node-name", metavar="NAME", help="this node's name (default: $NODE_NAME)")
    group.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig to reach the API server (default: the in-cluster service account)",
    )
    group.add_argument(
        "--config-namespace",
        metavar="NS",
        default="kube-system",
        help="namespace of the policy's configuration resources (default: %(default)s)",
    )
    group.add_argument(
        "--topology-update-interval",
        metavar="SECONDS",
        type=non_negative_seconds,
        default=1.0,
        help="least time between two NodeResourceTopology writes (default: %(default)s)",
    )
    group.add_argument(
        "--disable-agent", action="store_true", help="no node agent even in a cluster"
    )
    parser.add_argument(
        "--pod-resources-socket",
        metavar="PATH",
        default="/var/lib/kubelet/pod-resources/kubelet.sock",
        help="the kubelet's pod-resources socket, asked for topology hints while the "
        "configuration has agent.podResourceAPI (default: %(default)s)",
    )


def agent_settings(args: argparse.Namespace, registry: PolicyRegistry) -> dict[str, Any] | None:
    """The composition's ``agent`` config key: ``None`` when the agent is off (disabled, no
    node name, or no API access: neither ``--kubeconfig`` nor in a cluster)."""
    if args.disable_agent:
        log.info("node agent: disabled (--disable-agent)")
        return None
    node = args.node_name or os.environ.get(NODE_NAME_ENV, "")
    access = args.kubeconfig or os.environ.get(IN_CLUSTER_ENV)
    if not access:
        log.info("node agent: off (no --kubeconfig, and not in a cluster)")
        return None
    if not node:
        raise AgentSettingsError(
            "the node agent needs this node's name: --node-name or NODE_NAME (or --disable-agent)"
        )
    registration = registry.spec_registration(args.policy)
    kind = registration.kind if registration is not None else None
    if args.config_file:
        log.info("node agent: --config-file given: configuration resources are not used")
        kind = None
    elif kind is None:
        log.info("node agent: policy %s has no custom-resource kind", args.policy)
    return {
        "node": node,
        "kubeconfig": args.kubeconfig,
        "namespace": args.config_namespace,
        "kind": kind,
        "topology_interval": args.topology_update_interval,
    }


class DaemonAgent:
    """The node agent while the daemon serves: configuration resources applied through the
    daemon's reload path (``reloads``, the config file's too), the ``agent`` block of the
    configuration in force followed (:meth:`follow`, called whatever applied it), zones
    exported."""

    def __init__(self, container: DaemonContainer, agent: NodeAgent, reloads: ConfigReloads):
        from nrirp.app.composition.node_agent import CustomResourceApplier

        self.agent = agent
        core = container.core.container
        self.manager = core.resource_manager()
        agent.on_config(
            CustomResourceApplier(reloads, self.manager.policy.name, core.policy_registry())
        )

    @classmethod
    def of(cls, container: DaemonContainer, reloads: ConfigReloads) -> DaemonAgent | None:
        """The daemon's agent, if it has one (the ``kubernetes`` adapter is ``None`` when the
        agent is off, and then nothing of it is imported)."""
        agent = container.adapters.container.kubernetes()
        if agent is None:
            return None
        from nrirp.adapters.kubernetes.agent import NodeAgent

        return cls(container, agent, reloads) if isinstance(agent, NodeAgent) else None

    async def start(self) -> None:
        agent = self.agent
        saved = self.manager.config
        agent.in_force_description = (
            "the saved configuration" if saved is not None else "the built-in defaults"
        )
        if agent.kind is not None:
            log.info(
                "node agent: node %s configured by %s resources in %s; until one is read: %s",
                agent.node,
                agent.kind,
                agent.namespace,
                agent.in_force_description,
            )
        agent.attach_topology(self.manager.policy.name, self.manager.topology_zones)
        await agent.start()

    async def stop(self) -> None:
        await self.agent.stop()

    def follow(self, config: PolicyConfig | None) -> None:
        """Follow the ``agent`` block of the configuration in force (a follower of the
        daemon's ``ConfigEvents``: at start and after every change, whatever its source)."""
        from nrirp.domain.config import AgentConfig

        block = config.agent if config is not None else AgentConfig()
        self.agent.export_topology = block.exports_topology

    def reapply(self, trigger: str) -> bool:
        """SIGHUP: apply the resource in force again (``False`` if none)."""
        if self.agent.kind is None:
            return False
        if not self.agent.reapply():
            log.warning("%s: no configuration resource applies to this node yet", trigger)
        return True
