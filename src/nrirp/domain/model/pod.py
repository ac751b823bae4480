"""Pods (sandboxes) as the cache knows them."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from nrirp.domain.model._frozen import frozen_map
from nrirp.domain.model.kubelet import QOSClass, qos_from_cgroup_parent
from nrirp.domain.model.resources import LinuxResources


@attrs.frozen(hash=False)
class Pod:
    """A pod sandbox: identity, Kubernetes metadata, cgroup parent and QoS class.

    ``qos_class`` defaults to what the cgroup parent says; it is ``None`` when the parent does
    not tell, and the resource manager then derives it from the pod's containers.
    """

    id: str
    name: str = ""
    uid: str = ""
    namespace: str = ""
    labels: Mapping[str, str] = attrs.field(factory=dict, converter=frozen_map)
    annotations: Mapping[str, str] = attrs.field(factory=dict, converter=frozen_map)
    cgroup_parent: str = ""
    runtime_handler: str = ""
    resources: LinuxResources | None = None
    overhead: LinuxResources | None = None
    qos_class: QOSClass | None = attrs.field(
        default=attrs.Factory(
            lambda self: qos_from_cgroup_parent(self.cgroup_parent), takes_self=True
        )
    )
    created_at: float | None = None
    """Clock time when the cache first saw the pod."""
