"""Policy configuration models: the reference's CRD specs as typed, validated attrs values.

Entry points: :func:`load_policy_config` (parsed data -> :class:`PolicyConfig`, or one
:class:`ConfigError` listing the problems; text goes through
``nrirp.adapters.documents.load_policy_config``), :func:`unstructure_policy_config` (back to the
reference's key names). Both take the policy registry as :class:`PolicySpecs` (which spec class
and custom-resource kind each policy has; default: the built-in policies).
"""

from nrirp.domain.config.agent import AgentConfig
from nrirp.domain.config.balloons import (
    BUILTIN_DEFAULT,
    BUILTIN_RESERVED,
    BalloonComponent,
    BalloonsPolicySpec,
    BalloonType,
    LoadClass,
)
from nrirp.domain.config.blockio import BlockIOConfig, DeviceParameters, IOWeight
from nrirp.domain.config.control import ControlConfig, CPUControlClass, CPUControlConfig
from nrirp.domain.config.cpu_class import CPUClass, Frequency
from nrirp.domain.config.document import API_VERSION
from nrirp.domain.config.duration import Duration, DurationError
from nrirp.domain.config.enums import (
    BurstableLevel,
    ComponentCreation,
    CoreTypePreference,
    CPUPriority,
    CPUTopologyLevel,
    FrequencyKeyword,
    IOClass,
    IRQMode,
    KlogSeverity,
    LoadLevel,
    LogExporter,
    MemoryKind,
    MetricsExporter,
    QoSClass,
    SchedulingFlag,
    SchedulingPolicy,
    TurboDomain,
)
from nrirp.domain.config.errors import ConfigError, ConfigProblem
from nrirp.domain.config.expression import ContainerMatch, Expression, Operator
from nrirp.domain.config.instrumentation import InstrumentationConfig, MetricsConfig
from nrirp.domain.config.loader import (
    PolicyConfig,
    dump_policy_config,
    load_policy_config,
    unstructure_policy_config,
)
from nrirp.domain.config.log import KlogConfig, LogConfig
from nrirp.domain.config.privileged import PrivilegedAnnotationsConfig
from nrirp.domain.config.quantity import Quantity, QuantityError, QuantityFormat
from nrirp.domain.config.rdt import (
    BandwidthAllocation,
    CacheAllocation,
    CacheShare,
    RDTClass,
    RDTConfig,
    RDTFeatureOptions,
    RDTKubernetesOptions,
    RDTOptions,
    RDTPartition,
)
from nrirp.domain.config.registry import PolicySpecs, SpecRegistration
from nrirp.domain.config.resources import CPUResource, ResourceConstraints
from nrirp.domain.config.scheduling import SchedulingClass
from nrirp.domain.config.template import NonePolicySpec, TemplatePolicySpec
from nrirp.domain.config.topology_aware import TopologyAwarePolicySpec

__all__ = [
    "API_VERSION",
    "BUILTIN_DEFAULT",
    "BUILTIN_RESERVED",
    "AgentConfig",
    "BalloonComponent",
    "BalloonType",
    "BalloonsPolicySpec",
    "BandwidthAllocation",
    "BlockIOConfig",
    "BurstableLevel",
    "CPUClass",
    "CPUControlClass",
    "CPUControlConfig",
    "CPUPriority",
    "CPUResource",
    "CPUTopologyLevel",
    "CacheAllocation",
    "CacheShare",
    "ComponentCreation",
    "ConfigError",
    "ConfigProblem",
    "ContainerMatch",
    "ControlConfig",
    "CoreTypePreference",
    "DeviceParameters",
    "Duration",
    "DurationError",
    "Expression",
    "Frequency",
    "FrequencyKeyword",
    "IOClass",
    "IOWeight",
    "IRQMode",
    "InstrumentationConfig",
    "KlogConfig",
    "KlogSeverity",
    "LoadClass",
    "LoadLevel",
    "LogConfig",
    "LogExporter",
    "MemoryKind",
    "MetricsConfig",
    "MetricsExporter",
    "NonePolicySpec",
    "Operator",
    "PolicyConfig",
    "PolicySpecs",
    "PrivilegedAnnotationsConfig",
    "QoSClass",
    "Quantity",
    "QuantityError",
    "QuantityFormat",
    "RDTClass",
    "RDTConfig",
    "RDTFeatureOptions",
    "RDTKubernetesOptions",
    "RDTOptions",
    "RDTPartition",
    "ResourceConstraints",
    "SchedulingClass",
    "SchedulingFlag",
    "SchedulingPolicy",
    "SpecRegistration",
    "TemplatePolicySpec",
    "TopologyAwarePolicySpec",
    "TurboDomain",
    "dump_policy_config",
    "load_policy_config",
    "unstructure_policy_config",
]
