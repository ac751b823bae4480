"""Requests of containers whose pod carries no policy annotation, remembered.

Such a container's request and classes depend only on the configuration, its pod's QoS class
and namespace and its requirements (every annotation lookup answers the default), so
containers alike (hundreds of them in a Synchronize) share one worked-out request: each gets
a copy naming it (id, label, pod), the rest shared. A configuration change starts over.
"""

from __future__ import annotations

from nrirp.domain.model import RESOURCE_POLICY_DOMAIN, Container, Pod, QOSClass, Requirements
from nrirp.domain.policies.topology_aware.classes import Classes
from nrirp.domain.policies.topology_aware.config_index import ConfigIndex
from nrirp.domain.policies.topology_aware.preferences import Request, container_label

_Key = tuple[QOSClass | None, str, Requirements]

_KEPT = 1024
"""Kinds of request remembered; forgotten all at once when there are more."""


def annotated(pod: Pod) -> bool:
    """Does the pod carry a policy annotation (the policy must read them)? Searched in its
    keys joined (one search in C): a match across two keys would only mean reading them."""
    return RESOURCE_POLICY_DOMAIN in "\n".join(pod.annotations)


class RequestMemo:
    """Worked-out requests and classes by (QoS, namespace, requirements), for one
    configuration (``index``) at a time."""

    def __init__(self) -> None:
        self._index: ConfigIndex | None = None
        self._known: dict[_Key, tuple[Request, Classes]] = {}

    def get(
        self, index: ConfigIndex, pod: Pod, container: Container
    ) -> tuple[Request, Classes] | None:
        """The request of ``container`` (of ``pod``, which carries no policy annotation) if
        one like it was worked out under this configuration, else ``None``."""
        found = self._under(index).get((pod.qos_class, pod.namespace, container.requirements))
        if found is None:
            return None
        like, classes = found
        request = Request(
            container_id=container.id,
            label=container_label(pod, container),
            pod_id=container.pod_id,
            qos=like.qos,
            namespace=like.namespace,
            cpu=like.cpu,
            memory=like.memory,
            pin_cpu=like.pin_cpu,
            pin_memory=like.pin_memory,
            strict_hints=like.strict_hints,
            pick_by_hints=like.pick_by_hints,
            hint_limits=like.hint_limits,
        )
        return request, classes

    def put(
        self,
        index: ConfigIndex,
        pod: Pod,
        container: Container,
        request: Request,
        classes: Classes,
    ) -> None:
        """Remember ``request`` and ``classes``, worked out for ``container`` of ``pod`` (no
        policy annotation) under the configuration of ``index``."""
        known = self._under(index)
        if len(known) >= _KEPT:
            known.clear()
        known[pod.qos_class, pod.namespace, container.requirements] = (request, classes)

    def _under(self, index: ConfigIndex) -> dict[_Key, tuple[Request, Classes]]:
        """What is known under the configuration of ``index`` (a new one: nothing)."""
        if index is not self._index:
            self._index = index
            self._known = {}
        return self._known
