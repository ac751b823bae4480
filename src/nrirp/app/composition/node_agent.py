"""The node agent in a composition: building it, and applying the custom resource it follows.

:func:`node_agent` is the daemon's ``kubernetes`` adapter: a :class:`NodeAgent` over lightkube
(imported here, only when the agent is enabled) or ``None``. :class:`CustomResourceApplier` is
what the agent awaits when another resource (or generation) configures the node: the document
takes the one reload path (``reloads.py``: validated by the config loader and prepared off the
loop, applied with ``ResourceManager.reconfigure`` on it), as a reload of the config file does;
the outcome goes back on the resource as its status. The simulator builds its agent over a
:class:`~nrirp.adapters.kubernetes.FakeCluster` and uses the same applier.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from nrirp.app.composition.reloads import ConfigReloads, ReloadRequest
from nrirp.domain.config import PolicySpecs, load_policy_config
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.ports.kubernetes import ConfigStatus, Kubernetes
from nrirp.domain.ports.topology_hints import TopologyHintSource

if TYPE_CHECKING:  # the agent is imported only when it runs
    from nrirp.adapters.kubernetes import ClusterApi, ConfigChoice, NodeAgent

log = logging.getLogger("nrirp.daemon")

DEFAULT_CONFIG_NAMESPACE = "kube-system"
DEFAULT_POD_RESOURCES_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"


@attrs.frozen(kw_only=True)
class AgentSettings:
    """The daemon's agent options (``nrirp run`` flags): ``node`` (``--node-name`` /
    ``NODE_NAME``), ``kubeconfig`` (none: the in-cluster service account), ``namespace``
    (``--config-namespace``), ``kind`` (the policy's custom-resource kind; ``None`` when
    ``--config-file`` is given or the policy has none: no configuration from resources),
    ``topology_interval`` (least seconds between NodeResourceTopology writes)."""

    node: str
    kubeconfig: str | None = None
    namespace: str = DEFAULT_CONFIG_NAMESPACE
    kind: str | None = None
    topology_interval: float = 1.0


def agent_settings(data: Mapping[str, Any] | None) -> AgentSettings | None:
    """The settings from the composition's ``agent`` config key (``None``: no agent)."""
    if not data:
        return None
    return AgentSettings(**data)


def node_agent(settings: AgentSettings | None) -> NodeAgent | None:
    """The daemon's agent over a real API server, or ``None`` when it is off. Raises
    ``ClusterError`` when neither the kubeconfig nor the service account is usable."""
    if settings is None:
        return None
    from nrirp.adapters.kubernetes.lightkube_cluster import LightkubeCluster, client_config

    cluster = LightkubeCluster(client_config(settings.kubeconfig))
    return agent_over(cluster, settings)


def kubernetes_agent(data: Mapping[str, Any] | None) -> Kubernetes | None:
    """The daemon's ``kubernetes`` adapter from its ``agent`` config key (see
    :class:`AgentSettings`; none or empty: no agent)."""
    return node_agent(agent_settings(data))


def agent_over(cluster: ClusterApi, settings: AgentSettings) -> NodeAgent:
    from nrirp.adapters.kubernetes.agent import NodeAgent

    return NodeAgent(
        cluster,
        node=settings.node,
        namespace=settings.namespace,
        kind=settings.kind,
        topology_interval=settings.topology_interval,
    )


class CustomResourceApplier:
    """Applies the resource the agent chose through ``reloads`` (the reload path the config
    file takes) and says how it went (``ConfigStatus``)."""

    def __init__(self, reloads: ConfigReloads, policy: str, specs: PolicySpecs) -> None:
        self.reloads = reloads
        self.policy = policy
        self.specs = specs

    async def __call__(self, choice: ConfigChoice) -> ConfigStatus:
        outcome = await self.reloads.reload(
            ReloadRequest(
                trigger=f"custom resource {choice.source}, generation {choice.generation}",
                source=f"custom resource {choice.source}",
                generation=choice.generation,
                load=functools.partial(
                    load_policy_config, self.policy, choice.document, self.specs
                ),
            )
        )
        return ConfigStatus(outcome.applied, errors=outcome.problems)


def daemon_topology_hints(
    sysfs_root: str | None, pod_resources_socket: str | None
) -> TopologyHintSource:
    """The daemon's hints: sysfs (mounts, devices), then the kubelet's pod resources, asked
    only while the configuration in force has ``agent.podResourceAPI`` (see
    :func:`follow_pod_resources`)."""
    from nrirp.adapters.podresources import CombinedHints, PodResourceHints, PodResourcesClient
    from nrirp.adapters.sysfs import SysfsTopologyHints

    client = PodResourcesClient(pod_resources_socket or DEFAULT_POD_RESOURCES_SOCKET)
    return CombinedHints(
        SysfsTopologyHints(sysfs_root or "/sys"),
        PodResourceHints(client, enabled=lambda: False),
    )


def follow_pod_resources(hints: object, manager: ResourceManager) -> None:
    """Turn the pod-resources hints of ``hints`` on and off with the configuration in force
    (``agent.podResourceAPI``), whatever applied it (start, the config file, a resource)."""
    from nrirp.adapters.podresources import PodResourceHints

    def wanted() -> bool:
        config = manager.config
        return config is not None and config.agent.pod_resource_api

    for source in getattr(hints, "sources", (hints,)):
        if isinstance(source, PodResourceHints):
            source.enabled = wanted
