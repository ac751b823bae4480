"""Headless Chromium for tests that look at a page in a real browser.

Debian's ``chromium`` is installed with apt when it is missing (the tests run as root in CI,
as the e2e suite does; nothing is skipped: a failed install fails the test with apt's output).
Chromium runs with a new empty profile, no sandbox (root), no GPU, and no background
networking, so it opens no connection of its own.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.support.debian import cache_root

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


class ChromiumError(RuntimeError):
    pass


def chromium() -> str:
    """The Chromium binary, installed from Debian if it is not there yet."""
    if os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    lock = cache_root() / "chromium-install.lock"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not os.access(CHROMIUM, os.X_OK):
            _apt_install("chromium")
    if not os.access(CHROMIUM, os.X_OK):
        raise ChromiumError(f"apt installed chromium but {CHROMIUM} is not there")
    return CHROMIUM


def _apt_install(package: str) -> None:
    if shutil.which("apt-get") is None:
        raise ChromiumError("no apt-get to install Debian's chromium with")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", package]
    done = subprocess.run(install, capture_output=True, text=True, timeout=900, env=env)
    if done.returncode != 0:  # maybe the package lists are old or missing: refresh, retry
        subprocess.run(["apt-get", "update"], capture_output=True, timeout=600, env=env)
        done = subprocess.run(install, capture_output=True, text=True, timeout=900, env=env)
    if done.returncode != 0:
        raise ChromiumError(
            f"apt-get install {package} failed (exit {done.returncode}):\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )


def screenshot(url: str, out: Path, width: int = 1200, height: int = 900) -> bytes:
    """A PNG of ``url`` (a ``file://`` page) as headless Chromium renders it."""
    with tempfile.TemporaryDirectory(prefix="nrirp-chromium-") as profile:
        argv = [
            chromium(),
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            f"--screenshot={out}",
            url,
        ]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or not out.exists():
        raise ChromiumError(f"chromium failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return out.read_bytes()
