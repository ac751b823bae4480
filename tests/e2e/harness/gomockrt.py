"""The Go reference tools from shared/tools/gomockrt (the no-op Go NRI plugin ``nristub``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.debian import cache_root

from .packages import HarnessSetupError

REPO_ROOT = Path(__file__).resolve().parents[3]


def gomockrt_source() -> Path:
    """``shared/tools/gomockrt`` beside the checkout (override with ``$NRIRP_GOMOCKRT_SRC``)."""
    override = os.environ.get("NRIRP_GOMOCKRT_SRC")
    return Path(override) if override else REPO_ROOT.parent / "shared" / "tools" / "gomockrt"


def build_gomockrt(timeout: float = 900.0) -> Path:
    """Build (or reuse) the Go tools with their ``ensure.sh``; returns the directory holding
    ``bin/nristub`` and ``bin/nrimockrt``. Cached in ``$NRIRP_CACHE/gomockrt``."""
    ensure = gomockrt_source() / "ensure.sh"
    if not ensure.is_file():
        raise HarnessSetupError(
            f"{ensure} not found: the e2e suite needs shared/tools/gomockrt beside the checkout "
            "(or $NRIRP_GOMOCKRT_SRC pointing at it)"
        )
    target = cache_root() / "gomockrt"
    env = {**os.environ, "GOMOCKRT_DIR": str(target)}
    proc = subprocess.run(
        ["bash", str(ensure)], capture_output=True, text=True, env=env, timeout=timeout, check=False
    )
    build_log = Path(f"{target}.build.log")
    if proc.returncode != 0:
        tail = build_log.read_text(errors="replace")[-4000:] if build_log.exists() else ""
        raise HarnessSetupError(
            f"building the Go NRI tools failed (exit {proc.returncode}): {proc.stderr.strip()}\n"
            f"--- {build_log} (tail) ---\n{tail}"
        )
    directory = Path(proc.stdout.strip().splitlines()[-1])
    for tool in ("nristub", "nrimockrt"):
        if not os.access(directory / "bin" / tool, os.X_OK):
            raise HarnessSetupError(f"{directory}/bin/{tool} missing after a successful build")
    return directory
