"""containerd 1.6 (Debian bookworm's 1.6.20, NRI v0.1) run privately for the v0.1 tests.

containerd 1.6's NRI client reads ``/etc/nri/conf.json`` and appends ``/opt/nri/bin`` to PATH
(``nri.New``: ``DefaultConfPath`` and ``DefaultBinaryPath`` are constants, no configuration
option; the binary's strings show both paths). So the instance runs in a private mount
namespace (``unshare -m``, private propagation): ``/etc`` and ``/opt`` are overlaid with
empty ``nri`` directories and the instance's own ``etc-nri`` and ``opt-nri-bin`` directories
are bind-mounted there. The host's ``/etc`` and ``/opt`` are never written. The mounts vanish
with the namespace, when containerd and its shims are gone.

containerd reads ``conf.json`` again for every task it starts (``nri.New`` per call), so a
test changes it between pods with :meth:`Containerd16.write_nri_conf`.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import attrs

from tests.support.debian import fetch

from .containerd import Containerd
from .packages import HarnessSetupError, RuntimeBinaries, parse_containerd_version

CONTAINERD16_VERSION = "1.6.20"
CONTAINERD16_SUITE = "bookworm"


def fetch_containerd16(base: RuntimeBinaries) -> RuntimeBinaries:
    """``base`` (runc, busybox, CRI proto) with bookworm's containerd 1.6.20 and its ctr."""
    tree = fetch(CONTAINERD16_SUITE, ["containerd"])
    containerd = tree / "usr/bin/containerd"
    proc = subprocess.run(
        [str(containerd), "--version"], capture_output=True, text=True, timeout=30, check=False
    )
    version = parse_containerd_version(proc.stdout) if proc.returncode == 0 else proc.stderr
    if version != CONTAINERD16_VERSION:
        raise HarnessSetupError(
            f"Debian {CONTAINERD16_SUITE}'s containerd is {version!r}, the NRI v0.1 tests need "
            f"{CONTAINERD16_VERSION}"
        )
    return attrs.evolve(
        base, containerd=containerd, ctr=tree / "usr/bin/ctr", containerd_version=version
    )


class Containerd16(Containerd):
    """A private containerd 1.6 whose ``/etc/nri`` and ``/opt/nri/bin`` are its own."""

    @property
    def nri_etc(self) -> Path:
        """Bind-mounted on ``/etc/nri`` inside the instance's mount namespace."""
        return self.root / "etc-nri"

    @property
    def nri_bin(self) -> Path:
        """Bind-mounted on ``/opt/nri/bin``."""
        return self.root / "opt-nri-bin"

    def write_nri_conf(self, plugins: list[dict[str, object]], version: str = "0.1") -> None:
        """Write ``conf.json`` (no plugins: remove it, which turns NRI off)."""
        path = self.nri_etc / "conf.json"
        self.nri_etc.mkdir(parents=True, exist_ok=True)
        if not plugins:
            path.unlink(missing_ok=True)
            return
        path.write_text(json.dumps({"version": version, "plugins": plugins}))

    def install_exec_plugin(self, name: str, target: Path) -> Path:
        """``/opt/nri/bin/NAME``, a symlink to ``target`` (the runtime runs ``NAME invoke``)."""
        self.nri_bin.mkdir(parents=True, exist_ok=True)
        link = self.nri_bin / name
        link.unlink(missing_ok=True)
        link.symlink_to(target)
        return link

    def _command(self) -> list[str]:
        r = self.root
        for d in ("ns/etc/upper/nri", "ns/etc/work", "ns/opt/upper/nri/bin", "ns/opt/work"):
            (r / d).mkdir(parents=True, exist_ok=True)
        self.nri_etc.mkdir(parents=True, exist_ok=True)
        self.nri_bin.mkdir(parents=True, exist_ok=True)
        q = shlex.quote
        script = " && ".join(
            [
                f"mount -t overlay overlay -o lowerdir=/etc,upperdir={q(str(r / 'ns/etc/upper'))}"
                f",workdir={q(str(r / 'ns/etc/work'))} /etc",
                f"mount --bind {q(str(self.nri_etc))} /etc/nri",
                f"mount -t overlay overlay -o lowerdir=/opt,upperdir={q(str(r / 'ns/opt/upper'))}"
                f",workdir={q(str(r / 'ns/opt/work'))} /opt",
                f"mount --bind {q(str(self.nri_bin))} /opt/nri/bin",
                "exec " + " ".join(q(a) for a in super()._command()),
            ]
        )
        return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script]
