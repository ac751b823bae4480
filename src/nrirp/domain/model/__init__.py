"""Pod and container model: neutral resources, QoS, requirements, annotations and changes;
kubelet's arithmetic both ways (:mod:`.kubelet`) and pod specs as kubelet describes them
(:mod:`.pod_spec`)."""

from nrirp.domain.model.annotations import (
    RESOURCE_POLICY_DOMAIN,
    AnnotationProblem,
    AnnotationReader,
    effective_annotation,
    parse_bool,
    policy_key,
)
from nrirp.domain.model.changes import (
    HOST_CONTROLLER,
    RUNTIME_CONTROLLER,
    Adjustment,
    HostChange,
    IOPriority,
    IOPriorityClass,
    Mount,
    PendingChanges,
    Scheduling,
    SchedulingPolicy,
    Update,
)
from nrirp.domain.model.container import (
    Container,
    ContainerChangeError,
    ContainerState,
    Device,
)
from nrirp.domain.model.kubelet import (
    CgroupDriver,
    InvalidSpec,
    QOSClass,
    Resources,
    burstable_memory_request,
    container_resources,
    cpu_limit_millis,
    millis_from_shares,
    qos_from_cgroup_parent,
    qos_from_resources,
    quota_from_millis,
    shares_from_millis,
)
from nrirp.domain.model.pod import Pod
from nrirp.domain.model.requirements import Requirements, estimate_requirements
from nrirp.domain.model.resources import LinuxResources

__all__ = [
    "HOST_CONTROLLER",
    "RESOURCE_POLICY_DOMAIN",
    "RUNTIME_CONTROLLER",
    "Adjustment",
    "AnnotationProblem",
    "AnnotationReader",
    "CgroupDriver",
    "Container",
    "ContainerChangeError",
    "ContainerState",
    "Device",
    "HostChange",
    "IOPriority",
    "IOPriorityClass",
    "InvalidSpec",
    "LinuxResources",
    "Mount",
    "PendingChanges",
    "Pod",
    "QOSClass",
    "Requirements",
    "Resources",
    "Scheduling",
    "SchedulingPolicy",
    "Update",
    "burstable_memory_request",
    "container_resources",
    "cpu_limit_millis",
    "effective_annotation",
    "estimate_requirements",
    "millis_from_shares",
    "parse_bool",
    "policy_key",
    "qos_from_cgroup_parent",
    "qos_from_resources",
    "quota_from_millis",
    "shares_from_millis",
]
