"""The precomputed machine index: whole-core counting by thread offsets, with its fallback."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.domain.cpuallocator.index import MachineIndex, bit_ids
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import Machine

from .machines import CATALOGUE, catalogue_machine, make_machine


def brute_force_whole(machine: Machine, package_id: int, free: CPUSet) -> int:
    return sum(
        len(core.cpus)
        for core in machine.cores.values()
        if core.package_id == package_id and core.cpus.issubset(free)
    )


def scrambled() -> Machine:
    """Cores whose sibling offsets all differ (more shapes than the index keeps)."""
    ids = list(range(40))
    random.Random(5).shuffle(ids)
    cores = [f"{ids[2 * i]},{ids[2 * i + 1]}" for i in range(20)]
    return make_machine(cores)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([*CATALOGUE, "scrambled"]), st.integers(0, 2**32 - 1), st.data())
def test_whole_core_cpus_matches_brute_force(name: str, seed: int, data: st.DataObject) -> None:
    machine = scrambled() if name == "scrambled" else catalogue_machine(name)
    index = MachineIndex(machine)
    busy = data.draw(st.sampled_from([0.0, 0.2, 0.5, 0.9]))
    rng = random.Random(seed)
    free = CPUSet.from_ids(i for i in machine.online if rng.random() >= busy)
    for package in index.packages:
        assert package.whole_core_cpus(free.bits) == brute_force_whole(machine, package.id, free)


def test_shapes_by_numbering() -> None:
    shapes = {
        name: [len(p.shapes) for p in MachineIndex(catalogue_machine(name)).packages]
        for name in ("box-16", "server-112-pmem", "hybrid-desktop")
    }
    assert shapes == {"box-16": [1, 1], "server-112-pmem": [1, 1], "hybrid-desktop": [2]}
    assert [len(p.shapes) for p in MachineIndex(scrambled()).packages] == [0]  # fallback


@pytest.mark.parametrize(
    "bits", [0, 1, 0b1011, 1 << 7000, (1 << 300) - 1, sum(1 << i for i in range(0, 7680, 7))]
)
def test_bit_ids(bits: int) -> None:
    assert bit_ids(bits) == [i for i in range(bits.bit_length()) if bits >> i & 1]
