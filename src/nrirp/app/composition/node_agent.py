"""The node agent in a composition: building it, and applying the custom resource it follows.

:func:`node_agent` is the daemon's ``kubernetes`` adapter: a :class:`NodeAgent` over lightkube
(imported here, only when the agent is enabled) or ``None``. :class:`CustomResourceApplier` is
what the agent calls when another resource (or generation) configures the node: the document is
validated by the config loader and applied with ``ResourceManager.reconfigure``, as a reload of
the config file is; the outcome goes back on the resource as its status. The simulator builds
its agent over a :class:`~nrirp.adapters.kubernetes.FakeCluster` and uses the same applier.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from nrirp.adapters.kubernetes import ClusterApi, ConfigChoice, NodeAgent
from nrirp.domain.config import ConfigError, PolicyConfig, PolicySpecs, load_policy_config
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.ports.kubernetes import ConfigStatus, Kubernetes
from nrirp.domain.ports.topology_hints import TopologyHintSource

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
    return NodeAgent(
        cluster,
        node=settings.node,
        namespace=settings.namespace,
        kind=settings.kind,
        topology_interval=settings.topology_interval,
    )


class CustomResourceApplier:
    """Applies the resource the agent chose: load, reconfigure, report (``ConfigStatus``).

    ``on_applied(config)`` is called with the configuration in force after every applied
    one (the daemon follows its ``agent`` block there)."""

    def __init__(
        self,
        manager: ResourceManager,
        policy: str,
        specs: PolicySpecs,
        on_applied: Callable[[PolicyConfig], None] | None = None,
    ) -> None:
        self.manager = manager
        self.policy = policy
        self.specs = specs
        self.on_applied = on_applied

    def __call__(self, choice: ConfigChoice) -> ConfigStatus:
        trigger = f"custom resource {choice.source}, generation {choice.generation}"
        try:
            config = load_policy_config(self.policy, choice.document, self.specs)
        except ConfigError as exc:
            problems = exc.shown_problems()
            log.error(
                "reload (%s): not applied, the old configuration stays: %s",
                trigger,
                "; ".join(problems),
                extra={"fields": {"errors": problems}},
            )
            return ConfigStatus(False, errors=tuple(problems))
        if config == self.manager.config:
            log.info("reload (%s): the configuration in force already", trigger)
            self._applied(config)
            return ConfigStatus(True)
        outcome = self.manager.reconfigure(config)
        if not outcome.applied:
            log.error(
                "reload (%s): policy refused the configuration, the old one stays: %s",
                trigger,
                outcome.reason,
            )
            return ConfigStatus(False, errors=(outcome.reason,))
        log.info(
            "reload (%s): configuration applied; %d container updates", trigger, outcome.updates
        )
        self._applied(config)
        return ConfigStatus(True)

    def _applied(self, config: PolicyConfig) -> None:
        if self.on_applied is not None:
            self.on_applied(config)


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
