"""The runtime binaries the e2e harness runs, fetched from Debian and checked."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import attrs

from tests.support.debian import fetch

CONTAINERD_VERSION = "1.7.24"
CONTAINERD_SUITE = "trixie"  # bookworm's containerd is 1.6 (NRI v0.1 only)
RUNC_SUITE = "bookworm"  # trixie's runc needs glibc 2.38
BUSYBOX_SUITE = "bookworm"
CRI_API_SUITE = "trixie"
CRI_API_PROTO = "usr/share/gocode/src/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto"


class HarnessSetupError(RuntimeError):
    """The e2e harness cannot be set up; the message says why and what to check."""


@attrs.frozen
class RuntimeBinaries:
    """Unpacked containerd (with ctr and the runc v2 shim), runc, busybox and the CRI proto."""

    containerd: Path
    ctr: Path
    runc: Path
    busybox: Path
    cri_proto: Path
    containerd_version: str

    @property
    def bin_dirs(self) -> tuple[Path, ...]:
        """Directories to put first on containerd's PATH (it looks shims up there)."""
        return (self.containerd.parent, self.runc.parent)


def parse_containerd_version(output: str) -> str:
    """The x.y.z version in ``containerd --version`` output (Debian adds ``~ds1`` suffixes)."""
    match = re.search(r"\s(\d+\.\d+\.\d+)", output)
    if match is None:
        raise HarnessSetupError(
            f"cannot find a version in `containerd --version` output {output!r}"
        )
    return match.group(1)


def containerd_version(containerd: Path) -> tuple[str, str]:
    """The x.y.z version of the ``containerd`` binary and the line it printed; raises
    :class:`HarnessSetupError` when it cannot say."""
    proc = subprocess.run(
        [str(containerd), "--version"], capture_output=True, text=True, timeout=30, check=False
    )
    if proc.returncode != 0:
        raise HarnessSetupError(
            f"{containerd} --version failed (exit {proc.returncode}): {proc.stderr.strip()}"
        )
    return parse_containerd_version(proc.stdout), proc.stdout.strip()


def _require_file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise HarnessSetupError(f"{what} not found at {path} (the Debian package layout changed?)")
    return path


def fetch_runtime_binaries(expected_version: str = CONTAINERD_VERSION) -> RuntimeBinaries:
    """Download (cached) and unpack the packages, then check containerd's version."""
    containerd_tree = fetch(CONTAINERD_SUITE, ["containerd"])
    runc_tree = fetch(RUNC_SUITE, ["runc"])
    busybox_tree = fetch(BUSYBOX_SUITE, ["busybox-static"])
    cri_tree = fetch(CRI_API_SUITE, ["golang-github-kubernetes-cri-api-dev"])
    containerd = _require_file(containerd_tree / "usr/bin/containerd", "containerd")
    _require_file(containerd_tree / "usr/bin/containerd-shim-runc-v2", "containerd-shim-runc-v2")
    version, said = containerd_version(containerd)
    if version != expected_version:
        raise HarnessSetupError(
            f"Debian {CONTAINERD_SUITE}'s containerd is {version}, the e2e harness needs "
            f"{expected_version} (NRI v0.6.1); `containerd --version` said {said!r}"
        )
    return RuntimeBinaries(
        containerd=containerd,
        ctr=_require_file(containerd_tree / "usr/bin/ctr", "ctr"),
        runc=_require_file(runc_tree / "usr/sbin/runc", "runc"),
        busybox=_require_file(busybox_tree / "bin/busybox", "busybox"),
        cri_proto=_require_file(cri_tree / CRI_API_PROTO, "CRI api.proto"),
        containerd_version=version,
    )
