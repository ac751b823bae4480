"""Fuzzing: whatever one sysfs file holds (or if it is gone), discovery either returns a
consistent machine or raises HardwareDiscoveryError; nothing else escapes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nrirp.adapters.sysfs import SysfsDiscovery
from nrirp.domain.ports.hardware import HardwareDiscoveryError
from nrirp.domain.topology import Machine

from .support import scratch, write_catalogue_tree


@pytest.fixture(scope="module")
def tree() -> Iterator[tuple[Path, list[str]]]:
    with scratch() as tmp:
        root = write_catalogue_tree("hybrid-desktop", tmp)
        files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
        yield root, files


contents = st.one_of(
    st.text(max_size=40),
    st.from_regex(r"-?[0-9]{1,25}\n?", fullmatch=True),
    st.from_regex(r"([0-9]{1,4}(-[0-9]{1,4})?,){0,4}[0-9]{1,4}\n", fullmatch=True),
    st.sampled_from(["", "\n", "-1\n", "0\n", "Unified\n", "1024K\n", "10 21\n", "0-99999\n"]),
    st.none(),  # the file is removed
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), content=contents)
def test_any_single_file_corruption(
    tree: tuple[Path, list[str]], data: st.DataObject, content: str | None
) -> None:
    root, files = tree
    rel = data.draw(st.sampled_from(files))
    path = root / rel
    original = path.read_bytes()
    try:
        if content is None:
            path.unlink()
        else:
            path.write_text(content)
        try:
            machine = SysfsDiscovery(str(root)).discover()
        except HardwareDiscoveryError as err:
            assert str(root) in str(err) or "inconsistent" in str(err)
        else:
            assert isinstance(machine, Machine)
            assert machine.online and set(machine.cpus) == set(machine.online)
    finally:
        path.write_bytes(original)
        os.utime(path)
