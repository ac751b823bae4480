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
- Specs: :class:`PodSpec`, :class:`ContainerSpec` (with :class:`DeviceSpec` and
  :class:`MountSpec`), :class:`Resources` (Kubernetes requests and limits) and the kubelet
  helpers in :mod:`.kubelet`.
- Observability: :class:`Journal` (``runtime.journal``) with :class:`PluginCall`,
  :class:`PluginEvent`, :class:`OperationRecord`.
- Errors: :class:`SimRuntimeError` and subclasses.
"""

from nrirp.adapters.nri.simruntime.emulation import CONTAINERD_1_7_24, HEAD, NriVersion
from nrirp.adapters.nri.simruntime.errors import (
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
from nrirp.adapters.nri.simruntime.journal import (
    CallOutcome,
    Journal,
    OperationRecord,
    PluginCall,
    PluginEvent,
    PluginEventKind,
)
from nrirp.adapters.nri.simruntime.kubelet import CgroupDriver, Resources
from nrirp.adapters.nri.simruntime.model import (
    ContainerState,
    ContainerStatus,
    PodSandboxStatus,
    PodState,
)
from nrirp.adapters.nri.simruntime.objects import ObjectStyle
from nrirp.adapters.nri.simruntime.options import RuntimeOptions
from nrirp.adapters.nri.simruntime.plugin import PluginInfo, PluginKind, PluginState
from nrirp.adapters.nri.simruntime.resources import EffectiveResources
from nrirp.adapters.nri.simruntime.runtime import SimRuntime
from nrirp.adapters.nri.simruntime.specs import ContainerSpec, DeviceSpec, MountSpec, PodSpec
from nrirp.domain.model.qos import QOSClass

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
