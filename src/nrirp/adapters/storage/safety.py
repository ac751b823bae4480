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
