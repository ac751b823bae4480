"""The embedding API: the resource-manager engine for a host agent (``docs/embedding.md``).

- :class:`Engine`: build it with the agent's adapters (:meth:`Engine.build`), then call one
  method per pod/container lifecycle hook with neutral objects; get adjustments and updates.
- :class:`EmbeddedContainer`: the composition behind the engine, to compose by hand.
- :class:`KubernetesPod`: neutral pods and containers from Kubernetes pod specs.
- :func:`policy_modules_from_env`: the policy modules ``NRIRP_POLICY_MODULES`` names, for an
  engine on a given machine that should load them too.
- The neutral values and results, re-exported: :class:`Pod`, :class:`Container`,
  :class:`ContainerState`, :class:`LinuxResources`, :class:`Adjustment`, :class:`Update`,
  :class:`CreateResult`, :class:`ReconfigureOutcome`, :class:`StartOutcome`,
  :class:`OperationFailedError`, :class:`PolicyEvent`.
"""

from nrirp.app.composition.policies import policy_modules_from_env
from nrirp.app.embed.composition import EmbeddedContainer
from nrirp.app.embed.engine import CallbackRuntimeUpdates, ConfigSource, Engine
from nrirp.app.embed.kubernetes import KubernetesPod, ManifestError, resources_of
from nrirp.domain.model import (
    Adjustment,
    CgroupDriver,
    Container,
    ContainerState,
    LinuxResources,
    Pod,
    QOSClass,
    Resources,
    Update,
)
from nrirp.domain.pipeline import (
    CreateResult,
    OperationFailedError,
    ReconfigureOutcome,
    StartOutcome,
)
from nrirp.domain.policy import PolicyEvent

__all__ = [
    "Adjustment",
    "CallbackRuntimeUpdates",
    "CgroupDriver",
    "ConfigSource",
    "Container",
    "ContainerState",
    "CreateResult",
    "EmbeddedContainer",
    "Engine",
    "KubernetesPod",
    "LinuxResources",
    "ManifestError",
    "OperationFailedError",
    "Pod",
    "PolicyEvent",
    "QOSClass",
    "ReconfigureOutcome",
    "Resources",
    "StartOutcome",
    "Update",
    "policy_modules_from_env",
    "resources_of",
]
