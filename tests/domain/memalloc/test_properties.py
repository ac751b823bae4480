"""Property tests: random allocate/release sequences on catalogue machines, checked against
brute-force oracles over every set of usable nodes."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import cache

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.memalloc import (
    MemoryAllocationError,
    MemoryAllocator,
    MemoryOffer,
    MemoryRequest,
)
from nrirp.domain.topology import Machine, MemoryType
from tests.domain.memalloc.support import (
    ALL_TYPES,
    DRAM,
    DRAM_PMEM,
    HBM,
    PMEM,
    machine,
    snapshot,
)

MACHINES = ("box-16", "server-112-pmem", "hbm-cxl")
TYPE_CHOICES = (DRAM, DRAM, DRAM, DRAM_PMEM, DRAM_PMEM, PMEM, HBM, ALL_TYPES)
SIZES = (0, 1, 1, 1, 2, 2, 3, 4, 6, 12)  # units of _unit()
OWNERS = 10


@attrs.frozen
class Allocate:
    request: MemoryRequest


@attrs.frozen
class Release:
    owner: str


Op = Allocate | Release


@attrs.frozen
class Scenario:
    machine: Machine
    usable: CPUSet
    ops: tuple[Op, ...]


def _unit(m: Machine) -> int:
    """A third of the smallest node: sizes of a few units overcommit nodes quickly."""
    return min(n.memory_bytes for n in m.nodes.values()) // 3


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """A machine, its usable nodes and a sequence of allocate/release calls.

    The calls come from a seeded ``random.Random`` drawn by hypothesis: plain strategies
    gave mostly short runs in which nothing was ever widened and shrunk back.
    """
    m = machine(draw(st.sampled_from(MACHINES)))
    all_nodes = sorted(m.nodes)
    everything = CPUSet.from_ids(all_nodes)
    subsets = st.sets(st.sampled_from(all_nodes), min_size=1).map(CPUSet.from_ids)
    usable = draw(st.one_of(st.just(everything), st.just(everything), subsets))
    rnd = draw(st.randoms(use_true_random=True))
    unit = _unit(m)
    ops: list[Op] = []
    allocated: list[str] = []
    for _ in range(draw(st.integers(6, 40))):
        if allocated and rnd.random() < 0.35:
            ops.append(Release(rnd.choice(allocated)))
            continue
        owner = f"c{rnd.randrange(OWNERS)}"
        allocated.append(owner)
        if rnd.random() < 0.7:
            nodes = CPUSet.of(rnd.choice(all_nodes))  # small zones overcommit first
        else:
            nodes = CPUSet.from_ids(rnd.sample(all_nodes, rnd.randint(1, len(all_nodes))))
        size = rnd.choice(SIZES) * unit
        strict = rnd.random() < 0.15
        ops.append(Allocate(MemoryRequest(owner, size, nodes, rnd.choice(TYPE_CHOICES), strict)))
    return Scenario(m, usable, tuple(ops))


# ---------------------------------------------------------------- oracles
@attrs.frozen
class Need:
    """What an owner needs, computed independently of the allocator."""

    size: int
    preferred: int
    allowed: int
    strict: bool


class Oracle:
    def __init__(self, m: Machine, usable: CPUSet) -> None:
        self.machine = m
        self.usable = usable.bits
        self.subsets = _subsets(usable.bits)
        self.caps = {s: sum(m.memory_bytes(n) for n in CPUSet(s)) for s in self.subsets}

    def allowed(self, types: frozenset[MemoryType]) -> int:
        return self.usable & sum(
            1 << n.id for n in self.machine.nodes.values() if n.memory_type in types
        )

    def need(self, request: MemoryRequest) -> Need | str:
        """The owner's need, or why the request is refused outright."""
        allowed = self.allowed(request.types)
        if not allowed:
            return "no usable node"
        preferred = request.nodes.bits & allowed
        if not preferred:
            if request.strict:
                return "strict without an allowed node"
            distance = {
                n: min(self.machine.distance(a, n) for a in request.nodes) for n in CPUSet(allowed)
            }
            best = min(distance.values())
            preferred = CPUSet.from_ids(n for n, d in distance.items() if d == best).bits
        return Need(request.size, preferred, allowed, request.strict)

    def feasible(self, needs: Iterator[Need]) -> bool:
        """Could every need be placed in some zone preferred <= zone <= allowed (strict:
        zone == preferred)? Widest possible zones make Hall's condition easiest."""
        zones = [(n.preferred if n.strict else n.allowed, n.size) for n in needs]
        return self.fits(zones)

    def fits(self, zones: list[tuple[int, int]]) -> bool:
        for s in self.subsets:
            if sum(size for z, size in zones if z & ~s == 0) > self.caps[s]:
                return False
        return True


@cache
def _subsets(bits: int) -> tuple[int, ...]:
    ids = CPUSet(bits).ids()
    out = []
    for mask in range(1, 1 << len(ids)):
        out.append(sum(1 << ids[i] for i in range(len(ids)) if mask >> i & 1))
    return tuple(out)


def _zones(alloc: MemoryAllocator) -> list[tuple[int, int]]:
    out = []
    for owner in alloc.owners():
        allocation = alloc.allocation(owner)
        assert allocation is not None
        out.append((allocation.zone.bits, allocation.request.size))
    return out


def _check_invariants(alloc: MemoryAllocator, oracle: Oracle, needs: dict[str, Need]) -> None:
    assert set(alloc.owners()) == set(needs)
    for owner, need in needs.items():
        allocation = alloc.allocation(owner)
        assert allocation is not None
        zone = allocation.zone.bits
        # (1) within the usable nodes of allowed types: no HBM unless asked for
        assert zone & ~need.allowed == 0
        # (2) never narrower than the preferred zone, strict ones exactly there
        assert allocation.preferred.bits == need.preferred
        assert zone & need.preferred == need.preferred
        assert not need.strict or zone == need.preferred
        assert allocation.widened == (owner in alloc.widened())
    # (3) no set of usable nodes holds more than its capacity
    assert oracle.fits(_zones(alloc))
    assert sum(alloc.zones().values()) == sum(n.size for n in needs.values())
    assert alloc.usage(alloc.nodes) == sum(n.size for n in needs.values())


def _check_shrunk_back(alloc: MemoryAllocator, oracle: Oracle) -> None:
    """No widened owner could be on a narrower step of its widening chain."""
    zones = _zones(alloc)
    index = {o: i for i, o in enumerate(alloc.owners())}
    for owner in alloc.widened():
        allocation = alloc.allocation(owner)
        assert allocation is not None
        for narrower in _chain(alloc, owner):
            if narrower == allocation.zone.bits or narrower & ~allocation.zone.bits:
                break
            trial = list(zones)
            trial[index[owner]] = (narrower, allocation.request.size)
            assert not oracle.fits(trial), f"{owner} could shrink to {CPUSet(narrower)}"


def _chain(alloc: MemoryAllocator, owner: str) -> list[int]:
    """The widening steps from the owner's preferred zone, by the machine's distances."""
    allocation = alloc.allocation(owner)
    assert allocation is not None
    m = alloc.machine
    allowed = alloc.nodes.bits & sum(
        1 << n.id for n in m.nodes.values() if n.memory_type in allocation.request.types
    )
    steps = [allocation.preferred.bits]
    while rest := allowed & ~steps[-1]:
        dist = {n: min(m.distance(a, n) for a in CPUSet(steps[-1])) for n in CPUSet(rest)}
        best = min(dist.values())
        steps.append(steps[-1] | CPUSet.from_ids(n for n, d in dist.items() if d == best).bits)
    return steps


# ---------------------------------------------------------------- the run
def _run(scenario: Scenario, **options: int) -> list[object]:
    """Apply every op with all checks; return what each op returned (or its error type)."""
    alloc = MemoryAllocator(scenario.machine, nodes=scenario.usable, **options)
    oracle = Oracle(scenario.machine, scenario.usable)
    needs: dict[str, Need] = {}
    results: list[object] = []
    for op in scenario.ops:
        before = snapshot(alloc)
        if isinstance(op, Release):
            moved = alloc.release(op.owner)
            needs.pop(op.owner, None)
            results.append(moved)
            _check_invariants(alloc, oracle, needs)
            _check_shrunk_back(alloc, oracle)
            continue
        request = op.request
        need = oracle.need(request)
        others = (n for o, n in needs.items() if o != request.owner)
        possible = isinstance(need, Need) and oracle.feasible(iter([*others, need]))
        offer: MemoryOffer | None = None
        with contextlib.suppress(MemoryAllocationError):
            offer = alloc.offer(request)
        assert snapshot(alloc) == before
        try:
            zone, moved = alloc.allocate(request)
        except MemoryAllocationError as error:
            # errors only for requests that no placement could satisfy; nothing changed
            assert not possible, f"refused a feasible request: {error}"
            assert offer is None
            assert snapshot(alloc) == before
            results.append(type(error))
            continue
        assert possible and isinstance(need, Need)
        assert offer is not None and (offer.nodes, dict(offer.widened)) == (zone, moved)
        assert offer.fits == (zone.bits == need.preferred and not moved)
        needs[request.owner] = need
        assert alloc.zone_of(request.owner) == zone
        for owner, new_zone in moved.items():
            assert alloc.zone_of(owner) == new_zone != before[3][owner].zone  # type: ignore[index]
        results.append((zone, moved))
        _check_invariants(alloc, oracle, needs)
        _check_shrunk_back(alloc, oracle)
    return results


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_random_sequences_keep_every_invariant(scenario: Scenario) -> None:
    _run(scenario)


@settings(max_examples=60, deadline=None)
@given(scenarios())
def test_invariants_hold_with_the_flow_test_instead_of_unions(scenario: Scenario) -> None:
    _run(scenario, union_limit=0)  # crossing zone families go straight to the flow test


@settings(max_examples=60, deadline=None)
@given(scenarios())
def test_the_same_calls_give_the_same_results(scenario: Scenario) -> None:
    assert _run(scenario) == _run(scenario)


@settings(max_examples=80, deadline=None)
@given(scenarios(), st.randoms(use_true_random=False))
def test_releasing_everything_returns_to_the_empty_state(scenario: Scenario, rnd: object) -> None:
    alloc = MemoryAllocator(scenario.machine, nodes=scenario.usable)
    empty = snapshot(alloc)
    for op in scenario.ops:
        if isinstance(op, Allocate):
            with contextlib.suppress(MemoryAllocationError):
                alloc.allocate(op.request)
    owners = list(alloc.owners())
    rnd.shuffle(owners)  # type: ignore[attr-defined]
    for owner in owners:
        alloc.release(owner)
    assert snapshot(alloc) == empty
    assert alloc._ledger.usage == {} and alloc._ledger.members == {}
    assert alloc._placed == {} and alloc._widened == {} and alloc._journal == []
    assert not alloc._movable


@settings(max_examples=80, deadline=None)
@given(scenarios())
def test_restoring_the_same_assignments_gives_the_same_usage(scenario: Scenario) -> None:
    alloc = MemoryAllocator(scenario.machine, nodes=scenario.usable)
    for op in scenario.ops:
        try:
            if isinstance(op, Allocate):
                alloc.allocate(op.request)
            else:
                alloc.release(op.owner)
        except MemoryAllocationError:
            pass
    restored = MemoryAllocator(scenario.machine, nodes=scenario.usable)
    for owner in alloc.owners():
        allocation = alloc.allocation(owner)
        assert allocation is not None
        restored.restore(allocation.request, allocation.zone)
    assert snapshot(restored) == snapshot(alloc)
    every = CPUSet.from_ids(scenario.machine.nodes)
    assert restored.usage(every) == alloc.usage(every)
    for node in scenario.machine.nodes:
        assert restored.usage(CPUSet.of(node)) == alloc.usage(CPUSet.of(node))
