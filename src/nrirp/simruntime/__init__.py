"""A simulated NRI container runtime: the runtime side of the protocol, in Python.

It behaves like containerd's embedded NRI adaptation (``pkg/adaptation``) of a chosen release
(``v0.6.1`` as in containerd 1.7.24 ... ``v0.12.2``): it accepts plugins on a socket, a handed-out
socketpair, or starts them pre-launched; registers, configures and synchronizes them (split into
chunks when large); sends pod and container events in plugin index order; merges adjustments and
updates with the ownership rules; enforces the request timeout and the lock discipline; and keeps
its own model of pods and containers, driven through a kubelet-shaped API. It is a fake for fast
tests and the simulator, not a substitute for a real runtime. See ``docs/simulated-runtime.md``.

Public API:

- :class:`SimRuntime` with :class:`RuntimeOptions`; statuses :class:`PodSandboxStatus`,
  :class:`ContainerStatus` (with :class:`EffectiveResources`), :class:`PluginInfo`.
- Specs, from the domain (:mod:`nrirp.domain.model.pod_spec`): :class:`PodSpec`,
  :class:`ContainerSpec` (with :class:`DeviceSpec` and :class:`MountSpec`), :class:`Resources`
  (Kubernetes requests and limits); kubelet's arithmetic is :mod:`nrirp.domain.model.kubelet`.
- Observability: :class:`Journal` (``runtime.journal``) with :class:`PluginCall`,
  :class:`PluginEvent`, :class:`OperationRecord`.
- Errors: :class:`SimRuntimeError` and subclasses.
"""

from nrirp.domain.model.kubelet import CgroupDriver, QOSClass, Resources
from nrirp.domain.model.pod_spec import ContainerSpec, DeviceSpec, MountSpec, PodSpec
from nrirp.simruntime.emulation import CONTAINERD_1_7_24, HEAD, NriVersion
from nrirp.simruntime.errors import (
    AdjustmentConflict,
    AdjustmentRejected,
    InvalidAdjustment,
    InvalidRequest,
    InvalidState,
    NotFound,
    OperationFailed,
    PluginFailed,
    PluginStartError,
    SimRuntimeError,
    Unsupported,
)
from nrirp.simruntime.journal import (
    CallOutcome,
    Journal,
    OperationRecord,
    PluginCall,
    PluginEvent,
    PluginEventKind,
)
from nrirp.simruntime.model import (
    ContainerState,
    ContainerStatus,
    PodSandboxStatus,
    PodState,
)
from nrirp.simruntime.objects import ObjectStyle
from nrirp.simruntime.options import RuntimeOptions
from nrirp.simruntime.plugin import PluginInfo, PluginKind, PluginState
from nrirp.simruntime.resources import EffectiveResources
from nrirp.simruntime.runtime import SimRuntime

__all__ = [
    "CONTAINERD_1_7_24",
    "HEAD",
    "AdjustmentConflict",
    "AdjustmentRejected",
    "CallOutcome",
    "CgroupDriver",
    "ContainerSpec",
    "ContainerState",
    "ContainerStatus",
    "DeviceSpec",
    "EffectiveResources",
    "InvalidAdjustment",
    "InvalidRequest",
    "InvalidState",
    "Journal",
    "MountSpec",
    "NotFound",
    "NriVersion",
    "ObjectStyle",
    "OperationFailed",
    "OperationRecord",
    "PluginCall",
    "PluginEvent",
    "PluginEventKind",
    "PluginFailed",
    "PluginInfo",
    "PluginKind",
    "PluginStartError",
    "PluginState",
    "PodSandboxStatus",
    "PodSpec",
    "PodState",
    "QOSClass",
    "Resources",
    "RuntimeOptions",
    "SimRuntime",
    "SimRuntimeError",
    "Unsupported",
]
