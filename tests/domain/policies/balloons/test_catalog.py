"""The configured types expanded as the reference expands them (reference-balloons.md §1.4
step 3, §2, §5.2)."""

from __future__ import annotations

from typing import Any

import pytest

from nrirp.domain.config import CPUPriority, PolicyConfig
from nrirp.domain.config.balloons import BalloonsPolicySpec
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.policies.balloons.catalog import (
    ISOLATED_CPUS,
    PERFORMANCE_CORES,
    RESERVED_CPUS,
    Catalog,
    CatalogError,
    build_catalog,
)
from tests.domain.policies.balloons.support import catalogue, config


def catalog_of(machine: str = "box-16", **fields: Any) -> Catalog:
    cfg: PolicyConfig = config(**fields)
    assert isinstance(cfg.spec, BalloonsPolicySpec)
    return build_catalog(cfg.spec, cfg.control, catalogue(machine))


def test_builtins_around_the_configured_types() -> None:
    cat = catalog_of(balloonTypes=[{"name": "a"}], reservedPoolNamespaces=["infra-*"])
    assert [k.name for k in cat.kinds] == ["reserved", "a", "default"]
    reserved = cat.reserved_kind
    assert (reserved.min_balloons, reserved.max_balloons) == (1, 1)
    assert reserved.namespaces == ("kube-system", "infra-*")
    assert reserved.priority is CPUPriority.LOW and reserved.min_cpus == 1  # 750m
    assert [k.name for k in cat.creation_order()] == ["a", "reserved", "default"]


def test_reserved_cpuset() -> None:
    cat = catalog_of(reservedResources={"cpu": "cpuset:0-1"})
    reserved = cat.reserved_kind
    assert CPUSet(cat.reserved) == CPUSet.parse("0-1")
    assert reserved.min_cpus == 0  # no maxCPUs: starts empty
    assert reserved.priority is CPUPriority.NORMAL
    assert reserved.close[0] == RESERVED_CPUS
    assert RESERVED_CPUS in cat.default_kind.far  # others keep away from it
    with_max = catalog_of(
        reservedResources={"cpu": "cpuset:0-3"},
        balloonTypes=[{"name": "reserved", "maxCPUs": 2}],
    )
    assert with_max.reserved_kind.min_cpus == 2  # min(|set|, maxCPUs)


def test_reserved_cpuset_must_be_available() -> None:
    with pytest.raises(CatalogError, match=r"reservedResources\.cpu: the reserved CPUs 15"):
        catalog_of(reservedResources={"cpu": "cpuset:15"}, availableResources={"cpu": "cpuset:0-7"})
    relative = catalog_of(
        reservedResources={"cpu": "exclude-cpuset:1-7"},
        availableResources={"cpu": "cpuset:0-7"},
    )
    assert CPUSet(relative.reserved) == CPUSet.of(0)  # relative to the available CPUs


def test_inherited_and_default_options() -> None:
    cat = catalog_of(
        allocatorTopologyBalancing=True,
        pinMemory=False,
        cpuClasses=[{"name": "default"}, {"name": "turbo"}],
        balloonTypes=[
            {"name": "a", "allocatorTopologyBalancing": False, "cpuClass": "turbo"},
            {"name": "b", "pinMemory": True, "memoryTypes": ["pmem"]},
        ],
    )
    a, b = cat.by_name["a"], cat.by_name["b"]
    assert (a.balancing, b.balancing) == (False, True)
    assert (a.pin_memory, b.pin_memory) == (False, True)
    assert (a.cpu_class, b.cpu_class) == ("turbo", "default")
    assert cat.idle_cpu_class == "default"
    assert b.memory_types and a.priority is CPUPriority.HIGH


def test_far_devices() -> None:
    cat = catalog_of(
        "hybrid-desktop",
        balloonTypes=[
            {"name": "fast", "preferCoreType": "performance", "loads": ["x"]},
            {"name": "other"},
        ],
        loadClasses=[{"name": "x", "level": "core"}],
    )
    assert cat.by_name["fast"].close == (PERFORMANCE_CORES,)
    assert cat.by_name["fast"].far == ("loaded-core",)
    assert PERFORMANCE_CORES in cat.by_name["other"].far
    isolated = catalog_of("sparse-8s-4096")
    assert isolated.default_kind.far[0] == ISOLATED_CPUS  # the host has isolcpus
