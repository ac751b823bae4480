"""What a decision looks up in the configuration, built once per configuration.

Every CreateContainer asks whether the pod's namespace is a reserved one, which scheduling
class a name means, whether a CPU class exists, whether a privileged annotation is allowed in
the namespace. Answered from the spec's lists each time, a decision costs as much as the lists
are long (50,000 ``reservedPoolNamespaces``: seconds per container); the index answers with a
few lookups. The policy builds it at start and at every reconfiguration, nowhere else
(:data:`config_index` remembers it per configuration, so that one built ahead, off the
pipeline, is the one the reconfigure uses).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from nrirp.domain.config import ControlConfig, PrivilegedAnnotationsConfig, SchedulingClass
from nrirp.domain.config.derived import PerConfig
from nrirp.domain.config.policy_checks import cpu_class_names
from nrirp.domain.config.topology_aware import TopologyAwarePolicySpec
from nrirp.domain.matching import GlobSet, NamespaceFilter

KUBE_SYSTEM = "kube-system"


@attrs.frozen(eq=False)
class ConfigIndex:
    """``reserved_namespaces``: kube-system and ``reservedPoolNamespaces``; ``privileged``:
    where the privileged annotations are allowed; classes by name."""

    reserved_namespaces: GlobSet
    privileged: NamespaceFilter
    scheduling_classes: Mapping[str, SchedulingClass]
    cpu_classes: frozenset[str]
    rdt_classes: frozenset[str]
    blockio_classes: frozenset[str]

    @classmethod
    def of(
        cls,
        spec: TopologyAwarePolicySpec,
        control: ControlConfig | None = None,
        privileged: PrivilegedAnnotationsConfig | None = None,
    ) -> ConfigIndex:
        control = control or ControlConfig()
        return cls(
            reserved_namespaces=GlobSet((KUBE_SYSTEM, *spec.reserved_pool_namespaces)),
            privileged=NamespaceFilter(
                None if privileged is None else privileged.allowed_namespaces
            ),
            scheduling_classes={c.name: c for c in spec.scheduling_classes},
            cpu_classes=frozenset(cpu_class_names(spec.cpu_classes, control)),
            rdt_classes=frozenset(control.rdt.class_names()),
            blockio_classes=frozenset(control.blockio.classes),
        )


config_index = PerConfig(ConfigIndex.of)
"""``ConfigIndex.of`` remembered for the last configurations (by identity)."""
