"""Fake host trees for the host control adapters' tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from nrirp.adapters.fakehw import FakeHostTree, load_machine, spec_from_data, spec_to_data


@contextmanager
def host_tree(machine: str = "server-112-pmem", **host: Any) -> Iterator[FakeHostTree]:
    """The catalogue machine's host tree, its ``host`` section updated with ``host``
    (a key set to ``None`` drops that interface)."""
    data = spec_to_data(load_machine(machine))
    data["host"] = {**(data.get("host") or {}), **host}
    with FakeHostTree(spec_from_data(data, machine)) as tree:
        yield tree


def read(tree: FakeHostTree, rel: str) -> str:
    with open(f"{tree.root}/{rel}", encoding="utf-8") as f:
        return f.read().strip()
