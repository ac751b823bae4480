"""SnapshotJsonEncoder: same bytes as json.dumps, re-encoding only elements that changed."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrirp.adapters.storage.json_encoding import SnapshotJsonEncoder

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
snapshots = st.dictionaries(
    st.text(max_size=8),
    json_values | st.lists(st.dictionaries(st.text(max_size=6), json_values, max_size=4)),
    max_size=6,
)


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


@given(first=snapshots, second=snapshots)
def test_output_equals_json_dumps_across_calls(
    first: dict[str, Any], second: dict[str, Any]
) -> None:
    encoder = SnapshotJsonEncoder()
    assert encoder.encode(first) == dumps(first)
    assert encoder.encode(second) == dumps(second)
    assert encoder.encode(first) == dumps(first)


class Counting(dict[str, Any]):
    encoded = 0

    def items(self) -> Any:
        Counting.encoded += 1
        return super().items()


def test_only_new_elements_are_encoded() -> None:
    encoder = SnapshotJsonEncoder()
    containers = [Counting(id=str(n), cpus="0-3") for n in range(1000)]
    Counting.encoded = 0
    text = encoder.encode({"version": 1, "containers": containers})
    assert Counting.encoded == 1000
    assert json.loads(text)["containers"][999] == {"id": "999", "cpus": "0-3"}

    Counting.encoded = 0
    changed = [*containers[:500], Counting(id="500", cpus="4"), *containers[501:]]
    text = encoder.encode({"version": 1, "containers": changed})
    assert Counting.encoded == 1  # only the replaced element
    assert json.loads(text)["containers"][500] == {"id": "500", "cpus": "4"}

    Counting.encoded = 0
    moved = changed[1:]  # a removal shifts everything: still found by identity
    text = encoder.encode({"version": 2, "containers": moved})
    assert Counting.encoded == 0
    assert text == dumps({"version": 2, "containers": moved})


def test_not_json_compatible_raises_like_json_dumps() -> None:
    encoder = SnapshotJsonEncoder()
    with pytest.raises(TypeError):
        encoder.encode({"containers": [{"bad": object()}]})
    with pytest.raises(ValueError):
        encoder.encode({"x": float("nan")})


@given(
    start=st.lists(st.dictionaries(st.text(max_size=4), json_values, max_size=5), max_size=4),
    edits=st.lists(
        st.tuples(st.integers(0, 3), st.text(max_size=4), json_values | st.just(None)),
        max_size=12,
    ),
)
def test_new_versions_of_elements_encode_like_json_dumps(
    start: list[dict[str, Any]], edits: list[tuple[int, str, Any]]
) -> None:
    """Elements replaced by new versions that share fields (changed, added, removed) give
    json.dumps's text after every edit."""
    encoder = SnapshotJsonEncoder()
    elements = list(start)
    assert encoder.encode({"containers": elements}) == dumps({"containers": elements})
    for position, key, value in edits:
        if not elements:
            break
        index = position % len(elements)
        version = dict(elements[index])  # the same objects in the other fields
        if value is None:
            version.pop(key, None)
        else:
            version[key] = value
        elements = [*elements[:index], version, *elements[index + 1 :]]
        assert encoder.encode({"containers": elements}) == dumps({"containers": elements})


class CountingList(list[Any]):
    encoded = 0

    def __iter__(self) -> Any:
        CountingList.encoded += 1
        return super().__iter__()


def test_fields_holding_the_same_objects_keep_their_text() -> None:
    encoder = SnapshotJsonEncoder()
    mounts = CountingList([{"destination": "/proc"}, {"destination": "/sys"}])
    first = {"id": "c", "cpus": "0-3", "mounts": mounts}
    encoder.encode({"containers": [first]})
    second = {**first, "cpus": "4"}
    third = {**second, "cpus": "5", "state": "running"}
    CountingList.encoded = 0
    encoder.encode({"containers": [second]})
    text = encoder.encode({"containers": [third]})
    assert CountingList.encoded == 1  # only the first new version encoded it again
    assert text == dumps({"containers": [third]})


def _write_through(
    encoder: SnapshotJsonEncoder, snapshot: dict[str, Any], path: Any, previous: Any
) -> Any:
    """Write ``snapshot`` as a file store does: draft, written to a new file drawing on the
    previous one, commit; returns the new file's path."""
    fd = None if previous is None else os.open(previous, os.O_RDONLY)
    try:
        read = None
        if fd is not None:
            held = fd

            def read(offset: int, length: int) -> str:
                return os.pread(held, length, offset).decode("ascii")

        draft = encoder.draft(snapshot)
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            draft.write(out, fd, read)
        finally:
            os.close(out)
    finally:
        if fd is not None:
            os.close(fd)
    encoder.commit(draft)
    assert encoder.in_file
    return path


@given(
    start=st.lists(st.dictionaries(st.text(max_size=4), json_values, max_size=5), max_size=5),
    edits=st.lists(
        st.tuples(st.integers(0, 4), st.text(max_size=4), json_values | st.just(None)),
        max_size=10,
    ),
    drop=st.integers(0, 5),
)
def test_texts_kept_in_the_file_written_last_give_json_dumps(
    tmp_path_factory: pytest.TempPathFactory,
    start: list[dict[str, Any]],
    edits: list[tuple[int, str, Any]],
    drop: int,
) -> None:
    """Each file equals json.dumps of its snapshot when the unchanged texts are copied from
    the previous file: elements replaced by new versions (encoded field by field from the
    previous file's text), removed (the rest copied around the gap) and other values."""
    directory = tmp_path_factory.mktemp("files")
    encoder = SnapshotJsonEncoder()
    elements = list(start)
    previous = None
    for step, (position, key, value) in enumerate([(0, "", None), *edits]):
        if elements and step:
            index = position % len(elements)
            version = dict(elements[index])
            if value is None:
                version.pop(key, None)
            else:
                version[key] = value
            elements = [*elements[:index], version, *elements[index + 1 :]]
        if step == drop and elements:
            elements = elements[1:]
        snapshot = {"version": step, "containers": elements, "pods": elements[::2]}
        path = directory / f"state-{step}"
        previous = _write_through(encoder, snapshot, path, previous)
        assert path.read_text() == dumps(snapshot)


def test_the_texts_of_a_written_file_are_not_kept(tmp_path: Any) -> None:
    encoder = SnapshotJsonEncoder()
    containers = [{"id": str(n), "labels": {"app": "x" * 200}} for n in range(100)]
    first = _write_through(encoder, {"containers": containers}, tmp_path / "a", None)
    kept = encoder._lists["containers"][1]
    assert all(type(piece) is int for piece in kept)  # where each text lies, not the text
    changed = [*containers[:50], {**containers[50], "cpus": "4"}, *containers[51:]]
    second = _write_through(encoder, {"containers": changed}, tmp_path / "b", first)
    assert json.loads(second.read_text()) == {"containers": changed}
