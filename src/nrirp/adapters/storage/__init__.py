"""State storage adapters: the daemon's file store (``<state-dir>/cache``)."""

from nrirp.adapters.storage.file_store import STATE_FILE_NAME, FileStateStore
from nrirp.adapters.storage.safety import check_not_shared_writable

__all__ = ["STATE_FILE_NAME", "FileStateStore", "check_not_shared_writable"]
