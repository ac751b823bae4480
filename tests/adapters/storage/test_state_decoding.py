"""Odd state files: every one is refused with a one-line reason naming the file, read at most up
to the size cap, and left as it was for inspection."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nrirp.adapters.storage import MAX_STATE_DEPTH, MAX_STATE_FILE_SIZE, FileStateStore
from nrirp.adapters.storage.decoding import decode_state
from nrirp.domain.ports.state_store import StateStoreError


def nested(depth: int) -> bytes:
    """An object nesting ``depth`` containers in all (the outer object included)."""
    return b'{"a":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


def write(content: bytes) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.write_bytes(content)
        os.chmod(path, 0o600)

    return make


def sparse(size: int) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        with open(path, "wb") as handle:
            handle.truncate(size)
        os.chmod(path, 0o600)

    return make


def fifo(path: Path) -> None:
    os.mkfifo(path, 0o600)


def directory(path: Path) -> None:
    path.mkdir()


def dangling_symlink(path: Path) -> None:
    path.symlink_to(path.parent / "nowhere")


ODD_FILES: dict[str, tuple[Callable[[Path], None], str]] = {
    "deeply nested (RecursionError in json)": (write(nested(100_000)), "nested more than 64"),
    "nested one level too deep": (write(nested(MAX_STATE_DEPTH + 1)), "nested more than 64"),
    "larger than the cap": (sparse(MAX_STATE_FILE_SIZE + 1), "larger than 33554432 bytes"),
    "truncated": (write(b'{"version": 1, "pods": [{"id": "p"'), "not valid JSON: Expecting"),
    "empty": (write(b""), "not valid JSON: Expecting value"),
    "not UTF-8": (write(b'{"a": "\xc3\x28"}'), "not UTF-8 text: invalid byte at offset 7"),
    "UTF-16": (write('{"a": 1}'.encode("utf-16")), "not UTF-8 text"),
    "NaN": (write(b'{"created_at": NaN}'), "not valid JSON: NaN is not a JSON number"),
    "Infinity": (write(b'{"a": -Infinity}'), "not valid JSON: -Infinity is not a JSON number"),
    "huge integer": (write(b'{"a": ' + b"9" * 5000 + b"}"), "not valid JSON: Exceeds the limit"),
    "a list": (write(b"[1, 2]"), "holds a JSON list, not an object"),
    "a string": (write(b'"cache"'), "holds a JSON str, not an object"),
    "null": (write(b"null"), "holds a JSON NoneType, not an object"),
    "a directory": (directory, "is not a regular file (a directory)"),
    "a FIFO (must not hang)": (fifo, "is not a regular file (a FIFO)"),
    "a dangling symlink": (dangling_symlink, "is not a regular file (a symlink)"),
}


@pytest.mark.parametrize("case", sorted(ODD_FILES))
def test_odd_state_files_are_refused_with_one_line(tmp_path: Path, case: str) -> None:
    make, reason = ODD_FILES[case]
    path = tmp_path / "cache"
    make(path)
    before = path.lstat()
    store = FileStateStore(tmp_path)
    with pytest.raises(StateStoreError) as err:
        store.load()
    message = str(err.value)
    assert message.startswith(f"state file {path} ")
    assert reason in message
    assert "\n" not in message and len(message) < 400
    after = path.lstat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    store.close()


def test_a_file_at_the_cap_is_read(tmp_path: Path) -> None:
    body = b'{"pad": "'
    content = body + b"x" * (4096 - len(body) - 2) + b'"}'
    store = FileStateStore(tmp_path, max_size=len(content))
    (tmp_path / "cache").write_bytes(content)
    os.chmod(tmp_path / "cache", 0o600)
    assert store.load() == {"pad": "x" * (4096 - len(body) - 2)}
    store.close()
    (tmp_path / "cache").write_bytes(content + b" ")
    again = FileStateStore(tmp_path, max_size=len(content))
    with pytest.raises(StateStoreError, match="larger than 4096 bytes"):
        again.load()
    again.close()


def test_nesting_at_the_limit_is_accepted() -> None:
    assert decode_state(nested(MAX_STATE_DEPTH), "cache") == {"a": nested_list(MAX_STATE_DEPTH - 1)}


def nested_list(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


DOCUMENTS = JSON.map(lambda v: json.dumps(v).encode())
TRUNCATED = st.tuples(DOCUMENTS, st.integers(0, 200)).map(lambda t: t[0][: t[1]])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=200), DOCUMENTS, TRUNCATED))
def test_any_bytes_decode_to_an_object_or_one_line_error(raw: bytes) -> None:
    try:
        data = decode_state(raw, "/state/cache")
    except StateStoreError as exc:
        message = str(exc)
        assert message.startswith("state file /state/cache ")
        assert "\n" not in message and len(message) < 400
    else:
        assert isinstance(data, dict)
