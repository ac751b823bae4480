"""Pod and container model: neutral resources, QoS, requirements, annotations and changes."""

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
from nrirp.domain.model.pod import Pod
from nrirp.domain.model.qos import QOSClass, qos_from_cgroup_parent, qos_from_resources
from nrirp.domain.model.requirements import (
    Requirements,
    burstable_memory_request,
    estimate_requirements,
)
from nrirp.domain.model.resources import LinuxResources
from nrirp.domain.model.shares import (
    cpu_limit_millis,
    millis_from_shares,
    quota_from_millis,
    shares_from_millis,
)

__all__ = [
    "HOST_CONTROLLER",
    "RESOURCE_POLICY_DOMAIN",
    "RUNTIME_CONTROLLER",
    "Adjustment",
    "AnnotationProblem",
    "AnnotationReader",
    "Container",
    "ContainerChangeError",
    "ContainerState",
    "Device",
    "HostChange",
    "IOPriority",
    "IOPriorityClass",
    "LinuxResources",
    "Mount",
    "PendingChanges",
    "Pod",
    "QOSClass",
    "Requirements",
    "Scheduling",
    "SchedulingPolicy",
    "Update",
    "burstable_memory_request",
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
