"""Refusing state that another user could have written."""

from __future__ import annotations

import os
import stat

from nrirp.domain.ports.state_store import StateStoreError

_SHARED_WRITE = stat.S_IWGRP | stat.S_IWOTH


def check_not_shared_writable(path: str, st: os.stat_result, what: str) -> None:
    """Raise :class:`StateStoreError` if ``st`` (of ``path``) is writable by group or others."""
    if st.st_mode & _SHARED_WRITE:
        mode = stat.S_IMODE(st.st_mode)
        raise StateStoreError(
            f"refusing {what} {path}: mode {mode:04o} lets group or others write it "
            f"(chmod go-w {path})"
        )


def check_owned_by_us(path: str, st: os.stat_result, what: str) -> None:
    """Raise :class:`StateStoreError` if ``st`` (of ``path``) is not owned by the effective user:
    its owner could change it behind the daemon's back."""
    euid = os.geteuid()
    if st.st_uid != euid:
        raise StateStoreError(
            f"refusing {what} {path}: owned by uid {st.st_uid}, not by the daemon's user "
            f"(uid {euid}) (chown {euid} {path})"
        )


def check_private(path: str, st: os.stat_result, what: str) -> None:
    """Both checks: owned by the daemon's user and not writable by group or others."""
    check_owned_by_us(path, st, what)
    check_not_shared_writable(path, st, what)
