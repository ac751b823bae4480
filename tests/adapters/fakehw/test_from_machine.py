"""A spec from a discovered machine discovers as the same machine (``nrirp run --record``
writes the node's machine this way; the simulator replays on it)."""

from __future__ import annotations

import pytest

from nrirp.adapters.fakehw import (
    FakeHardwareDiscovery,
    MachineSpecError,
    check_describable,
    load_machine,
    machine_names,
    spec_from_data,
    spec_of_machine,
    spec_to_data,
)
from nrirp.adapters.fakehw.spec import CacheInstanceSpec, CacheLevelSpec, CacheScope
from nrirp.adapters.sysfs import SysfsDiscovery
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.ports.hardware import HardwareDiscoveryError
from nrirp.domain.topology import CPU, CacheType, Machine, MemoryType, NumaNode
from tests.domain.support import node_across_packages_machine

SMALL = [name for name in machine_names() if name != "sparse-8s-4096"]


@pytest.mark.parametrize("name", SMALL)
def test_a_discovered_machine_round_trips_through_its_spec(name: str) -> None:
    machine = FakeHardwareDiscovery(load_machine(name)).discover()
    spec, memory_types = spec_of_machine(machine, name="copy")
    data = spec_to_data(spec)  # as a recording writes it: plain data, loaded strictly
    again = FakeHardwareDiscovery(spec_from_data(data, "copy"), memory_types).discover()
    assert again == machine


@pytest.mark.slow
def test_the_biggest_catalogue_machine_round_trips_too() -> None:
    machine = FakeHardwareDiscovery(load_machine("sparse-8s-4096")).discover()
    spec, memory_types = spec_of_machine(machine)
    assert FakeHardwareDiscovery(spec, memory_types).discover() == machine


def test_this_hosts_machine_round_trips() -> None:
    try:
        machine = SysfsDiscovery("/sys").discover()
    except HardwareDiscoveryError as exc:
        pytest.skip(f"this host's /sys cannot be read: {exc}")
    spec, memory_types = spec_of_machine(machine, name="host")
    assert FakeHardwareDiscovery(spec, memory_types).discover() == machine


def test_memory_types_given_at_discovery_are_kept() -> None:
    overridden = {1: MemoryType.HBM}
    machine = FakeHardwareDiscovery(load_machine("box-16"), overridden).discover()
    assert machine.nodes[1].memory_type is MemoryType.HBM
    spec, memory_types = spec_of_machine(machine)
    assert FakeHardwareDiscovery(spec, memory_types).discover() == machine


def test_cache_instances_keep_their_sysfs_ids() -> None:
    spec = load_machine("box-16")
    l2 = CacheLevelSpec(
        level=2,
        type=CacheType.UNIFIED,
        shared_by=CacheScope.CORE,
        instances=tuple(
            CacheInstanceSpec(cpus=CPUSet.from_ids([2 * i, 2 * i + 1]), id=100 - 4 * i)
            for i in range(8)
        ),
    )
    machine = FakeHardwareDiscovery(
        spec_from_data({**spec_to_data(spec), "caches": [_plain(l2)]}, "ids")
    ).discover()
    assert sorted(g.id for g in machine.caches if g.level == 2) == sorted(
        100 - 4 * i for i in range(8)
    )
    bad = _plain(l2)
    bad["instances"][0]["id"] = None
    with pytest.raises(MachineSpecError, match="give an id to every instance or to none"):
        spec_from_data({**spec_to_data(spec), "caches": [bad]}, "ids")


def _plain(level: CacheLevelSpec) -> dict[str, object]:
    from nrirp.adapters.fakehw.loading import converter

    data: dict[str, object] = converter.unstructure(level)
    return data


def test_a_numa_node_across_packages_cannot_be_described() -> None:
    machine = node_across_packages_machine()
    with pytest.raises(ValueError, match="NUMA node 0 spans 2 dies or packages"):
        check_describable(machine)
    with pytest.raises(ValueError, match="NUMA node 0 spans 2 dies or packages"):
        spec_of_machine(machine)


def test_one_node_across_packages_is_a_kernel_without_numa() -> None:
    cpus = [CPU(0, 0, 0, 0, 0, 0), CPU(1, 1, 0, 1, 1, 0)]
    machine = Machine.build(cpus, [NumaNode(0, CPUSet.parse("0-1"), 1 << 30)], [], CPUSet())
    check_describable(machine)  # described as one node per die, merged back at discovery
    spec, memory_types = spec_of_machine(machine)
    assert FakeHardwareDiscovery(spec, memory_types).discover().online == machine.online
