"""Fetch and unpack Debian packages into a private directory, leaving the system's apt alone.

Used by tests that need real artefacts (containerd, runc, busybox, the Go NRI and CRI protos).
Downloads are cached under ``$NRIRP_CACHE`` (default ``~/.cache/nrirp``) so repeated runs are fast.
Any failure raises :class:`DebianFetchError` with apt's output: callers fail loudly, never skip.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


class DebianFetchError(RuntimeError):
    pass


def cache_root() -> Path:
    root = Path(os.environ.get("NRIRP_CACHE", Path.home() / ".cache" / "nrirp"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def debian_mirror() -> str:
    """The mirror URI the system's own apt configuration uses."""
    sources = Path("/etc/apt/sources.list.d/debian.sources")
    if sources.exists():
        for line in sources.read_text().splitlines():
            if line.startswith("URIs:"):
                return line.split()[1]
    legacy = Path("/etc/apt/sources.list")
    if legacy.exists():
        for line in legacy.read_text().splitlines():
            parts = line.split()
            if parts and parts[0] == "deb":
                for p in parts[1:]:
                    if p.startswith("http"):
                        return p
    return "http://deb.debian.org/debian"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _apt(args: list[str], cwd: Path | None = None) -> None:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise DebianFetchError(
            f"{' '.join(args[:2])} ... failed (exit {proc.returncode}):\n"
            f"{proc.stdout}\n{proc.stderr}"
        )


def _apt_options(suite_dir: Path) -> list[str]:
    return [
        f"-oDir::Etc::SourceList={suite_dir / 'sources.list'}",
        "-oDir::Etc::SourceParts=/dev/null",
        f"-oDir::State::Lists={suite_dir / 'lists'}",
        f"-oDir::Cache={suite_dir / 'cache'}",
        "-oAPT::Sandbox::User=root",
        "-oDebug::NoLocking=1",
    ]


def fetch(suite: str, packages: list[str]) -> Path:
    """Download ``packages`` from Debian ``suite`` and unpack them (``dpkg -x``) into one tree.

    Returns the root of the unpacked tree. The result is cached per (suite, package set).
    """
    root = cache_root() / "debian" / suite
    key = "-".join(sorted(packages))
    tree = root / "trees" / key
    done = tree / ".unpacked"
    with _locked(root / ".lock"):
        if done.exists():
            return tree
        for sub in ("lists/partial", "cache/archives/partial", "debs"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        (root / "sources.list").write_text(
            f"deb [signed-by={KEYRING}] {debian_mirror()} {suite} main\n"
        )
        opts = _apt_options(root)
        if not any((root / "lists").glob("*_Packages*")):
            _apt(["apt-get", *opts, "update", "-q"])
        debs = root / "debs"
        missing = [p for p in packages if not list(debs.glob(f"{p}_*.deb"))]
        if missing:
            try:
                _apt(["apt-get", *opts, "download", "-q", *missing], cwd=debs)
            except DebianFetchError:
                # stale package lists (a new upload replaced the file): refresh once
                _apt(["apt-get", *opts, "update", "-q"])
                _apt(["apt-get", *opts, "download", "-q", *missing], cwd=debs)
        if tree.exists():
            shutil.rmtree(tree)
        tree.mkdir(parents=True)
        for p in packages:
            found = sorted(debs.glob(f"{p}_*.deb"))
            if not found:
                raise DebianFetchError(f"package {p} from {suite} was not downloaded")
            _apt(["dpkg", "-x", str(found[-1]), str(tree)])
        done.touch()
        return tree
