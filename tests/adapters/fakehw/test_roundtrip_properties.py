"""Property: spec -> sysfs tree -> discovery gives the spec's machine, for any valid spec."""

from __future__ import annotations

import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nrirp.adapters.fakehw import (
    expected_machine,
    resolve,
    spec_from_data,
    write_procfs,
    write_sysfs,
)
from nrirp.adapters.fakehw.discovery import scratch_dir
from nrirp.adapters.sysfs import SysfsDiscovery
from nrirp.domain.cpuset import CPUSet

frequencies = st.fixed_dictionaries(
    {},
    optional={
        "base_khz": st.integers(800_000, 4_000_000),
        "max_khz": st.integers(1_000_000, 6_000_000),
        "epp": st.sampled_from(["performance", "balance_performance", "power"]),
    },
)


def _maybe_split(level: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Some levels wider than a core are split into instances of a few cores."""
    if level["shared_by"] == "core":
        return st.just(level)
    return st.one_of(
        st.just(level), st.integers(1, 3).map(lambda n: {**level, "cores_per_instance": n})
    )


cache_levels = st.lists(
    st.fixed_dictionaries(
        {
            "level": st.integers(1, 4),
            "type": st.sampled_from(["data", "instruction", "unified"]),
            "shared_by": st.sampled_from(["core", "cluster", "node", "die", "package"]),
        },
        optional={"size": st.integers(1, 4096).map(lambda k: f"{k}K")},
    ).flatmap(_maybe_split),
    max_size=4,
    unique_by=lambda c: (c["level"], c["type"]),
)


@st.composite
def common_parts(draw: st.DrawFn, cpus: list[int], cpu_nodes: list[int]) -> dict[str, Any]:
    """Memory nodes, distances, offline/isolated CPUs and caches for a given CPU layout."""
    data: dict[str, Any] = {"caches": draw(cache_levels)}
    memory_nodes = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "memory": st.integers(0, 1 << 20).map(lambda k: k * 1024),
                    # one node, or several it is equally close to
                    "nearest": st.one_of(
                        st.sampled_from(cpu_nodes),
                        st.lists(st.sampled_from(cpu_nodes), min_size=1, max_size=3, unique=True),
                    ),
                },
                optional={
                    "type": st.sampled_from(["dram", "pmem", "hbm"]),
                    "distance": st.integers(11, 40),
                },
            ),
            max_size=3,
        )
    )
    data["memory_nodes"] = memory_nodes
    n_nodes = len(cpu_nodes) + len(memory_nodes)
    if draw(st.booleans()):
        # an arbitrary (possibly asymmetric) matrix; memory nodes then need no 'nearest'
        matrix = [
            [10 if i == j else draw(st.integers(11, 60)) for j in range(n_nodes)]
            for i in range(n_nodes)
        ]
        data["distances"] = matrix
        for m in memory_nodes:
            del m["nearest"]
    elif not memory_nodes and draw(st.integers(0, 4)) == 0:
        data["numa"] = False  # a kernel without NUMA: one node, memory from procfs
    offline = draw(st.sets(st.sampled_from(cpus), max_size=len(cpus) - 1))
    online = sorted(set(cpus) - offline)
    data["offline"] = str(CPUSet.from_ids(offline))
    data["isolated"] = str(CPUSet.from_ids(draw(st.sets(st.sampled_from(online)))))
    return data


@st.composite
def compact_specs(draw: st.DrawFn) -> dict[str, Any]:
    topo: dict[str, Any] = {
        "packages": draw(st.integers(1, 3)),
        "dies_per_package": draw(st.integers(1, 2)),
        "nodes_per_die": draw(st.integers(1, 2)),
        "cores_per_node": draw(st.integers(1, 4)),
        "threads_per_core": draw(st.integers(1, 3)),
        "cores_per_cluster": draw(st.integers(1, 3)),
        "efficient_cores_per_node": draw(st.integers(0, 5)),
        "efficient_cores_per_cluster": draw(st.integers(1, 4)),
        "memory_per_node": draw(st.integers(0, 1 << 22)) * 1024,
        "numbering": draw(st.sampled_from(["smt-adjacent", "smt-last"])),
        "frequency": draw(frequencies),
        "efficient_frequency": draw(frequencies),
    }
    n_nodes = topo["packages"] * topo["dies_per_package"] * topo["nodes_per_die"]
    n_cpus = n_nodes * (
        topo["cores_per_node"] * topo["threads_per_core"] + topo["efficient_cores_per_node"]
    )
    cpus = list(range(n_cpus))
    if draw(st.booleans()):
        cpus = sorted(draw(st.sets(st.integers(0, 5000), min_size=n_cpus, max_size=n_cpus)))
        topo["cpu_ids"] = str(CPUSet.from_ids(cpus))
    return {"name": "c", "compact": topo, **draw(common_parts(cpus, list(range(n_nodes))))}


@st.composite
def explicit_specs(draw: st.DrawFn) -> dict[str, Any]:
    n_nodes = draw(st.integers(1, 4))
    cores_per_node = [draw(st.integers(1, 3)) for _ in range(n_nodes)]
    threads = [[draw(st.integers(1, 2)) for _ in range(n)] for n in cores_per_node]
    total = sum(sum(t) for t in threads)
    cpu_pool = draw(
        st.permutations(sorted(draw(st.sets(st.integers(0, 3000), min_size=total, max_size=total))))
    )
    node_ids = sorted(draw(st.sets(st.integers(0, 12), min_size=n_nodes, max_size=n_nodes)))
    nodes, next_core, used = [], {0: 0, 1: 0}, 0
    for index, node_id in enumerate(node_ids):
        package, die = draw(st.integers(0, 1)), draw(st.integers(0, 1))
        cores = []
        for n_threads in threads[index]:
            cpus, used = cpu_pool[used : used + n_threads], used + n_threads
            core: dict[str, Any] = {"id": next_core[package], "cpus": list(cpus)}
            next_core[package] += 1 + draw(st.integers(0, 3))  # core ids with gaps
            if draw(st.booleans()):
                core["cluster"] = 1000 + die * 100 + draw(st.integers(0, 2))  # not a core id
            kind = draw(st.sampled_from([None, "efficient", "none", "performance"]))
            if kind is not None:
                core["type"] = kind
            if draw(st.booleans()):
                core["frequency"] = draw(frequencies)
            cores.append(core)
        nodes.append(
            {
                "id": node_id,
                "package": package,
                "die": die,
                "memory": draw(st.integers(0, 1 << 22)) * 1024,
                "cores": cores,
            }
        )
    spec: dict[str, Any] = {
        "name": "e",
        "explicit": {"nodes": nodes, "frequency": draw(frequencies)},
    }
    data = {**spec, **draw(common_parts(list(cpu_pool), node_ids))}
    if draw(st.booleans()):
        # an L3 level by hand: some of the cores in groups, each group with its own size
        core_cpus = [c["cpus"] for n in nodes for c in n["cores"]]
        chosen = draw(st.lists(st.sampled_from(range(len(core_cpus))), unique=True))
        cuts = sorted(draw(st.sets(st.integers(1, max(len(chosen) - 1, 1)))))
        groups = [chosen[a:b] for a, b in zip([0, *cuts], [*cuts, len(chosen)], strict=True)]
        instances = []
        for group in groups:
            if group:
                cpus = sorted(cpu for i in group for cpu in core_cpus[i])
                instance: dict[str, Any] = {"cpus": cpus}
                if draw(st.booleans()):
                    instance["size"] = f"{draw(st.integers(1, 4096))}K"
                instances.append(instance)
        levels = [c for c in data["caches"] if (c["level"], c["type"]) != (3, "unified")]
        data["caches"] = [*levels, {"level": 3, "size": "8M", "instances": instances}]
    return data


def round_trip(data: dict[str, Any]) -> None:
    spec = spec_from_data(data)
    layout = resolve(spec)
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as tmp:
        write_sysfs(layout, tmp + "/sys")
        write_procfs(layout, tmp + "/proc")
        found = SysfsDiscovery(tmp + "/sys", layout.declared_memory_types).discover()
    assert found == expected_machine(spec)
    assert found.online == layout.online


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(compact_specs())
def test_compact_round_trip(data: dict[str, Any]) -> None:
    round_trip(data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(explicit_specs())
def test_explicit_round_trip(data: dict[str, Any]) -> None:
    round_trip(data)
