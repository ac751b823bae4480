"""A fake machine's tree is written and read once per discovery object: later ``discover()``
calls (the simulator's pictures, a comparison's second replay) answer the same machine."""

from __future__ import annotations

import pytest

from nrirp.adapters.fakehw import FakeHardwareDiscovery, load_machine
from nrirp.adapters.fakehw import discovery as module
from nrirp.domain.topology import MemoryType


def test_the_tree_is_written_once_and_again_only_for_other_memory_types(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    written: list[str] = []
    write = module.write_sysfs

    def counting(layout: object, root: str) -> None:
        written.append(root)
        write(layout, root)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "write_sysfs", counting)
    discovery = FakeHardwareDiscovery(load_machine("box-16"))
    first = discovery.discover()
    assert discovery.discover() is first
    assert len(written) == 1
    discovery.memory_types[1] = MemoryType.PMEM  # other configuration: discovered again
    again = discovery.discover()
    assert len(written) == 2 and again is not first
    assert again.nodes[1].memory_type is MemoryType.PMEM
