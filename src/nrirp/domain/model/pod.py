"""Pods (sandboxes) as the cache knows them."""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter

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

    def seen(self, *, created_at: float | None, qos_class: QOSClass | None) -> Pod:
        """This pod with ``created_at`` and ``qos_class`` (the cache's entry for it): every
        field read in one C call and passed to ``__init__`` in order, a little more than half
        the work of ``attrs.evolve`` (a Synchronize admits hundreds of pods)."""
        values = list(_FIELD_VALUES(self))
        values[_QOS_CLASS] = qos_class
        values[_CREATED_AT] = created_at
        return Pod(*values)


_FIELDS = tuple(field.name for field in attrs.fields(Pod))
_FIELD_VALUES = attrgetter(*_FIELDS)
_QOS_CLASS = _FIELDS.index("qos_class")
_CREATED_AT = _FIELDS.index("created_at")
