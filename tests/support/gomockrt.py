"""Build the Go NRI reference tools (``nrimockrt``, ``nristub``) from ``tools/gomockrt``.

One place for tests and benchmarks: the build uses only Debian packages (about a minute the first
time) and is cached under ``$NRIRP_CACHE/gomockrt``. ``$NRIRP_GOMOCKRT_SRC`` selects another copy
of the sources. A failed build raises :class:`GomockrtBuildError` with the build log's tail:
callers fail loudly, never skip.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.debian import cache_root

REPO_ROOT = Path(__file__).resolve().parents[2]


class GomockrtBuildError(RuntimeError):
    pass


def gomockrt_source() -> Path:
    """The gomockrt sources: ``tools/gomockrt`` in this checkout, or ``$NRIRP_GOMOCKRT_SRC``."""
    override = os.environ.get("NRIRP_GOMOCKRT_SRC")
    return Path(override) if override else REPO_ROOT / "tools" / "gomockrt"


def build_gomockrt(timeout: float = 900.0) -> Path:
    """Build (or reuse) the tools; returns the directory holding ``bin/nristub`` and
    ``bin/nrimockrt``."""
    ensure = gomockrt_source() / "ensure.sh"
    if not ensure.is_file():
        raise GomockrtBuildError(f"{ensure} not found (set $NRIRP_GOMOCKRT_SRC to the sources)")
    target = cache_root() / "gomockrt"
    env = {**os.environ, "GOMOCKRT_DIR": str(target)}
    proc = subprocess.run(
        ["bash", str(ensure)], capture_output=True, text=True, env=env, timeout=timeout, check=False
    )
    build_log = Path(f"{target}.build.log")
    if proc.returncode != 0:
        tail = build_log.read_text(errors="replace")[-4000:] if build_log.exists() else ""
        raise GomockrtBuildError(
            f"building the Go NRI tools failed (exit {proc.returncode}): {proc.stderr.strip()}\n"
            f"--- {build_log} (tail) ---\n{tail}"
        )
    directory = Path(proc.stdout.strip().splitlines()[-1])
    for tool in ("nristub", "nrimockrt"):
        if not os.access(directory / "bin" / tool, os.X_OK):
            raise GomockrtBuildError(f"{directory}/bin/{tool} missing after a successful build")
    return directory
