"""Spreading by QoS class (issue 13 item 14): a storm of mixed-QoS pods on server-112-pmem.

The reference spreads each QoS class evenly over the four NUMA nodes (52/52/53/53 containers
for 210 pods cycling Guaranteed, Burstable, BestEffort, as ``nrimockrt -qos mix`` creates
them). Two scoring rules make it so: every pool's memory offer covers each type a container
may use (NUMA nodes #1 and #3 have no PMEM of their own and offer the nearest PMEM node, so
their offers are no tighter than #0's and #2's), and a shared request's colocation count takes
every grant of a normal CPU kind in the pool, so the classes take turns.
"""

from __future__ import annotations

from collections import Counter

import pytest

from .support import config, make_rig

MiB = 1 << 20
QOS = ("Guaranteed", "Burstable", "BestEffort")


def storm(pods: int, request: int, limit: int) -> dict[str, Counter[str]]:
    """``pods`` one-container pods cycling G/B/BE (Guaranteed ``limit`` mCPU and 128 MiB;
    Burstable ``request``..``limit`` mCPU, 64..128 MiB; BestEffort nothing), as nrimockrt
    makes them; the NUMA node pool of each container, by QoS class."""
    rig = make_rig("server-112-pmem", config())
    out: dict[str, Counter[str]] = {q: Counter() for q in QOS}
    for i in range(pods):
        qos = QOS[i % 3]
        if qos == "Guaranteed":
            _, ctr, _ = rig.run(f"p{i}", qos, cpu=limit, limit=limit, memory=128 * MiB)
        elif qos == "Burstable":
            # kubelet's OOM score adjustment for 64 MiB requested on an 8 GiB node
            oom = 1000 - (1000 * 64) // (8 * 1024)
            _, ctr, _ = rig.run(
                f"p{i}", qos, cpu=request, limit=limit, memory=128 * MiB, oom_score_adj=oom
            )
        else:
            _, ctr, _ = rig.run(f"p{i}", qos)
        out[qos][rig.pool(ctr)] += 1
    return out


NODES = [f"NUMA node #{n}" for n in range(4)]


@pytest.mark.parametrize(
    ("request_m", "limit_m"),
    [
        pytest.param(100, 500, id="fractional"),  # nrimockrt's defaults: every grant shared
        pytest.param(250, 1000, id="integer"),  # Guaranteed 1 CPU: exclusive grants
    ],
)
def test_a_mixed_qos_storm_spreads_each_class_evenly_over_the_numa_nodes(
    request_m: int, limit_m: int
) -> None:
    by_class = storm(210, request_m, limit_m)
    total: Counter[str] = Counter()
    for qos, pools in by_class.items():
        assert set(pools) == set(NODES), f"{qos}: {dict(pools)}"  # every container in a node
        counts = [pools[n] for n in NODES]
        assert max(counts) - min(counts) <= 1, f"{qos}: {dict(pools)}"
        total.update(pools)
    assert sorted(total[n] for n in NODES) == [52, 52, 53, 53]
