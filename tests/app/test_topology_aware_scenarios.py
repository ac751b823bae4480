"""Simulator scenarios of the ``topology-aware`` policy: every annotation and config field.

Each test replays a workload of ``examples/workloads/topology-aware/`` through
``nrirp simulate --json`` (our NRI plugin on the simulated runtime) and checks the cpus and
mems the runtime holds after every step. The expectations come from the reference's
behaviour (``reference-policies.md`` §2) and issue 5, not from the policy's code; the
workloads' notes say why each placement is expected.

Coverage (reference-policies.md §2 annotations, suffix ``.resource-policy.nri.io``, and
``TopologyAwarePolicy`` spec fields):

| annotation / field | test |
|---|---|
| CPU groups; shared pools shrink and grow | test_basics, test_cpu_preferences |
| `prefer-isolated-cpus` (both ways) | test_isolation |
| `require-isolated-cpus` | test_isolation |
| `prefer-shared-cpus` (both ways) | test_cpu_preferences |
| `prefer-reserved-cpus` true; false | test_reserved_*, test_kube_system_* |
| `prefer-cpu-priority` | test_cpu_priority |
| `memory-type` dram / pmem / mixed / default | test_memory_types_pmem |
| `memory-type` hbm, `dram,hbm` | test_memory_types_hbm |
| `cold-start` (timer and `cold-start-done` event) | test_memory_types_pmem |
| `cpu.preserve`, `memory.preserve` | test_preserve |
| `hide-hyperthreads` (shared; exclusive: N CPUs held, siblings hidden) | test_cpu_preferences |
| `unlimited-burstable` | test_unlimited_burstable |
| `scheduling-class` | test_classes |
| `cpu-class` (refused unless Guaranteed with exclusive CPUs) | test_classes |
| `rdtclass`, `blockioclass` | test_classes |
| `topologyhints` (false, `devices`), hints from devices and from mounts | test_topology_hints |
| `allow.topologyhints`, `deny.topologyhints` | test_topology_hints |
| `pick-resources-by-hints` | test_topology_hints |
| `strict.topologyhints` | test_strict_topology_hints |
| `resource-policy.nri.io/affinity`, `/anti-affinity`: rules, weights, operators | test_affinity |
| legacy `cri-resource-manager.intel.com/anti-affinity` | test_affinity |
| affinity shorthand | test_colocation |
| `pinCPU`, `pinMemory` | test_preserve (no-pin configs) |
| `preferIsolatedCPUs` | test_isolation_config |
| `preferSharedCPUs` | test_prefer_shared_config |
| `colocatePods`, `colocateNamespaces` | test_colocation, test_affinity |
| `reservedPoolNamespaces` (names and globs) | test_reserved_pool_namespaces_and_annotation |
| `availableResources.cpu` `cpuset:` / `exclude-cpuset:` | test_available_resources |
| `availableResources.memory`, `reservedResources.memory` | test_available_memory |
| `reservedResources.cpu` cpuset / quantity (not isolated) | test_basics, test_reserved_amount* |
| `defaultCPUPriority` | test_cpu_priority |
| `unlimitedBurstable` | test_unlimited_burstable |
| `schedulingClasses`, `namespaceSchedulingClasses`, `podQoSSchedulingClasses` | test_classes |
| `cpuClasses`, `{shared,reserved}PoolCPUClass`, `defaultExclusiveCPUClass` | test_classes |
| reconfiguration (kept, moved, refused, invalid) | test_reconfigure |
| reconfiguration: keep what fits, never overcommit, move reserved | test_reconfigure_* |
| a whole custom resource as the config | test_reserved_pool_namespaces_and_annotation |
| `irq-affinity` (recorded as a tag) | test_classes |
| `controllableInterrupts` | not here: only kept for a future IRQ adapter |
| common blocks `control`, `log`, `instrumentation`, `agent` | not here: no placement effect |
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from nrirp.adapters.fakehw import expected_machine, load_machine_or_file
from nrirp.adapters.nri.gen import api_pb2
from nrirp.app.cli import main
from nrirp.app.commands.simulate import EXIT_OK, EXIT_STEPS
from nrirp.app.simulator import build_simulator, load_workload, replay
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import Machine, MemoryType
from tests.domain.policies.test_topology_aware_properties import memory_of, units_of

HERE = Path(__file__).parents[2] / "examples" / "workloads" / "topology-aware"
CONFIGS = HERE / "configs"
MACHINES = HERE / "machines"
SINGLE = str(MACHINES / "single-16.yaml")
DEVICES = str(MACHINES / "box-16-devices.yaml")
DEFAULT_TYPES = frozenset({MemoryType.DRAM, MemoryType.PMEM})

Placement = tuple[str | None, str | None]
GONE: Placement = ("gone", "gone")


# ====================================================================== running scenarios
def simulate(
    capsys: pytest.CaptureFixture[str], workload: str, config: str, machine: str = "box-16"
) -> dict[str, Any]:
    """``nrirp simulate --json`` of a workload of this directory with a config of configs/."""
    code = main(
        [
            "simulate",
            "--machine",
            machine,
            "--policy",
            "topology-aware",
            "--config",
            str(CONFIGS / config),
            "--workload",
            str(HERE / workload),
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert code in (EXIT_OK, EXIT_STEPS), err
    doc: dict[str, Any] = json.loads(out)
    for step in doc["steps"]:
        for ctr in step["containers"]:
            assert ctr["matches_decision"], f"step {step['number']}: runtime differs: {ctr}"
    return doc


def placements(doc: Mapping[str, Any], number: int) -> dict[str, Placement]:
    """``namespace/pod/container`` -> (cpus, mems) the runtime holds after step ``number``."""
    step = doc["steps"][number - 1]
    return {
        f"{c['namespace']}/{c['pod']}/{c['name']}": (c["cpus"], c["mems"])
        for c in step["containers"]
        if c["state"] in ("created", "running")
    }


def step_of(doc: Mapping[str, Any], number: int) -> Mapping[str, Any]:
    step: Mapping[str, Any] = doc["steps"][number - 1]
    return step


def errors(doc: Mapping[str, Any], number: int) -> str:
    return "\n".join(step_of(doc, number)["errors"])


def expect_steps(
    doc: Mapping[str, Any],
    table: Mapping[int, Mapping[str, Placement]],
    *,
    steps: int | None = None,
) -> None:
    """Check every step (or the first ``steps``) against the running expectation:
    ``table[n]`` lists what changes at step ``n`` (``GONE``: deleted); every other container
    must keep what it had."""
    expected: dict[str, Placement] = {}
    for number in range(1, (steps or len(doc["steps"])) + 1):
        for name, placement in table.get(number, {}).items():
            if placement == GONE:
                expected.pop(name, None)
            else:
                expected[name] = placement
        got = placements(doc, number)
        assert got == expected, f"step {number} ({step_of(doc, number).get('note')}): " + ", ".join(
            f"{k}: expected {expected.get(k)}, got {got.get(k)}"
            for k in sorted(set(got) | set(expected))
            if got.get(k) != expected.get(k)
        )


def all_as_expected(doc: Mapping[str, Any], *, steps: int | None = None) -> None:
    unexpected = [
        f"step {s['number']}: {s['unmet_expectation']} {s['errors']}"
        for s in doc["steps"][:steps]
        if not s["as_expected"]
    ]
    assert unexpected == [], unexpected


def machine_of(name: str) -> Machine:
    return expected_machine(load_machine_or_file(name))


def pool_memory_ok(m: Machine, cpus: str, mems: str, types: frozenset[MemoryType]) -> bool:
    """The mems are what a pool holding all of ``cpus`` gives for memory ``types``."""
    cpu_set, mem_set = CPUSet.parse(cpus), CPUSet.parse(mems)
    return any(memory_of(m, u, types) == mem_set for u in units_of(m) if cpu_set <= u.cpus)


# ====================================================================== CPU groups
BASICS: dict[int, dict[str, Placement]] = {
    1: {"kube-system/coredns/coredns": ("0", "0-3")},  # the root pool: every node's memory
    2: {"default/be1/app": ("4-7", "1")},
    3: {"default/web/nginx": ("8-11", "2")},
    4: {"default/db/postgres": ("4-5", "1"), "default/be1/app": ("6-7", "1")},
    5: {"default/batch/worker": ("12-14", "3")},
    6: {"default/db/postgres": GONE, "default/be1/app": ("4-7", "1")},
    # 7: refused, 8: resized in place
    9: {"default/batch/worker": GONE},
    10: {"default/cache/redis": ("12-15", "3")},
}


def test_basics(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "basics.yaml", "box16.yaml")
    all_as_expected(doc)
    expect_steps(doc, BASICS)
    assert "14" in errors(doc, 7), "the refusal says how many CPUs were asked"
    nginx = next(c for c in step_of(doc, 8)["containers"] if c["name"] == "nginx")
    assert nginx["cpu_shares"] == 1536 and nginx["cpu_quota"] == 200_000  # the resize applied


def test_reserved_amount(capsys: pytest.CaptureFixture[str]) -> None:
    """750m reserved: the policy picks one CPU; only kube-system runs there."""
    doc = simulate(capsys, "basics.yaml", "box16-reserved-amount.yaml")
    all_as_expected(doc)
    m = machine_of("box-16")
    cpus, mems = placements(doc, 1)["kube-system/coredns/coredns"]
    assert cpus is not None and mems is not None
    reserved = CPUSet.parse(cpus)
    assert len(reserved) == 1 and CPUSet.parse(mems) == m.cpu_nodes  # the root pool's
    for number in range(2, len(doc["steps"]) + 1):
        for name, (got, _) in placements(doc, number).items():
            if name != "kube-system/coredns/coredns":
                assert got is not None and CPUSet.parse(got).isdisjoint(reserved), (number, name)


def test_reserved_amount_avoids_isolated_cpus(capsys: pytest.CaptureFixture[str]) -> None:
    """2 CPUs reserved by amount on single-16: never the isolated 14-15; a BestEffort
    container shares everything else."""
    doc = simulate(capsys, "isolation.yaml", "single16-reserved-amount.yaml", SINGLE)
    cpus, mems = placements(doc, 1)["default/be/app"]
    assert cpus is not None and mems == "0"
    shared = CPUSet.parse(cpus)
    reserved = CPUSet.parse("0-13") - shared
    assert len(reserved) == 2 and shared.isdisjoint(CPUSet.parse("14-15"))


ISOLATION: dict[int, dict[str, Placement]] = {
    1: {"default/be/app": ("1-13", "0")},
    2: {"default/iso1/app": ("14", "0")},
    3: {"default/ex2/app": ("2-3", "0"), "default/be/app": ("1,4-13", "0")},
    4: {"default/iso2/app": ("4-5", "0"), "default/be/app": ("1,6-13", "0")},
    5: {"default/req1/app": ("15", "0")},
    # 6: refused
    7: {"default/noiso/app": ("1", "0"), "default/be/app": ("6-13", "0")},
    8: {"default/all8/app": ("6-13", "0"), "default/be/app": ("0", "0")},
    9: {"default/all8/app": GONE, "default/be/app": ("6-13", "0")},
}


def test_isolation(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "isolation.yaml", "single16.yaml", SINGLE)
    all_as_expected(doc)
    expect_steps(doc, ISOLATION)


def test_isolation_config(capsys: pytest.CaptureFixture[str]) -> None:
    """preferIsolatedCPUs: false - a 1-CPU container gets an ordinary CPU; an explicit
    annotation still gets isolated ones; required isolation fails once they are gone."""
    doc = simulate(capsys, "isolation.yaml", "single16-no-isolation.yaml", SINGLE)
    assert placements(doc, 2)["default/iso1/app"] == ("1", "0")
    assert placements(doc, 2)["default/be/app"] == ("2-13", "0")
    assert placements(doc, 3)["default/ex2/app"] == ("2-3", "0")
    assert placements(doc, 4)["default/iso2/app"] == ("14-15", "0")
    assert placements(doc, 4)["default/be/app"] == ("4-13", "0")
    assert not step_of(doc, 5)["ok"] and "isolated" in errors(doc, 5)


CPU_PREFERENCES: dict[int, dict[str, Placement]] = {
    1: {"default/shared1/app": ("1-13", "0")},
    2: {"default/frac/app": ("1-13", "0")},
    3: {"default/mixed15/app": ("1-14", "0")},
    4: {
        "default/mixed25/app": ("1-13", "0"),
        "default/shared1/app": ("1,4-13", "0"),
        "default/frac/app": ("1,4-13", "0"),
        "default/mixed15/app": ("1,4-14", "0"),
    },
    5: {
        "default/ex4/app": ("4-7", "0"),
        "default/shared1/app": ("1,8-13", "0"),
        "default/frac/app": ("1,8-13", "0"),
        "default/mixed15/app": ("1,8-14", "0"),
        "default/mixed25/app": ("1-3,8-13", "0"),
    },
    6: {"default/ht/app": ("1,8,10,12", "0")},
    # the reference: hide-hyperthreads takes the N CPUs asked for (here the lonely thread 1,
    # the allocator's pick for one CPU) and hides their siblings; nothing more is held
    7: {
        "default/htx/app": ("1", "0"),
        "default/shared1/app": ("8-13", "0"),
        "default/frac/app": ("8-13", "0"),
        "default/mixed15/app": ("8-14", "0"),
        "default/mixed25/app": ("2-3,8-13", "0"),
        "default/ht/app": ("8,10,12", "0"),
    },
}


def test_cpu_preferences(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "cpu-preferences.yaml", "single16.yaml", SINGLE)
    all_as_expected(doc)
    expect_steps(doc, CPU_PREFERENCES)


def test_prefer_shared_config(capsys: pytest.CaptureFixture[str]) -> None:
    """preferSharedCPUs: true - the 1.5-CPU container shares instead of being mixed; an
    explicit prefer-shared-cpus: false still gets exclusive CPUs."""
    doc = simulate(capsys, "cpu-preferences.yaml", "single16-prefer-shared.yaml", SINGLE)
    assert placements(doc, 3)["default/mixed15/app"] == ("1-13", "0")
    assert placements(doc, 4)["default/mixed25/app"] == ("1-13", "0")
    assert placements(doc, 4)["default/mixed15/app"] == ("1,4-13", "0")
    # docs/topology-aware.md: whole-CPU Guaranteed containers go shared too (the reference
    # doc does not say; see the report)
    assert placements(doc, 5)["default/ex4/app"] == ("1,4-13", "0")


RESERVED: dict[int, dict[str, Placement]] = {
    1: {"kube-system/coredns/coredns": ("0-1", "0-3")},
    2: {"infra-logging/fluentd/fluentd": ("0-1", "0-3")},
    3: {"monitoring/prom/prometheus": ("0-1", "0-3")},
    4: {"default/agent/agent": ("0-1", "0-3")},
    5: {"infra/tools/shell": ("4-7", "1")},
}


def test_reserved_pool_namespaces_and_annotation(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "reserved.yaml", "box16-reserved-pools.yaml")
    all_as_expected(doc)
    expect_steps(doc, RESERVED, steps=5)


def test_kube_system_container_declines_the_reserved_cpus(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = simulate(capsys, "reserved.yaml", "box16-reserved-pools.yaml")
    # the least loaded NUMA node with no reserved CPUs: #2 (#1 has the infra shell)
    assert placements(doc, 6)["kube-system/kproxy/kproxy"] == ("8-11", "2")


AVAILABLE: dict[int, dict[str, Placement]] = {
    1: {"kube-system/coredns/coredns": ("4", "1-3")},  # the root pool (no CPU of node 0)
    2: {"default/be1/app": ("8-11", "2")},
    3: {"default/be2/app": ("12-15", "3")},
    4: {"default/db/postgres": ("8-9", "2"), "default/be1/app": ("10-11", "2")},
}


@pytest.mark.parametrize("config", ["box16-available.yaml", "box16-exclude.yaml"])
def test_available_resources(capsys: pytest.CaptureFixture[str], config: str) -> None:
    doc = simulate(capsys, "available.yaml", config)
    all_as_expected(doc)
    expect_steps(doc, AVAILABLE)


@pytest.mark.parametrize("config", ["box16-memory-limit.yaml", "box16-reserved-memory.yaml"])
def test_available_memory(capsys: pytest.CaptureFixture[str], config: str) -> None:
    """availableResources.memory: 6Gi, or reservedResources.memory: 10Gi of 16 - 5 GiB fits
    (over two nodes), 2 more do not; without a limit the machine's 16 GiB take both."""
    doc = simulate(capsys, "memory-limit.yaml", config)
    all_as_expected(doc)
    _, mems = placements(doc, 1)["default/big/app"]
    assert mems is not None and len(CPUSet.parse(mems)) >= 2
    unlimited = simulate(capsys, "memory-limit.yaml", "box16.yaml")
    assert step_of(unlimited, 2)["ok"], errors(unlimited, 2)


# ====================================================================== affinity, colocation
AFFINITY: dict[int, dict[str, Placement]] = {
    1: {"default/db/postgres": ("4-7", "1")},
    2: {"default/web/nginx": ("4-7", "1")},
    3: {"default/duo/a": ("8-11", "2"), "default/duo/b": ("8-11", "2")},
    4: {"default/trio/x": ("12-15", "3"), "default/trio/y": ("1-3", "0")},
    5: {"default/solo/app": ("4-7", "1")},
    6: {"default/legacy/p": ("12-15", "3"), "default/legacy/q": ("1-3", "0")},
}


def test_affinity(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "affinity.yaml", "box16-colocate-pods.yaml")
    all_as_expected(doc)
    expect_steps(doc, AFFINITY)


COLOCATION: dict[str, dict[int, dict[str, Placement]]] = {
    "box16.yaml": {
        1: {"team/a/c1": ("4-7", "1"), "team/a/c2": ("8-11", "2")},
        2: {"team/b/c1": ("12-15", "3")},
        3: {"other/c/c1": ("1-3", "0")},
        4: {"default/pair/main": ("4-7", "1"), "default/pair/helper": ("4-7", "1")},
    },
    "box16-colocate-pods.yaml": {
        1: {"team/a/c1": ("4-7", "1"), "team/a/c2": ("4-7", "1")},
        2: {"team/b/c1": ("8-11", "2")},
        3: {"other/c/c1": ("12-15", "3")},
        4: {"default/pair/main": ("1-3", "0"), "default/pair/helper": ("1-3", "0")},
    },
    "box16-colocate-namespaces.yaml": {
        1: {"team/a/c1": ("4-7", "1"), "team/a/c2": ("4-7", "1")},
        2: {"team/b/c1": ("4-7", "1")},
        3: {"other/c/c1": ("8-11", "2")},
        4: {"default/pair/main": ("12-15", "3"), "default/pair/helper": ("12-15", "3")},
    },
}


@pytest.mark.parametrize("config", sorted(COLOCATION))
def test_colocation(capsys: pytest.CaptureFixture[str], config: str) -> None:
    doc = simulate(capsys, "colocation.yaml", config)
    all_as_expected(doc)
    expect_steps(doc, COLOCATION[config])


# ====================================================================== opting out of pinning
def test_preserve(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "preserve.yaml", "box16.yaml")
    all_as_expected(doc)
    assert placements(doc, 1)["default/keepmem/app"] == ("4-7", "3")
    cpus, mems = placements(doc, 2)["default/keep/app"]
    assert cpus == "2-3" and mems is not None
    assert placements(doc, 3)["default/both/pinned"] == ("12-13", "3")
    assert placements(doc, 3)["default/both/free"] == (None, None)
    last = placements(doc, 4)
    assert last["default/db/postgres"] == ("4-5", "1")
    assert last["default/keepmem/app"] == ("6-7", "3")
    assert last["default/keep/app"] == (cpus, mems)


def test_no_pin_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "preserve.yaml", "box16-no-pin-cpu.yaml")
    all_as_expected(doc)
    last = placements(doc, 4)
    assert last["default/keepmem/app"] == (None, "3")
    assert last["default/keep/app"][0] == "2-3"
    assert last["default/db/postgres"] == (None, "1")
    assert last["default/both/pinned"] == ("12-13", "3")


def test_no_pin_memory(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "preserve.yaml", "box16-no-pin-memory.yaml")
    all_as_expected(doc)
    last = placements(doc, 4)
    assert last["default/keepmem/app"] == ("6-7", "3")
    assert last["default/keep/app"] == ("2-3", None)
    assert last["default/db/postgres"] == ("4-5", None)


# ====================================================================== memory types
def test_memory_types_pmem(capsys: pytest.CaptureFixture[str]) -> None:
    name = "server-112-pmem"
    m = machine_of(name)
    doc = simulate(capsys, "memory-pmem.yaml", "pmem.yaml", name)
    all_as_expected(doc)
    final = placements(doc, 6)
    pmem = frozenset({MemoryType.PMEM})
    dram = frozenset({MemoryType.DRAM})

    def placed(key: str, step: int | None = None) -> tuple[str, str]:
        cpus, mems = final[key] if step is None else placements(doc, step)[key]
        assert cpus is not None and mems is not None, key
        return cpus, mems

    def nearest_pmem(cpus: str) -> int:
        """The PMEM node nearest to the NUMA node of ``cpus`` (4 for nodes 0-1, 5 for 2-3)."""
        node = m.node_of(CPUSet.parse(cpus).min())
        return min(m.nodes_of_type(MemoryType.PMEM), key=lambda n: (m.distance(node, n), n))

    # a zone covers every requested type: a pool without PMEM of its own offers the nearest
    cpus, mems = placed("default/pm/app")
    assert mems == str(nearest_pmem(cpus)) and pool_memory_ok(m, cpus, mems, pmem)
    cpus, mems = placed("default/dr/app")
    assert CPUSet.parse(mems) <= m.cpu_nodes and pool_memory_ok(m, cpus, mems, dram)
    for key in ("default/mix/app", "default/dflt/app"):
        cpus, mems = placed(key)
        assert pool_memory_ok(m, cpus, mems, DEFAULT_TYPES), key
        # both types: the node of the CPUs and the PMEM nearest to it
        node = m.node_of(CPUSet.parse(cpus).min())
        assert CPUSet.parse(mems) == CPUSet.of(node, nearest_pmem(cpus)), key
    cpus, mems = placed("default/gpm/app")
    assert len(CPUSet.parse(cpus)) == 1 and mems == str(nearest_pmem(cpus))
    # cold start: PMEM only at first, the pool's DRAM added when the second is over
    cpus, cold = placed("default/cold/app", 6)
    assert cold == str(nearest_pmem(cpus))
    cpus_after, warm = placed("default/cold/app", 7)
    assert cpus_after == cpus
    node = m.node_of(CPUSet.parse(cpus).min())
    assert CPUSet.parse(warm) == CPUSet.of(node, int(cold))
    # an hour-long cold start ended by the cold-start-done event for that container
    assert placed("default/cold2/app", 8)[1] == cold
    assert placed("default/cold2/app", 9)[1] == warm


def test_memory_types_hbm(capsys: pytest.CaptureFixture[str]) -> None:
    name = "hbm-cxl"
    m = machine_of(name)
    hbm_nodes = m.nodes_of_type(MemoryType.HBM)
    doc = simulate(capsys, "memory-hbm.yaml", "hbm.yaml", name)
    all_as_expected(doc)
    final = placements(doc, 4)
    hbm_of = {m.closest_cpu_node(n): n for n in hbm_nodes}

    cpus, mems = final["default/h/app"]
    assert cpus is not None and mems is not None
    (cpu,) = CPUSet.parse(cpus)
    assert CPUSet.parse(mems) == CPUSet.of(hbm_of[m.node_of(cpu)])
    for key in ("default/d/app", "default/g/app"):
        cpus, mems = final[key]
        assert cpus is not None and mems is not None
        assert CPUSet.parse(mems).isdisjoint(hbm_nodes), f"{key}: HBM without asking"
        assert pool_memory_ok(m, cpus, mems, DEFAULT_TYPES), key
    cpus, mems = final["default/dh/app"]
    assert cpus is not None and mems is not None
    types = frozenset({MemoryType.DRAM, MemoryType.HBM})
    assert CPUSet.parse(mems) & hbm_nodes and pool_memory_ok(m, cpus, mems, types)


# ====================================================================== CPU priority
def test_cpu_priority(capsys: pytest.CaptureFixture[str]) -> None:
    m = machine_of("hybrid-desktop")
    e_cores = CPUSet.parse("16-23")
    doc = simulate(capsys, "cpu-priority.yaml", "hybrid.yaml", "hybrid-desktop")
    all_as_expected(doc)
    final = placements(doc, 4)
    assert final["default/lo/app"] == ("16-17", "0")
    assert final["default/hi/app"] == ("2-3", "0")
    plain = CPUSet.parse(str(final["default/plain/app"][0]))
    assert len(plain) == 2 and plain.isdisjoint(e_cores)  # E-cores only for low priority
    exclusive = CPUSet.parse("16-17,2-3") | plain
    assert final["default/be/app"] == (str(m.all_cpus - CPUSet.of(0) - exclusive), "0")

    low = simulate(capsys, "cpu-priority.yaml", "hybrid-low-priority.yaml", "hybrid-desktop")
    final = placements(low, 4)
    assert final["default/hi/app"] == ("2-3", "0")
    plain = CPUSet.parse(str(final["default/plain/app"][0]))
    assert len(plain) == 2 and plain <= e_cores  # defaultCPUPriority: low


# ====================================================================== unlimited burstable
UNLIMITED: dict[str, dict[int, dict[str, Placement]]] = {
    "box16.yaml": {
        1: {"default/ub/app": ("8-15", "2-3")},
        2: {"default/ubn/app": ("4-7", "1")},
        3: {"default/ubs/app": ("1-15", "0-3")},
        4: {"default/lim/app": ("8-11", "2")},
        5: {"default/nomem/app": ("1-15", "0-3")},
    },
    "box16-burstable-numa.yaml": {
        1: {"default/ub/app": ("4-7", "1")},
        2: {"default/ubn/app": ("8-11", "2")},
        3: {"default/ubs/app": ("1-15", "0-3")},
        4: {"default/lim/app": ("12-15", "3")},
        5: {"default/nomem/app": ("1-15", "0-3")},
    },
}


@pytest.mark.parametrize("config", sorted(UNLIMITED))
def test_unlimited_burstable(capsys: pytest.CaptureFixture[str], config: str) -> None:
    doc = simulate(capsys, "unlimited-burstable.yaml", config)
    all_as_expected(doc)
    expect_steps(doc, UNLIMITED[config])


# ====================================================================== topology hints
HINTS: dict[int, dict[str, Placement]] = {
    1: {"default/gpu/app": ("12-15", "3")},
    2: {"default/nvme/app": ("8-11", "2")},
    3: {"default/nohint/app": ("4-7", "1")},
    4: {"default/denied/app": ("1-3", "0")},
    5: {"default/devonly/app": ("12-15", "3")},
    6: {"default/both/app": ("8-15", "2-3")},
    7: {"default/allowed/app": ("8-11", "2")},
    8: {
        "default/pick/app": ("14-15", "3"),
        "default/gpu/app": ("12-13", "3"),
        "default/devonly/app": ("12-13", "3"),
        "default/both/app": ("8-13", "2-3"),
    },
    9: {
        "default/nopick/app": ("12", "3"),
        "default/gpu/app": ("13", "3"),
        "default/devonly/app": ("13", "3"),
        "default/both/app": ("8-11,13", "2-3"),
    },
}


def test_topology_hints(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "hints.yaml", "box16.yaml", DEVICES)
    all_as_expected(doc)
    expect_steps(doc, HINTS)


def test_strict_topology_hints(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "hints-strict.yaml", "box16-no-node3.yaml", DEVICES)
    all_as_expected(doc)
    # no pool has any of the hint's CPUs: equal (zero) hint scores, and §2 item 3 then
    # prefers the deeper pool and the lower id (node #0) before looking at load
    assert placements(doc, 1)["default/loose/app"] == ("1-3", "0")
    assert "default/strict/app" not in placements(doc, 2)


# ====================================================================== reconfiguration
def test_reconfigure(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "reconfigure.yaml", "box16.yaml")
    all_as_expected(doc)
    first = {"default/db/postgres": ("4-5", "1"), "default/be/app": ("8-11", "2")}
    assert placements(doc, 2) == first
    assert placements(doc, 3) == first  # a bigger reservation moves nobody
    assert placements(doc, 4) == {**first, "kube-system/coredns/coredns": ("0-1", "0-3")}
    moved = placements(doc, 5)
    assert moved["default/db/postgres"] == ("4-5", "1")
    # socket #0 is the top pool now: coredns keeps its CPUs, its memory is the new root's
    assert moved["kube-system/coredns/coredns"] == ("0-1", "0-1")
    assert moved["default/be/app"] in (("2-3", "0"), ("6-7", "1"))
    assert placements(doc, 6) == moved  # refused
    assert placements(doc, 7) == moved  # invalid
    last = placements(doc, 8)
    assert "default/db/postgres" not in last
    grown = ("4-7", "1") if moved["default/be/app"] == ("6-7", "1") else ("2-3", "0")
    assert last["default/be/app"] == grown


def test_reconfigure_moves_only_what_lost_its_cpus(capsys: pytest.CaptureFixture[str]) -> None:
    """b (on 15) loses its CPU; c (on 14) could keep its one: c stays, b moves to a shared
    CPU (found by this test: b took 14 and c moved to 1; fixed)."""
    doc = simulate(capsys, "reconfigure-order.yaml", "single16.yaml", SINGLE)
    assert placements(doc, 4) == {"default/b/app": ("15", "0"), "default/c/app": ("14", "0")}
    assert placements(doc, 5) == {"default/b/app": ("1", "0"), "default/c/app": ("14", "0")}


def test_reconfigure_never_overcommits_a_pool(capsys: pytest.CaptureFixture[str]) -> None:
    """Socket #0's shared CPUs drop from 5 to 4 under y/c1's 4.5 CPUs: y/c1 must move (the
    root pool has room) or the configuration be refused (found by this test; fixed)."""
    doc = simulate(capsys, "reconfigure-capacity.yaml", "box16.yaml")
    before = placements(doc, 2)
    assert before["default/y/c1"] == ("1-3,6-7", "0-1")
    after = placements(doc, 3)
    if step_of(doc, 3)["ok"]:
        cpus = after["default/y/c1"][0]
        assert cpus is not None and len(CPUSet.parse(cpus)) >= 5, after
    else:
        assert after == before


def test_reconfigure_moves_reserved_containers_to_the_new_reserved_cpus(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The reserved CPU moves from node 0 to node 1: coredns gets CPU 4 and keeps the root
    pool's memory, every node's (as in the reference)."""
    doc = simulate(capsys, "reconfigure-reserved.yaml", "box16.yaml")
    all_as_expected(doc)
    assert placements(doc, 1) == {"kube-system/coredns/coredns": ("0", "0-3")}
    assert placements(doc, 2) == {"kube-system/coredns/coredns": ("4", "0-3")}


# ====================================================================== classes
def replay_classes() -> Any:
    """Replay classes.yaml through the Python API, to look at what the runtime and the host
    controller got besides cpus and mems."""
    container = build_simulator(
        "topology-aware", machine="box-16", config_file=str(CONFIGS / "box16-classes.yaml")
    )
    container.core.resource_manager().start(container.core.policy_config())
    workload = load_workload(str(HERE / "classes.yaml"))
    steps = asyncio.run(asyncio.wait_for(replay(container, workload), 60))
    return container, steps


def test_classes() -> None:
    container, steps = replay_classes()
    assert [s.ok for s in steps] == [True] * 7 + [False, False]
    assert "nope" in " ".join(steps[7].errors)
    assert "this one is Burstable" in " ".join(steps[8].errors)  # cpu-class, not Guaranteed
    runtime = container.runtime()
    classes = container.core.resource_manager().host.power_target.classes  # class per CPU

    def scheduler(ns: str, pod: str, name: str) -> Any:
        return runtime.find_container(ns, pod, name).container.linux.scheduler

    def cpu_class(ns: str, pod: str, name: str) -> str | None:
        cpus = CPUSet.parse(
            runtime.find_container(ns, pod, name).container.linux.resources.cpu.cpus
        )
        found = {classes.get(cpu) for cpu in cpus}
        assert len(found) == 1, found  # one class on all of the container's CPUs
        return found.pop()

    assert cpu_class("kube-system", "coredns", "coredns") == "powersave"  # reservedPoolCPUClass
    assert cpu_class("default", "be", "app") == "normal"  # sharedPoolCPUClass
    assert cpu_class("default", "rt", "app") == "turbo"  # defaultExclusiveCPUClass
    assert cpu_class("default", "slow", "app") == "powersave"  # the cpu-class annotation

    be = scheduler("default", "be", "app")  # podQoSSchedulingClasses: BestEffort
    assert (be.policy, be.nice) == (api_pb2.SCHED_IDLE, 19)
    job = scheduler("batch-jobs", "job", "worker")  # namespaceSchedulingClasses
    assert (job.policy, job.nice) == (api_pb2.SCHED_BATCH, 10)
    rt = scheduler("default", "rt", "app")  # the scheduling-class annotation
    assert (rt.policy, rt.priority) == (api_pb2.SCHED_FIFO, 42)
    job_status = runtime.find_container("batch-jobs", "job", "worker")
    io = job_status.container.linux.io_priority
    assert (io.class_, io.priority) == (api_pb2.IOPRIO_CLASS_BE, 7)

    classy = container.core.resource_manager().container(
        runtime.find_container("default", "classy", "app").id
    )
    assert classy is not None
    assert (classy.resources.rdt_class, classy.resources.blockio_class) == ("gold", "slowread")
    irq = container.core.resource_manager().container(
        runtime.find_container("default", "irq", "app").id
    )
    assert irq is not None and irq.tags.get("topology-aware.irq-affinity") == "mode: claim"
