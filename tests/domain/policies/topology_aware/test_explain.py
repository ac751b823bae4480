"""The topology-aware policy explains its pool choice (docs/explain.md): the pools dropped
before the ranking and why, every scored pool's items in the order of docs/topology-aware.md
("Pool choice", items 1-12), the winner and the first item on which it beats the runner-up,
or the refusal naming what was short. Worked out on demand, it changes nothing."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nrirp.adapters.fakehw.hints import FakeTopologyHints
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Device
from nrirp.domain.policy.explanation import Explanation, Item, Stage, Standing, Verdict
from nrirp.domain.topology.hints import TopologyHint
from nrirp.testing import EngineHarness
from nrirp.testing.builders import besteffort, burstable, guaranteed, pod

CONFIG: dict[str, Any] = {"reservedResources": {"cpu": "750m"}}


def engine(machine: str = "box-16", **spec: Any) -> EngineHarness:
    return EngineHarness.build("topology-aware", machine=machine, config={**CONFIG, **spec})


def pool_stage(explanation: Explanation) -> Stage:
    stage = explanation.stage("pool")
    assert stage is not None, explanation
    return stage


def chosen(stage: Stage) -> str:
    [name] = [c.name for c in stage.candidates if c.standing is Standing.CHOSEN]
    return name


def pool_of(h: EngineHarness, ref: str) -> str:
    return h.container(ref).tags["topology-aware.pool"]


def wins(item: Item, mine: Any, theirs: Any) -> bool:
    """Whether ``mine`` beats ``theirs`` on ``item`` (its ``better`` direction)."""
    if item.better == "higher":
        return bool(mine > theirs)
    if item.better == "lower":
        return bool(mine < theirs)
    if item.better == "true":
        return mine is True and theirs is not True
    raise AssertionError(f"unexpected direction {item.better!r} of {item}")


def test_affinity_decides_item_2() -> None:
    h = engine(colocatePods=True)
    h.run(pod("db", burstable("a", "500m", "100Mi", cpu_limit=1, memory_limit="200Mi")))
    h.run(
        pod(
            "db2",
            burstable("b", "200m", "64Mi", cpu_limit=1, memory_limit="128Mi"),
            annotations={
                "resource-policy.nri.io/affinity": (
                    "b: [{scope: {key: namespace, operator: Equals, values: [default]},"
                    " match: {key: name, operator: Equals, values: [a]}, weight: 10}]"
                )
            },
        )
    )
    explanation = h.engine.manager.explain("default/db2/b")
    stage = pool_stage(explanation)
    assert explanation.verdict is Verdict.PLACED
    assert (
        chosen(stage) == stage.winner == pool_of(h, "default/db/a") == pool_of(h, "default/db2/b")
    )
    assert stage.deciding is not None
    assert (stage.deciding.item.number, stage.deciding.item.name) == (2, "affinity")
    assert stage.deciding.item.value == 10
    assert wins(stage.deciding.item, 10, stage.deciding.runner_up_value)
    assert "won on item 2 (affinity)" in explanation.summary


def test_burstable_without_memory_limit_prefers_the_most_memory_item_4() -> None:
    """docs/topology-aware.md item 4: without a memory limit, more pool memory (the root)."""
    h = engine()
    h.run(pod("b", burstable("c", "500m", "100Mi", cpu_limit=1)))
    stage = pool_stage(h.engine.manager.explain("default/b/c"))
    assert stage.winner == pool_of(h, "default/b/c") == "root"
    assert stage.deciding is not None
    item = stage.deciding.item
    assert item.number == 4 and item.name == "pool memory, bytes (Burstable without memory limit)"
    assert isinstance(item.value, int) and wins(item, item.value, stage.deciding.runner_up_value)


def test_exclusive_container_items_and_order() -> None:
    h = engine()
    h.run(pod("g", guaranteed("c", 2, "1Gi")))
    explanation = h.engine.manager.explain("default/g/c")
    stage = pool_stage(explanation)
    assert stage.winner == pool_of(h, "default/g/c")
    assert explanation.placement.startswith("exclusive cpus ")
    [winner] = [c for c in stage.candidates if c.standing is Standing.CHOSEN]
    numbers = [i.number for i in winner.items]
    assert numbers == sorted(numbers)  # the documented order
    assert set(numbers) >= {1, 2, 4, 5, 6, 9, 10, 11, 12}
    names = {i.name: i.value for i in winner.items}
    assert names["enough shared capacity"] is True
    assert names["sliceable shared capacity (mCPU)"] > 0
    # the deeper NUMA node beats the socket and the root on depth (item 10) when nothing
    # before it differs
    for other in stage.candidates:
        if other.standing is Standing.RANKED and other.name in ("root", "socket #0", "socket #1"):
            first = _first_difference(winner.items, other.items)
            assert first is not None and first.number in (6, 10), (other.name, first)
    assert explanation.stage("memory") is not None


def test_reserved_container_lives_in_the_root_pool() -> None:
    h = engine()
    h.run(pod("dns", burstable("c", "100m", "64Mi", memory_limit="64Mi"), namespace="kube-system"))
    explanation = h.engine.manager.explain("kube-system/dns/c")
    stage = pool_stage(explanation)
    assert stage.winner == "root" and explanation.verdict is Verdict.PLACED
    dropped = [c for c in stage.candidates if c.standing is Standing.DROPPED]
    assert dropped and all("reserved containers live in the root pool" in c.note for c in dropped)
    assert "reserved" in explanation.stages[0].outcome


def test_refusal_names_what_was_short() -> None:
    h = engine()
    h.run(pod("big", guaranteed("c", 20, "1Gi")), refusals=True)
    explanation = h.engine.manager.explain("default/big/c")
    assert explanation.verdict is Verdict.REFUSED
    assert explanation.shortage.startswith("no pool has 20 exclusive CPUs: best ")
    assert explanation.refusal.startswith("create-container: ")
    assert "no pool has 20 exclusive CPUs" in explanation.refusal
    assert explanation.placement == ""
    stage = pool_stage(explanation)
    assert stage.winner is None and stage.outcome.startswith("refused: no pool has 20")
    scored = [c for c in stage.candidates if c.items]
    assert scored and all(c.standing is Standing.NOT_VIABLE for c in scored)
    assert all("needed" in c.note and "20000m" in c.note for c in scored)
    for candidate in scored:
        values = {i.name: i.value for i in candidate.items}
        assert values["enough shared capacity"] is False


def test_memory_refusal_drops_every_pool() -> None:
    h = engine()
    h.run(pod("huge", guaranteed("c", 1, "200Gi")), refusals=True)
    explanation = h.engine.manager.explain("default/huge/c")
    assert explanation.verdict is Verdict.REFUSED
    assert "no pool has 200.0 GiB of dram memory" in explanation.shortage
    stage = pool_stage(explanation)
    assert all(c.standing is Standing.DROPPED for c in stage.candidates)
    assert all("is smaller than the request (200.0 GiB)" in c.note for c in stage.candidates)


def test_a_container_placed_before_the_node_changed_is_said_so() -> None:
    """Explained against the state now: a container whose pool would not be chosen today
    gets a note saying where it sits and where it would go."""
    h = engine()
    h.run(pod("s", besteffort("c")))
    first = pool_of(h, "default/s/c")
    for i in range(3):
        h.run(pod(f"g{i}", guaranteed("c", 3, "1Gi")))
    explanation = h.engine.manager.explain("default/s/c")
    stage = pool_stage(explanation)
    if stage.winner != first:
        assert any(f"it sits in {first}" in note for note in explanation.notes)
    else:
        assert not explanation.notes


def test_preserved_container_is_left_alone() -> None:
    h = engine()
    h.run(
        pod(
            "p",
            guaranteed("c", 1, "64Mi"),
            annotations={"cpu.preserve.resource-policy.nri.io": "true"},
        )
    )
    explanation = h.engine.manager.explain("default/p/c")
    assert explanation.verdict is Verdict.LEFT_ALONE


def _first_difference(mine: tuple[Item, ...], theirs: tuple[Item, ...]) -> Item | None:
    for a, b in zip(mine, theirs, strict=True):
        if a.value != b.value:
            return a
    return None


# ---------------------------------------------------------------------------- properties
SHAPES = st.sampled_from(["be", "bu", "bu-nolimit", "g1", "g2", "gfrac", "ks"])


def _pod(i: int, shape: str, colocated: bool) -> Any:
    name = f"p{i}"
    extra: dict[str, Any] = {}
    if shape == "ks":
        extra["namespace"] = "kube-system"
    if shape == "be":
        spec = besteffort("c")
    elif shape == "bu":
        spec = burstable("c", "300m", "64Mi", cpu_limit="600m", memory_limit="128Mi")
    elif shape == "bu-nolimit":
        spec = burstable("c", "200m", "32Mi")
    elif shape == "g1":
        spec = guaranteed("c", 1, "128Mi")
    elif shape == "g2":
        spec = guaranteed("c", 2, "256Mi")
    elif shape == "gfrac":
        spec = guaranteed("c", "1500m", "128Mi")
    else:
        spec = burstable("c", "100m", "32Mi", memory_limit="64Mi")
    return pod(name, spec, **extra)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    machine=st.sampled_from(["box-16", "server-112-pmem"]),
    shapes=st.lists(SHAPES, min_size=1, max_size=14),
    colocate=st.booleans(),
)
def test_explanation_of_a_fresh_decision_is_the_decision(
    machine: str, shapes: list[str], colocate: bool
) -> None:
    """Right after a container is placed, its explanation chooses its pool and kind; every
    scored pool's items follow the key the planner compared (no item of an unknown key
    shape); the winner beats each pool ranked below it on the first item that differs; and
    explaining changes nothing: a twin engine that never explained decides the same."""
    h = engine(machine, colocatePods=colocate)
    twin = engine(machine, colocatePods=colocate)
    for i, shape in enumerate(shapes):
        spec = _pod(i, shape, colocate)
        running = h.run(spec, refusals=True)
        twin.run(spec, refusals=True)
        ref = f"{spec.namespace}/{spec.name}/c"
        before = h.engine.manager.describe()
        explanation = h.engine.manager.explain(ref)
        assert h.engine.manager.describe() == before
        if "c" in running.refused:
            assert explanation.verdict is Verdict.REFUSED, explanation
            continue
        ctr = h.container(ref)
        stage = pool_stage(explanation)
        assert explanation.verdict is Verdict.PLACED, explanation
        assert stage.winner == ctr.tags["topology-aware.pool"], explanation
        # the same grant: kind, CPUs, pool and memory (as the decision log words it)
        assert explanation.summary.startswith(f"{explanation.placement}:"), explanation
        assert not explanation.notes, explanation.notes
        scored = [c for c in stage.candidates if c.items]
        [winner] = [c for c in scored if c.standing is Standing.CHOSEN]
        for candidate in scored:
            assert all(item.number > 0 for item in candidate.items), candidate
            assert len(candidate.items) == len(winner.items)
        below = False
        for candidate in scored:
            if candidate is winner:
                below = True
                continue
            if below and candidate.standing is Standing.RANKED:
                first = _first_difference(winner.items, candidate.items)
                if first is not None and first.name != "pool id":
                    theirs = candidate.items[winner.items.index(first)].value
                    assert wins(first, first.value, theirs), (first, candidate)
    assert h.engine.manager.containers() == twin.engine.manager.containers()


def test_topology_hints_decide_on_item_3() -> None:
    """With topology hints the key is capacity, affinity, then the hint items (item 3: the
    product of hint scores, of the non-zero ones, depth, id)."""
    hints = FakeTopologyHints(
        {"/dev/accel0": TopologyHint(provider="/sys/devices/pci0000:00/0000:00:05.0",
                                      cpus=CPUSet.parse("12-15"))}
    )  # fmt: skip
    h = EngineHarness.build("topology-aware", machine="box-16", config=CONFIG, topology_hints=hints)
    spec = pod("g", guaranteed("c", 1, "64Mi"))
    h.engine.run_pod_sandbox(spec.sandbox)
    ctr = spec.container("c", memory_capacity=h.engine.memory_capacity)
    device = Device(path="/dev/accel0", type="c", major=240, minor=0)
    h.engine.create_container(spec.sandbox, attrs.evolve(ctr, devices=(device,)))
    stage = pool_stage(h.engine.manager.explain("default/g/c"))
    assert stage.winner == pool_of(h, ctr.id) == "NUMA node #3"
    [winner] = [c for c in stage.candidates if c.standing is Standing.CHOSEN]
    assert [i.number for i in winner.items] == [1, 1, 1, 2, 3, 3, 3, 3]
    # socket #1 holds the device's CPUs as well: the deeper pool wins (item 3, depth)
    assert stage.deciding is not None and stage.deciding.runner_up == "socket #1"
    assert (stage.deciding.item.number, stage.deciding.item.name) == (3, "depth")
    product = {c.name: c.items[4].value for c in stage.candidates if c.items}
    assert {i.name for i in winner.items[4:5]} == {"product of hint scores"}
    assert product["NUMA node #3"] == product["socket #1"] > product["NUMA node #0"]


@pytest.mark.parametrize("policy", ["template", "none"])
def test_policies_that_decide_nothing_say_so(policy: str) -> None:
    h = EngineHarness.build(policy, machine="box-16")
    h.run(pod("a", besteffort("c")))
    explanation = h.engine.manager.explain("a/c")
    assert explanation.verdict is Verdict.NOT_DECIDED
    assert f"the {policy} policy decides nothing" in explanation.summary


def test_cpu_class_the_host_applies_on_some_cpus_only_decides_item_8() -> None:
    """Scoring item 8 (issue 16): with EPP writable only on socket #1's CPUs, an exclusive
    container whose class sets EPP goes to socket #1; the explanation shows item 8."""
    from nrirp.adapters.memory import InMemoryCPUPower
    from nrirp.domain.hostcontrol.power import ALL_KNOBS, CPUCaps, Knob, PowerCaps
    from tests.domain.hostcontrol.test_enforcer import BASE, MACHINE, TURBO, start

    socket1 = MACHINE.package_cpus(1)
    partial = PowerCaps(
        cpus={
            i: CPUCaps(1_000_000, TURBO, BASE, knobs=ALL_KNOBS if i in socket1 else frozenset())
            for i in MACHINE.online
        },
        unavailable={Knob.EPP: "read-only"},
    )
    spec = {
        "cpuClasses": [{"name": "perf", "energyPerformancePreference": 0}],
        "defaultExclusiveCPUClass": "perf",
    }
    h = start("topology-aware", spec, power=InMemoryCPUPower(partial))
    _, ctr, _ = h.run("g", 2000, guaranteed=True)
    stage = pool_stage(h.manager.explain(ctr.id))
    assert stage.winner == h.manager.container(ctr.id).tags["topology-aware.pool"]  # type: ignore[union-attr]
    [winner] = [c for c in stage.candidates if c.standing is Standing.CHOSEN]
    items = {i.name: i for i in winner.items}
    assert items["enough CPUs where the CPU class applies"].value is True
    assert all(i.number > 0 for i in winner.items)
    in_socket0 = [c for c in stage.candidates if c.items and c.name == "NUMA node #0"]
    assert in_socket0
    assert {i.name: i.value for i in in_socket0[0].items}[
        "enough CPUs where the CPU class applies"
    ] is False
