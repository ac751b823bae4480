"""docs/cpu-allocator.md stays true: its API table is complete and its messages are real."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nrirp.domain.config.enums import CPUPriority
from nrirp.domain.cpuallocator import CPUAllocationError, CPUAllocator
from nrirp.domain.cpuset import CPUSet

from .machines import catalogue_machine

DOC = Path(__file__).resolve().parents[3] / "docs" / "cpu-allocator.md"


def doc_text() -> str:
    return " ".join(DOC.read_text().split())  # line breaks inside quotes become spaces


def test_api_table_lists_every_public_member() -> None:
    public = {name for name in vars(CPUAllocator) if not name.startswith("_")}
    listed = set(re.findall(r"^\| `\.(\w+)", DOC.read_text(), re.MULTILINE))
    assert listed == public


def test_quoted_error_messages_are_what_the_allocator_says() -> None:
    text = doc_text()
    hybrid = CPUAllocator(catalogue_machine("hybrid-desktop"))
    with pytest.raises(CPUAllocationError) as info:
        hybrid.allocate(CPUSet.parse("0-3,16-23"), 6, priority=CPUPriority.NORMAL)
    assert f"`{info.value}`" in text
    small = CPUAllocator(catalogue_machine("box-16"))
    with pytest.raises(CPUAllocationError) as info:
        small.release(CPUSet.parse("0-3"), 5)
    assert f"`{info.value}`" in text
    sparse = CPUAllocator(catalogue_machine("sparse-8s-4096"))
    with pytest.raises(CPUAllocationError) as info:
        sparse.allocate(CPUSet.parse("510-515"), 3)
    assert "`'512-515' are not online CPUs of this machine`" in text
    assert "'512-515' are not online CPUs of this machine" in str(info.value)


def test_release_example() -> None:
    assert "releasing 1 of `{0,1,2}`, with 0 and 1 siblings, gives back 2" in doc_text()
    allocator = CPUAllocator(catalogue_machine("box-16"))  # cpus 0 and 1 are siblings
    assert allocator.release(CPUSet.parse("0-2"), 1) == CPUSet.of(2)


def test_hybrid_classes_as_described() -> None:
    assert "`HIGH` = the P-cores (3.2 GHz base) and `LOW` = the E-cores" in doc_text()
    classes = CPUAllocator(catalogue_machine("hybrid-desktop")).priorities()
    m = catalogue_machine("hybrid-desktop")
    assert classes[CPUPriority.HIGH] == m.online - classes[CPUPriority.LOW]
    assert all(m.cpus[i].base_frequency_khz == 3_200_000 for i in classes[CPUPriority.HIGH])
    assert all(m.cpus[i].base_frequency_khz == 2_400_000 for i in classes[CPUPriority.LOW])


def test_priority_of_an_offline_cpu_names_it() -> None:
    allocator = CPUAllocator(catalogue_machine("box-16"))
    with pytest.raises(KeyError) as info:
        allocator.priority_of(999)
    assert info.value.args[0] == "CPU 999 is not an online CPU of this machine"
    assert f"`{info.value.args[0]}`" in doc_text()
