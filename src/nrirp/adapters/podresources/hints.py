"""Topology hints from the kubelet's pod-resources API (``agent.podResourceAPI``).

For a container being placed, :class:`PodResourceHints` asks the kubelet which devices it was
assigned (by the pod's namespace and name and the container's name, from the labels the
runtime reports) and turns each device plugin resource with NUMA topology into one hint:
provider ``podresapi:<resource name>``, the NUMA nodes of its devices, origin
``pod-resources``, path the device ids. Containers only get these hints when their
``topologyhints`` annotation asks for ``pod-resources`` (or ``all``); the balloons policy's
``preferCloseToDevices: [podresourceapi:<glob>]`` uses them too.

Nothing raises into the pipeline: a kubelet that does not answer within the client's deadline
gives no hints (one warning per minute at most).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from nrirp.adapters.podresources.client import PodResourcesClient, PodResourcesError
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container
from nrirp.domain.ports.topology_hints import TopologyHintSource
from nrirp.domain.topology.hints import HintOrigin, TopologyHint

log = logging.getLogger("nrirp.adapters.podresources")

POD_NAME = "io.kubernetes.pod.name"
POD_NAMESPACE = "io.kubernetes.pod.namespace"
CONTAINER_NAME = "io.kubernetes.container.name"
PROVIDER_PREFIX = "podresapi:"
_WARN_EVERY = 60.0


class PodResourceHints:
    """A :class:`TopologyHintSource` over a :class:`PodResourcesClient`, on while
    ``enabled()`` says so (the daemon: the config's ``agent.podResourceAPI``)."""

    def __init__(
        self,
        client: PodResourcesClient,
        enabled: Callable[[], bool] = lambda: True,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.enabled = enabled
        self._monotonic = monotonic
        self._warned_at = -_WARN_EVERY

    def hints(self, container: Container) -> Mapping[str, TopologyHint]:
        if not self.enabled():
            return {}
        labels = container.labels
        namespace, pod = labels.get(POD_NAMESPACE), labels.get(POD_NAME)
        name = labels.get(CONTAINER_NAME) or container.name
        if not namespace or not pod:
            return {}
        try:
            found = self.client.get(namespace, pod)
        except PodResourcesError as exc:
            now = self._monotonic()
            if now - self._warned_at >= _WARN_EVERY:
                self._warned_at = now
                log.warning("no pod-resources hints for %s/%s: %s", namespace, pod, exc)
            return {}
        if found is None:
            return {}
        out: dict[str, TopologyHint] = {}
        for ctr in found.containers:
            if ctr.name != name:
                continue
            for device in ctr.devices:
                nodes = CPUSet.from_ids(n.ID for n in device.topology.nodes if n.ID >= 0)
                if not nodes:
                    continue
                provider = PROVIDER_PREFIX + device.resource_name
                known = out.get(provider)
                ids = ",".join(device.device_ids)
                out[provider] = TopologyHint(
                    provider,
                    nodes=nodes | known.nodes if known else nodes,
                    origin=HintOrigin.POD_RESOURCES,
                    path=f"{known.path},{ids}" if known else ids,
                )
        return out


class CombinedHints:
    """The hints of several sources; on the same provider the first source wins."""

    def __init__(self, *sources: TopologyHintSource) -> None:
        self.sources = sources

    def hints(self, container: Container) -> Mapping[str, TopologyHint]:
        out: dict[str, TopologyHint] = {}
        for source in self.sources:
            for provider, hint in source.hints(container).items():
                out.setdefault(provider, hint)
        return out
