"""The nrirp end-to-end harness: a private containerd 1.7.24 (or 2.x) with NRI, driven through CRI.

Start with the fixtures in ``tests/e2e/conftest.py``; the pieces:

- :mod:`.packages`: Debian packages (containerd, runc, busybox, CRI proto), version check.
- :mod:`.cri_proto`: the CRI API compiled from Debian's ``api.proto`` at test time.
- :mod:`.image`: the busybox OCI image archive, imported with ``ctr``.
- :mod:`.containerd`: :class:`Containerd`, one instance in a private directory (start, stop,
  restart, pre-launched plugins, full teardown).
- :mod:`.kubelet`: :class:`Kubelet`, kubelet-like pod/container lifecycle and checks.
- :mod:`.resources`: CRI resource numbers from nrirp's kubelet arithmetic (shared with the
  simulated runtime).
- :mod:`.cgroups`: cgroup v1/v2 reading from a PID.
- :mod:`.plugins`: :class:`PluginProcess` and pre-launched plugin wrapper scripts.
- :mod:`.containerd2`, :mod:`.containerd16`: containerd 2.x (version 3 config) and 1.6.20 (NRI
  v0.1, private mount namespace); :mod:`.facts`: what differs between releases.
- ``build_gomockrt`` (from ``tests/support/gomockrt.py``): builds the vendored Go reference
  tools in ``tools/gomockrt`` (the plugin ``nristub``).
"""

from tests.support.gomockrt import build_gomockrt

from .cgroups import CgroupView, CpuSettings, shares_to_weight
from .config import ContainerdOptions, Layout
from .containerd import Containerd, ContainerdError, PrelaunchedPlugin
from .cri_proto import CriApi, compile_cri_api, load_cri_api
from .image import IMAGE_REF, ImageArchive, build_oci_archive
from .kubelet import ContainerSpec, CriError, ExecResult, Kubelet, Pod, PodSpec
from .packages import CONTAINERD_VERSION, HarnessSetupError, RuntimeBinaries, fetch_runtime_binaries
from .plugins import PluginProcess, PluginProcessError
from .resources import QOSClass, Resources, quota_from_millis, shares_from_millis

__all__ = [
    "CONTAINERD_VERSION",
    "IMAGE_REF",
    "CgroupView",
    "ContainerSpec",
    "Containerd",
    "ContainerdError",
    "ContainerdOptions",
    "CpuSettings",
    "CriApi",
    "CriError",
    "ExecResult",
    "HarnessSetupError",
    "ImageArchive",
    "Kubelet",
    "Layout",
    "PluginProcess",
    "PluginProcessError",
    "Pod",
    "PodSpec",
    "PrelaunchedPlugin",
    "QOSClass",
    "Resources",
    "RuntimeBinaries",
    "build_gomockrt",
    "build_oci_archive",
    "compile_cri_api",
    "fetch_runtime_binaries",
    "load_cri_api",
    "quota_from_millis",
    "shares_from_millis",
    "shares_to_weight",
]
