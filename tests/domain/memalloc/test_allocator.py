"""Table tests of the memory zone allocator on catalogue machines."""

from __future__ import annotations

import re

import pytest

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.memalloc import MemoryAllocationError, MemoryAllocator, MemoryRequest
from tests.domain.memalloc.support import (
    ALL_TYPES,
    DRAM,
    DRAM_PMEM,
    HBM,
    PMEM,
    GiB,
    machine,
    request,
    snapshot,
)

S = CPUSet.parse


def pmem_server() -> MemoryAllocator:
    """server-112-pmem: DRAM nodes 0-3 (96 GiB), PMEM 4 (near 0, 1) and 5 (near 2, 3), 768 GiB."""
    return MemoryAllocator(machine("server-112-pmem"))


# ---------------------------------------------------------------- fitting and accounting
def test_a_request_that_fits_gets_its_preferred_zone_and_is_accounted() -> None:
    alloc = pmem_server()
    assert alloc.allocate(request("a", 10, "0")) == (S("0"), {})
    assert alloc.allocate(request("b", 20, "0-1")) == (S("0-1"), {})
    assert alloc.zone_of("a") == S("0")
    assert alloc.zone_of("nobody") is None
    assert alloc.usage(S("0")) == 10 * GiB
    assert alloc.usage(S("0-1")) == 30 * GiB
    assert alloc.usage(S("1-5")) == 0
    assert alloc.zones() == {S("0"): 10 * GiB, S("0-1"): 20 * GiB}
    assert alloc.owners() == ("a", "b")
    assert alloc.widened() == {}


def test_capacity_counts_usable_nodes_of_the_given_types() -> None:
    alloc = pmem_server()
    assert alloc.capacity(S("0")) == 96 * GiB
    assert alloc.capacity(S("0-5")) == (4 * 96 + 2 * 768) * GiB
    assert alloc.capacity(S("0-5"), PMEM) == 2 * 768 * GiB
    assert alloc.capacity(S("0,4"), DRAM) == 96 * GiB
    limited = MemoryAllocator(machine("server-112-pmem"), nodes=S("0-1"))
    assert limited.nodes == S("0-1")
    assert limited.capacity(S("0-5")) == 2 * 96 * GiB


def test_preferred_zone_keeps_only_nodes_of_allowed_types() -> None:
    alloc = pmem_server()
    assert alloc.allocate(request("dram", 1, "0,4", DRAM))[0] == S("0")
    assert alloc.allocate(request("both", 1, "0,4", DRAM_PMEM))[0] == S("0,4")
    assert alloc.allocate(request("pmem", 1, "0,4", PMEM))[0] == S("4")


def test_a_zone_without_an_allowed_type_uses_the_nearest_nodes_of_that_type() -> None:
    alloc = pmem_server()
    assert alloc.allocate(request("a", 1, "0", PMEM))[0] == S("4")  # 17 from node 0
    assert alloc.allocate(request("b", 1, "3", PMEM))[0] == S("5")  # 18 from node 3
    assert alloc.allocate(request("c", 1, "0,2", PMEM))[0] == S("4-5")  # both at 17
    assert alloc.allocate(request("d", 1, "4", DRAM))[0] == S("0")  # 17, node 1 is at 18
    allocation = alloc.allocation("a")
    assert allocation is not None and allocation.preferred == S("4") and not allocation.widened


def test_the_preferred_zone_is_cut_to_the_usable_nodes() -> None:
    alloc = MemoryAllocator(machine("server-112-pmem"), nodes=S("1-3,5"))
    assert alloc.allocate(request("a", 1, "0-1"))[0] == S("1")
    assert alloc.allocate(request("b", 1, "0"))[0] == S("1")  # node 0 unusable: nearest is 1
    assert alloc.allocate(request("c", 1, "0", PMEM))[0] == S("5")


# ---------------------------------------------------------------- widening
def test_overcommit_widens_to_the_nearest_nodes_step_by_step() -> None:
    alloc = pmem_server()
    assert alloc.allocate(request("a", 90, "0")) == (S("0"), {})
    assert alloc.allocate(request("b", 90, "0")) == (S("0-1"), {})  # node 1 at 11
    assert alloc.allocate(request("c", 90, "0")) == (S("0-3"), {})  # 0-1 full; 2, 3 at 21
    assert alloc.widened() == {"b": S("0-1"), "c": S("0-3")}
    assert alloc.usage(S("0-3")) == 270 * GiB


def test_widening_with_pmem_allowed_takes_the_near_pmem_node_before_the_far_dram() -> None:
    alloc = pmem_server()
    alloc.allocate(request("a", 190, "0-1", DRAM_PMEM))
    # {0} -> {0,1} (11) -> {0,1,4} (PMEM 4 at 17 from node 0, DRAM 2-3 at 21)
    assert alloc.allocate(request("b", 20, "0", DRAM_PMEM)) == (S("0-1,4"), {})


def test_pmem_only_requests_widen_over_pmem_nodes_only() -> None:
    alloc = pmem_server()
    alloc.allocate(request("a", 700, "4", PMEM))
    assert alloc.allocate(request("b", 100, "0", PMEM)) == (S("4-5"), {})
    with pytest.raises(MemoryAllocationError, match="all usable PMEM memory is on nodes 4-5"):
        alloc.allocate(request("c", 800, "0", PMEM))


def test_the_smallest_allocation_that_suffices_is_widened_even_if_it_is_not_the_newcomer() -> None:
    alloc = pmem_server()
    alloc.allocate(request("big", 60, "0"))
    alloc.allocate(request("small", 20, "0"))
    # 60 + 20 + 30 = 110 on 96 GiB: excess 14; 'small' (20) suffices and is smaller than 30
    assert alloc.allocate(request("new", 30, "0")) == (S("0"), {"small": S("0-1")})
    assert alloc.widened() == {"small": S("0-1")}


def test_among_equal_sizes_the_newest_allocation_is_widened() -> None:
    alloc = pmem_server()
    alloc.allocate(request("old", 40, "0"))
    alloc.allocate(request("mid", 40, "0"))
    assert alloc.allocate(request("new", 40, "0")) == (S("0-1"), {})
    assert alloc.zone_of("old") == alloc.zone_of("mid") == S("0")


def test_the_fewest_allocations_move_largest_first() -> None:
    alloc = pmem_server()
    for owner, gib in [("s1", 10), ("s2", 10), ("s3", 10), ("l1", 30), ("l2", 30)]:
        alloc.allocate(request(owner, gib, "0"))
    # 90 GiB in node 0; a strict 60 GiB newcomer leaves excess 54: l1 and l2 (60) move,
    # not four or five small ones
    zone, moved = alloc.allocate(request("strict", 60, "0", strict=True))
    assert zone == S("0")
    assert moved == {"l1": S("0-1"), "l2": S("0-1")}


def test_a_widened_allocation_leaves_the_overcommitted_set_in_one_move() -> None:
    alloc = pmem_server()
    alloc.allocate(request("pair", 180, "0-1"))
    # 0-1 is nearly full: a newcomer in node 0 skips the 0-1 step, which would still be inside
    assert alloc.allocate(request("n", 20, "0")) == (S("0-3"), {})


def test_widening_on_the_sparse_machine_follows_die_then_package_then_machine() -> None:
    alloc = MemoryAllocator(machine("sparse-8s-4096"))
    steps = []
    for i in range(5):
        zone, _ = alloc.allocate(request(f"c{i}", 60, "0"))
        steps.append(str(zone))
    # node 1 shares the die (11), 2-3 the package (12), the other packages are at 21
    assert steps == ["0", "0-1", "0-3", "0-3", "0-31"]


def test_hbm_is_never_used_unless_asked_for() -> None:
    alloc = MemoryAllocator(machine("hbm-cxl"))
    hbm_nodes = S("4-7")
    # DRAM 0-3 hold 64 GiB each, CXL (PMEM) 8-9 hold 256 GiB; HBM 4-7 hold 16 GiB each
    zones = [alloc.allocate(request(f"d{i}", 60, "0", DRAM_PMEM))[0] for i in range(10)]
    assert all(z.isdisjoint(hbm_nodes) for z in zones)
    assert alloc.capacity(S("0-9"), DRAM_PMEM) - alloc.usage(S("0-3,8-9")) == 168 * GiB
    with pytest.raises(MemoryAllocationError, match=re.escape("all usable DRAM|PMEM memory")):
        alloc.allocate(request("too-much", 200, "0", DRAM_PMEM))
    assert alloc.allocate(request("h", 8, "0", HBM)) == (S("4"), {})  # nearest HBM (13)


def test_widening_reaches_hbm_only_for_requests_that_allow_it() -> None:
    for types, widened in [(DRAM_PMEM, "0-1,8"), (ALL_TYPES, "0-1,4-5")]:
        alloc = MemoryAllocator(machine("hbm-cxl"))
        alloc.allocate(request("fill", 120, "0-1"))  # 0-1 hold 128 GiB
        # {0} -> {0,1} (12) is inside the full 0-1; then HBM 4-5 (13 from 0 and 1) or CXL 8 (20)
        assert alloc.allocate(request("n", 20, "0", types)) == (S(widened), {})


def test_hbm_only_requests_widen_over_hbm_nodes() -> None:
    alloc = MemoryAllocator(machine("hbm-cxl"))
    assert alloc.allocate(request("a", 12, "1", HBM)) == (S("5"), {})
    assert alloc.allocate(request("b", 12, "1", HBM)) == (S("4-5"), {})  # 4 is 14 from node 1


# ---------------------------------------------------------------- strict
def test_strict_requests_are_never_widened_and_fail_when_they_do_not_fit() -> None:
    alloc = pmem_server()
    alloc.allocate(request("s", 90, "0", strict=True))
    before = snapshot(alloc)
    with pytest.raises(MemoryAllocationError) as caught:
        alloc.allocate(request("t", 10, "0", strict=True))
    assert caught.value.nodes == S("0")
    assert caught.value.capacity == 96 * GiB
    assert caught.value.demand == 100 * GiB
    assert snapshot(alloc) == before
    # a non-strict newcomer widens itself around the strict one
    assert alloc.allocate(request("n", 10, "0")) == (S("0-1"), {})
    assert alloc.zone_of("s") == S("0")


def test_a_strict_newcomer_pushes_non_strict_owners_out() -> None:
    alloc = pmem_server()
    alloc.allocate(request("loose", 50, "0"))
    assert alloc.allocate(request("s", 90, "0", strict=True)) == (S("0"), {"loose": S("0-1")})


def test_a_strict_request_without_an_allowed_node_in_its_zone_fails() -> None:
    alloc = pmem_server()
    with pytest.raises(MemoryAllocationError, match="strict, and no usable node of the zone"):
        alloc.allocate(request("s", 1, "0", PMEM, strict=True))


# ---------------------------------------------------------------- release and shrink back
def test_release_moves_widened_owners_back_to_their_preferred_zone() -> None:
    alloc = pmem_server()
    alloc.allocate(request("a", 60, "0"))
    alloc.allocate(request("b", 50, "0"))
    assert alloc.zone_of("b") == S("0-1")
    assert alloc.release("a") == {"b": S("0")}
    assert alloc.widened() == {}
    assert alloc.zones() == {S("0"): 50 * GiB}


def test_release_moves_widened_owners_only_as_far_back_as_fits() -> None:
    alloc = pmem_server()
    alloc.allocate(request("a", 90, "0"))
    alloc.allocate(request("b", 90, "0"))
    alloc.allocate(request("c", 90, "0"))
    assert alloc.zone_of("c") == S("0-3")
    # without b, c fits in 0-1 but not in 0
    assert alloc.release("b") == {"c": S("0-1")}
    assert alloc.release("a") == {"c": S("0")}


def test_release_of_an_unknown_owner_changes_nothing() -> None:
    alloc = pmem_server()
    alloc.allocate(request("a", 10, "0"))
    before = snapshot(alloc)
    assert alloc.release("ghost") == {}
    assert snapshot(alloc) == before


def test_releasing_everything_leaves_an_empty_allocator() -> None:
    alloc = pmem_server()
    for i in range(6):
        alloc.allocate(request(f"c{i}", 50, "0", DRAM_PMEM))
    for i in range(6):
        alloc.release(f"c{i}")
    assert alloc.zones() == {} and alloc.owners() == () and alloc.widened() == {}
    assert alloc.usage(S("0-5")) == 0


# ---------------------------------------------------------------- offer
def test_offer_reports_what_allocate_would_do_and_changes_nothing() -> None:
    alloc = pmem_server()
    alloc.allocate(request("big", 60, "0"))
    alloc.allocate(request("small", 20, "0"))
    before = snapshot(alloc)
    fitting = alloc.offer(request("x", 10, "0"))
    assert (fitting.nodes, fitting.fits, dict(fitting.widened)) == (S("0"), True, {})
    assert fitting.headroom == 6 * GiB
    tight = alloc.offer(request("new", 30, "0"))
    assert (tight.nodes, tight.fits, dict(tight.widened)) == (S("0"), False, {"small": S("0-1")})
    widened_self = alloc.offer(request("huge", 50, "0"))
    assert (widened_self.nodes, widened_self.fits) == (S("0-1"), False)
    assert snapshot(alloc) == before
    assert alloc.allocate(request("new", 30, "0")) == (tight.nodes, dict(tight.widened))


def test_offer_of_an_impossible_request_raises_and_changes_nothing() -> None:
    alloc = pmem_server()
    alloc.allocate(request("a", 300, "0-3"))
    before = snapshot(alloc)
    with pytest.raises(MemoryAllocationError):
        alloc.offer(request("b", 100, "0"))
    assert snapshot(alloc) == before


# ---------------------------------------------------------------- re-allocation
def test_allocating_an_owner_again_replaces_its_allocation() -> None:
    alloc = pmem_server()
    alloc.allocate(request("a", 60, "0"))
    alloc.allocate(request("b", 50, "0"))  # widened to 0-1
    # a shrinks: b comes back in the same call
    assert alloc.allocate(request("a", 10, "0")) == (S("0"), {"b": S("0")})
    assert alloc.zones() == {S("0"): 60 * GiB}
    before = snapshot(alloc)
    with pytest.raises(MemoryAllocationError):
        alloc.allocate(request("a", 500, "0", strict=True))
    assert snapshot(alloc) == before


# ---------------------------------------------------------------- restore
def test_restore_accounts_zones_as_given_without_moving_anyone() -> None:
    alloc = pmem_server()
    alloc.restore(request("a", 60, "0"), S("0"))
    alloc.restore(request("b", 50, "0"), S("0-1"))
    alloc.restore(request("c", 90, "0"), S("0"))  # overcommitted: restore does not care
    assert alloc.zones() == {S("0"): 150 * GiB, S("0-1"): 50 * GiB}
    assert alloc.widened() == {"b": S("0-1")}
    alloc.release("c")
    assert alloc.zone_of("b") == S("0-1")  # 0 still has a 60 GiB: b (50) does not fit back
    assert alloc.release("a") == {"b": S("0")}


@pytest.mark.parametrize(
    ("zone", "types", "message"),
    [
        ("", DRAM, "the restored zone is empty;"),
        ("0,6", DRAM, "nodes 6 are not NUMA nodes"),
        ("0,4", DRAM, "holds nodes 4 of a type other than DRAM"),
    ],
)
def test_restore_rejects_zones_it_could_not_have_given(
    zone: str, types: frozenset[object], message: str
) -> None:
    alloc = pmem_server()
    nodes = "0,6" if "6" in zone else "0"
    req = MemoryRequest("a", GiB, CPUSet.parse(nodes), DRAM)
    with pytest.raises(MemoryAllocationError, match=message):
        alloc.restore(req, CPUSet.parse(zone))
    assert alloc.owners() == ()


def test_restore_rejects_unusable_nodes() -> None:
    alloc = MemoryAllocator(machine("server-112-pmem"), nodes=S("0-1"))
    with pytest.raises(MemoryAllocationError, match="holds nodes 2 that are not usable"):
        alloc.restore(request("a", 1, "0"), S("0-2"))


# ---------------------------------------------------------------- errors
def test_errors_name_the_request_and_the_capacity_found() -> None:
    alloc = pmem_server()
    alloc.allocate(request("a", 380, "0-3"))
    with pytest.raises(MemoryAllocationError) as caught:
        alloc.allocate(request("ctr-1", 8, "0"))
    text = str(caught.value)
    assert "owner 'ctr-1'" in text
    assert "8.0 GiB (8589934592 bytes)" in text
    assert "of DRAM memory in zone 0" in text
    assert "capacity found: 384.0 GiB (412316860416 bytes) on nodes 0-3" in text
    assert "demand there would be 388.0 GiB" in text
    assert caught.value.request.owner == "ctr-1"


@pytest.mark.parametrize(
    ("nodes", "types", "message"),
    [
        ("0,9", DRAM, "nodes 9 are not NUMA nodes of this machine"),
        ("", DRAM, "the preferred zone is empty"),
        ("0", HBM, "no usable node holds HBM memory"),
    ],
)
def test_bad_requests_are_rejected_with_their_reason(
    nodes: str, types: frozenset[object], message: str
) -> None:
    alloc = pmem_server()
    req = MemoryRequest("a", GiB, CPUSet.parse(nodes), types)  # type: ignore[arg-type]
    with pytest.raises(MemoryAllocationError, match=message):
        alloc.allocate(req)
    assert alloc.owners() == ()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"owner": ""}, "owner must be a non-empty string"),
        ({"size": -1}, "size must be a non-negative int"),
        ({"size": True}, "size must be a non-negative int"),
        ({"types": frozenset()}, "types must be a non-empty frozenset"),
        ({"types": frozenset({"dram"})}, "types must be MemoryType members"),
    ],
)
def test_malformed_requests_cannot_be_built(kwargs: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {"owner": "a", "size": 1, "nodes": S("0"), "types": DRAM}
    fields.update(kwargs)
    with pytest.raises(ValueError, match=message):
        MemoryRequest(**fields)  # type: ignore[arg-type]


def test_the_allocator_rejects_nodes_the_machine_does_not_have() -> None:
    with pytest.raises(ValueError, match="usable nodes 7 are not NUMA nodes"):
        MemoryAllocator(machine("server-112-pmem"), nodes=S("0,7"))
    with pytest.raises(ValueError, match="no usable NUMA node"):
        MemoryAllocator(machine("server-112-pmem"), nodes=S(""))
