"""State storage adapters: the daemon's file store (``<state-dir>/cache``)."""

from nrirp.adapters.storage.decoding import MAX_STATE_DEPTH, MAX_STATE_FILE_SIZE
from nrirp.adapters.storage.file_store import STATE_FILE_NAME, FileStateStore
from nrirp.adapters.storage.lock import LOCK_FILE_NAME, StateDirectoryInUseError
from nrirp.adapters.storage.safety import check_not_shared_writable

__all__ = [
    "LOCK_FILE_NAME",
    "MAX_STATE_DEPTH",
    "MAX_STATE_FILE_SIZE",
    "STATE_FILE_NAME",
    "FileStateStore",
    "StateDirectoryInUseError",
    "check_not_shared_writable",
]
