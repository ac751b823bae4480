"""Machines for the allocator tests: hand-built small topologies and the fake catalogue."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from nrirp.adapters.fakehw import expected_machine, load_machine
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CPU, CacheGroup, CacheType, CoreType, Machine, NumaNode

GiB = 1 << 30

CATALOGUE = (
    "hybrid-desktop",
    "box-16",
    "server-112-pmem",
    "server-4s-144",
    "sparse-8s-4096",
    "hbm-cxl",
)


@functools.cache
def catalogue_machine(name: str) -> Machine:
    return expected_machine(load_machine(name))


def _find(groups: Sequence[str], cpu: int, default: int = 0) -> int:
    for index, text in enumerate(groups):
        if cpu in CPUSet.parse(text):
            return index
    return default


def make_machine(
    cores: Sequence[str],
    *,
    packages: Sequence[str] = (),
    dies: Sequence[str] = (),
    caches: Mapping[int, Sequence[str]] | None = None,
    efficient: str = "",
    no_kind: str = "",
    clusters: Sequence[str] = (),
    base_khz: Mapping[str, int] | None = None,
    epp: Mapping[str, str] | None = None,
) -> Machine:
    """A machine from CPU lists: one per core, package, die (ids within the package), cache.

    Each package is one NUMA node. Without ``clusters`` every core is its own cluster.
    ``base_khz`` and ``epp`` map CPU lists to the base frequency and EPP of those CPUs.
    CPUs in ``efficient`` are E-cores, those in ``no_kind`` have no core kind.
    """
    cpus: list[CPU] = []
    core_lists = [CPUSet.parse(c) for c in cores]
    eff = CPUSet.parse(efficient)
    unmarked = CPUSet.parse(no_kind)
    for core_index, core in enumerate(core_lists):
        for cpu_id in core:
            package = _find(packages, cpu_id)
            die_ids = [
                i for i, d in enumerate(dies) if _find(packages, CPUSet.parse(d).min()) == package
            ]
            die = next(
                (pos for pos, i in enumerate(die_ids) if cpu_id in CPUSet.parse(dies[i])),
                0,
            )
            freq = next(
                (f for text, f in (base_khz or {}).items() if cpu_id in CPUSet.parse(text)), None
            )
            pref = next(
                (e for text, e in (epp or {}).items() if cpu_id in CPUSet.parse(text)), None
            )
            cpus.append(
                CPU(
                    id=cpu_id,
                    package_id=package,
                    die_id=die,
                    cluster_id=_find(clusters, cpu_id, 1000 + core_index)
                    if clusters
                    else core_index,
                    core_id=core_index,
                    node_id=package,
                    core_type=CoreType.EFFICIENT
                    if cpu_id in eff
                    else CoreType.NONE
                    if cpu_id in unmarked
                    else CoreType.PERFORMANCE,
                    base_frequency_khz=freq,
                    epp=pref,
                )
            )
    node_count = max(len(packages), 1)
    nodes = [
        NumaNode(
            id=n,
            cpus=CPUSet.from_ids(c.id for c in cpus if c.node_id == n),
            memory_bytes=4 * GiB,
        )
        for n in range(node_count)
    ]
    groups = [
        CacheGroup(level=level, type=CacheType.UNIFIED, id=i, cpus=CPUSet.parse(text))
        for level, texts in (caches or {}).items()
        for i, text in enumerate(texts)
    ]
    return Machine.build(cpus, nodes, groups)
