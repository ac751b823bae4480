"""Fixtures of the sysfs adapter tests: a fresh copy of the ``box-16`` tree per test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from .support import scratch, write_catalogue_tree


@pytest.fixture(scope="module")
def pristine() -> Iterator[Path]:
    """The ``box-16`` sysfs tree, written once per module (do not modify it)."""
    with scratch() as tmp:
        yield write_catalogue_tree("box-16", tmp)


@pytest.fixture
def root(pristine: Path) -> Iterator[Path]:
    """A copy of the ``box-16`` tree the test may change."""
    with scratch() as tmp:
        copy = tmp / "sys"
        shutil.copytree(pristine, copy, symlinks=True)
        yield copy
