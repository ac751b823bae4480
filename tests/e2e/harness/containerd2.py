"""containerd 2.x (Debian forky's, 2.1.9 when this was written, built with NRI 0.8.0) run
privately for the e2e tests that also run on the newer runtime (``tests/e2e/test_containerd2.py``).

Debian forky is Debian's testing suite: its containerd moves with new uploads, so any 2.x is
accepted (the version found is in the tests' output); what must hold is that our plugins work
on the containerd 2 a node gets. runc stays bookworm's (forky's needs glibc 2.38); containerd
itself needs glibc 2.34.

containerd 2 reads version 2 configs by migrating them at every start (with a warning), so the
instance writes the version 3 schema an operator of containerd 2 writes: the CRI plugin split
into ``io.containerd.cri.v1.images`` (snapshotter, the sandbox image as a pinned image) and
``io.containerd.cri.v1.runtime`` (runtimes, CNI), streaming left in ``io.containerd.grpc.v1.cri``.
NRI is on by default in containerd 2; the harness sets every NRI field as it does for 1.7.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from tests.support.debian import fetch

from .config import ContainerdOptions, Layout, _q, common_sections
from .containerd import Containerd
from .packages import HarnessSetupError, RuntimeBinaries, containerd_version

CONTAINERD2_SUITE = "forky"
CONTAINERD2_MAJOR = "2"


def fetch_containerd2(base: RuntimeBinaries) -> RuntimeBinaries:
    """``base`` (runc, busybox, CRI proto) with Debian forky's containerd 2.x and its ctr."""
    tree = fetch(CONTAINERD2_SUITE, ["containerd"])
    containerd = tree / "usr/bin/containerd"
    for name in ("containerd", "containerd-shim-runc-v2", "ctr"):
        if not (tree / "usr/bin" / name).is_file():
            raise HarnessSetupError(
                f"{name} not found in Debian {CONTAINERD2_SUITE}'s containerd package at {tree}"
            )
    version, said = containerd_version(containerd)
    if version.split(".")[0] != CONTAINERD2_MAJOR:
        raise HarnessSetupError(
            f"Debian {CONTAINERD2_SUITE}'s containerd is {version}, these tests need a "
            f"containerd {CONTAINERD2_MAJOR}.x; `containerd --version` said {said!r}"
        )
    return attrs.evolve(
        base, containerd=containerd, ctr=tree / "usr/bin/ctr", containerd_version=version
    )


def render_config_v3(layout: Layout, runc: Path, options: ContainerdOptions) -> str:
    """The containerd 2 config (version 3 schema): private paths everywhere, NRI as asked, CRI
    for cgroupfs + runc; the same settings as :func:`.config.render_config` for 1.7."""
    images = "[plugins.'io.containerd.cri.v1.images'"
    runtime = "[plugins.'io.containerd.cri.v1.runtime'"
    r = layout.root
    return (
        common_sections(layout, options, 3)
        + f"""
{images}]
  snapshotter = "overlayfs"

{images}.pinned_images]
  sandbox = {_q(options.sandbox_image)}

{runtime}]
  disable_apparmor = true
  restrict_oom_score_adj = true

{runtime}.cni]
  bin_dirs = [{_q(r / "cni" / "bin")}]
  conf_dir = {_q(r / "cni" / "conf")}

{runtime}.containerd]
  default_runtime_name = "runc"

{runtime}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

{runtime}.containerd.runtimes.runc.options]
  BinaryName = {_q(runc)}
  Root = {_q(layout.runc_root)}
  SystemdCgroup = false

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

[plugins.'io.containerd.internal.v1.opt']
  path = {_q(r / "opt")}
"""
    )


class Containerd2(Containerd):
    """A private containerd 2.x, configured with the version 3 schema."""

    def _render_config(self) -> str:
        return render_config_v3(self.layout, self.binaries.runc, self.options)
