"""Reading and decoding the state file within a budget: size, nesting, plain JSON only.

Whatever is in the file, the outcome is the decoded object or one :class:`StateStoreError`
with a one-line reason naming the file; never a traceback, never more than
:data:`MAX_STATE_FILE_SIZE` bytes read.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any, NoReturn

from nrirp.adapters.storage.safety import check_private
from nrirp.domain.ports.state_store import StateStoreError

MAX_STATE_FILE_SIZE = 32 * 1024 * 1024
"""Bytes; a larger state file is refused unread. The daemon writes a few hundred bytes per
container (about 250 with the template policy), so this is tens of thousands of containers."""

MAX_STATE_DEPTH = 64
"""Nesting of objects and arrays; far above what the daemon writes (4 with the template policy)."""

_QUOTE_LIMIT = 200


def read_state_file(path: str, max_size: int = MAX_STATE_FILE_SIZE) -> bytes | None:
    """The bytes of the state file at ``path``, or ``None`` if there is none.

    Refuses (``StateStoreError``) a path that is not a regular file (symlinks are not
    followed, a FIFO or device is never read), a file not owned by the daemon's user or
    writable by group or others, and one larger than ``max_size``.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(path):
            raise StateStoreError(f"state file {path} is not a regular file (a symlink)") from None
        raise StateStoreError(f"cannot read state file {path}: {exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise StateStoreError(f"state file {path} is not a regular file ({_kind(st)})")
        check_private(path, st, "state file")
        if st.st_size > max_size:
            _too_large(path, st.st_size, max_size)
        chunks: list[bytes] = []
        size = 0
        while size <= max_size:  # the file may grow after fstat: never read past the cap
            chunk = os.read(fd, min(1 << 20, max_size + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_size:
            _too_large(path, size, max_size)
        return b"".join(chunks)
    except OSError as exc:
        raise StateStoreError(f"cannot read state file {path}: {exc}") from None
    finally:
        os.close(fd)


def decode_state(raw: bytes, path: str, max_depth: int = MAX_STATE_DEPTH) -> dict[str, Any]:
    """The JSON object in ``raw``: UTF-8, standard JSON (no ``NaN``/``Infinity``), nested at
    most ``max_depth`` deep. Anything else is a ``StateStoreError`` naming ``path``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StateStoreError(
            f"state file {path} is not UTF-8 text: invalid byte at offset {exc.start}"
        ) from None
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise StateStoreError(
            f"state file {path} is nested more than {max_depth} levels deep"
        ) from None
    except ValueError as exc:  # JSONDecodeError, a huge integer, NaN/Infinity
        raise StateStoreError(f"state file {path} is not valid JSON: {_one_line(exc)}") from None
    if not isinstance(data, dict):
        raise StateStoreError(
            f"state file {path} holds a JSON {type(data).__name__}, not an object"
        )
    if _depth_exceeds(data, max_depth):
        raise StateStoreError(f"state file {path} is nested more than {max_depth} levels deep")
    return data


def _depth_exceeds(data: Any, limit: int) -> bool:
    """True if ``data`` nests containers more than ``limit`` deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _too_large(path: str, size: int, limit: int) -> NoReturn:
    raise StateStoreError(
        f"state file {path} is larger than {limit} bytes ({size} bytes or more): refused unread"
    )


def _kind(st: os.stat_result) -> str:
    mode = st.st_mode
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return f"mode {mode:o}"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if len(text) > _QUOTE_LIMIT:
        text = text[:_QUOTE_LIMIT] + "..."
    return text
