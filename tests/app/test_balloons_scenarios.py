"""Simulator scenarios of the ``balloons`` policy: every field, annotation and behaviour.

Each test replays a workload of ``examples/workloads/balloons/`` through
``nrirp simulate --json`` (our NRI plugin on the simulated runtime) and checks the cpus and
mems the runtime holds and the balloons the policy reports after every step. The
expectations come from the reference's behaviour (``reference-balloons.md``), worked out by
hand in the workloads' notes, not from the policy's code.

Coverage (``BalloonsPolicy`` fields, reference-balloons.md §1.1 and §1.2, and annotations):

| field / annotation / behaviour | test |
|---|---|
| built-in `reserved` (cpuset: empty at first, grows on demand) and `default` types | test_basics |
| `namespaces`; kube-system to reserved | test_basics, test_choice |
| `minCPUs`, `maxCPUs`, `minBalloons`, `maxBalloons`; refusal at the limits | test_basics |
| inflating (balanced-inflate), deflating, deleting an empty balloon | test_basics |
| `allocatorPriority` high (default) before the built-ins; names `<type>[<index>]` | test_basics |
| `matchExpressions` before `namespaces`, list order, `default` | test_choice |
| annotation `balloon.balloons.resource-policy.nri.io` (known and unknown) | test_choice |
| `groupBy` (expanded and not expandable) | test_choice |
| `preferSpreadingPods`, `preferPerNamespaceBalloon`, `preferNewBalloons` | test_choice |
| balanced: most free, fewest containers, list order | test_choice |
| `shareIdleCPUsInSame` (numa, package); shared sets shrink and grow | test_sharing |
| `hideHyperthreads`; annotation `hide-hyperthreads` | test_sharing |
| `memoryTypes`, type `pinMemory`, annotation `memory-type` | test_memory |
| annotations `cpu.preserve`, `memory.preserve`; `preserve.matchExpressions` | test_memory |
| `preferCloseToDevices` (sysfs directory, device node) and far devices | test_topology |
| `preferSpreadOnPhysicalCores` | test_topology |
| `allocatorTopologyBalancing` against packing | test_topology |
| `loadClasses` (`overloadsLevelInBalloon`), `loads` | test_topology |
| `components` (composite balloons) | test_topology |
| `componentCreation: balance-balloons` | unit test (test_features.py) |
| `preferIsolCpus`; isolated CPUs avoided and never shared | test_isolated |
| `preferCoreType`, `allocatorPriority` low and none | test_hybrid |
| `schedulingClasses`, `schedulingClass`, annotation `scheduling-class` | test_hybrid, unit tests |
| `cpuClasses`, `cpuClass`, `idleCPUClass` (decided, reported) | test_hybrid |
| reconfiguration: moved, kept, refused, invalid, from a custom resource file | test_reconfigure |
| `availableResources.cpu` (exclude-cpuset) | test_reconfigure |
| `reservedResources.cpu` cpuset / amount | test_basics / other scenarios |
| `pinCPU`, `pinMemory` (policy) | test_memory (no pinMemory), unit test (pinCPU) |
| `reservedPoolNamespaces`, `showContainersInNrt` | unit tests (test_lifecycle.py, test_export.py) |
| `turboDomain`, `controllableInterrupts`, `irqClaim`, `irqMode` | not here: nothing to place |
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from nrirp.app.cli import main
from nrirp.app.commands.simulate import EXIT_OK, EXIT_STEPS

HERE = Path(__file__).parents[2] / "examples" / "workloads" / "balloons"
CONFIGS = HERE / "configs"
MACHINES = HERE / "machines"

Placement = tuple[str | None, str | None]
GONE: Placement = ("gone", "gone")


def simulate(
    capsys: pytest.CaptureFixture[str], workload: str, config: str, machine: str = "box-16"
) -> dict[str, Any]:
    code = main(
        [
            "simulate",
            "--machine",
            machine,
            "--policy",
            "balloons",
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
    unexpected = [
        f"step {s['number']}: {s['unmet_expectation']} {s['errors']}"
        for s in doc["steps"]
        if not s["as_expected"]
    ]
    assert unexpected == [], unexpected
    for step in doc["steps"]:
        for ctr in step["containers"]:
            assert ctr["matches_decision"], f"step {step['number']}: runtime differs: {ctr}"
        check_balloons(step)
    return doc


def check_balloons(step: Mapping[str, Any]) -> None:
    """In every step: no CPU in two balloons, and each container runs on its balloon's CPUs
    and shared idle CPUs (unless hyperthreads are hidden: then on a subset of them)."""
    seen: set[int] = set()
    where: dict[str, Mapping[str, Any]] = {}

    def leaves(balloon: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        if "components" in balloon:
            return [leaf for c in balloon["components"] for leaf in leaves(c)]
        return [balloon]

    for balloon in step["balloons"]:
        for leaf in leaves(balloon):
            cpus = ids(leaf["cpus"])
            assert not seen & cpus, f"step {step['number']}: CPUs in two balloons"
            seen |= cpus
        for label in balloon["containers"]:
            where[label] = balloon
    for ctr in step["containers"]:
        label = f"{ctr['namespace']}/{ctr['pod']}/{ctr['name']}"
        if label in where and ctr["cpus"] is not None:
            balloon = where[label]
            allowed = ids(balloon["cpus"]) | ids(balloon["shared_idle_cpus"])
            assert ids(ctr["cpus"]) <= allowed, f"step {step['number']}: {label}"


def ids(text: str | None) -> set[int]:
    out: set[int] = set()
    for part in (text or "").split(","):
        if part:
            lo, _, hi = part.partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def placements(doc: Mapping[str, Any], number: int) -> dict[str, Placement]:
    step = doc["steps"][number - 1]
    return {
        f"{c['namespace']}/{c['pod']}/{c['name']}": (c["cpus"], c["mems"])
        for c in step["containers"]
        if c["state"] in ("created", "running")
    }


def balloons(doc: Mapping[str, Any], number: int) -> dict[str, tuple[str, str, list[str]]]:
    """name -> (cpus, shared idle cpus, containers) after step ``number``."""
    return {
        b["name"]: (b["cpus"], b["shared_idle_cpus"], b["containers"])
        for b in doc["steps"][number - 1]["balloons"]
    }


def expect_steps(doc: Mapping[str, Any], table: Mapping[int, Mapping[str, Placement]]) -> None:
    """``table[n]`` lists what changes at step ``n``; every other container keeps what it had."""
    expected: dict[str, Placement] = {}
    for number in range(1, len(doc["steps"]) + 1):
        for name, placement in table.get(number, {}).items():
            if placement == GONE:
                expected.pop(name, None)
            else:
                expected[name] = placement
        got = placements(doc, number)
        assert got == expected, f"step {number}: " + ", ".join(
            f"{k}: expected {expected.get(k)}, got {got.get(k)}"
            for k in sorted(set(got) | set(expected))
            if got.get(k) != expected.get(k)
        )


def errors(doc: Mapping[str, Any], number: int) -> str:
    return "\n".join(doc["steps"][number - 1]["errors"])


# ====================================================================== basics
BASICS: dict[int, dict[str, Placement]] = {
    1: {"kube-system/coredns/coredns": ("0", "0")},
    2: {"web/frontend/nginx": ("4-5", "1")},
    3: {"web/frontend/nginx": ("4-7", "1"), "web/api/api": ("4-7", "1")},
    4: {"web/big/app": ("8-9", "2")},
    5: {"web/big/app": ("8-10", "2"), "web/extra/app": ("8-10", "2")},
    6: {
        "web/big/app": ("8-11", "2"),
        "web/extra/app": ("8-11", "2"),
        "web/more/app": ("8-11", "2"),
    },
    8: {"batch/job1/job": ("2", "0")},
    9: {"batch/job1/job": ("2,12-13", "0,3"), "batch/job2/job": ("2,12-13", "0,3")},
    10: {"web/api/api": GONE, "web/frontend/nginx": ("4-5", "1")},
    # memory is only ever widened for a container already running (it keeps node 0)
    11: {"batch/job2/job": GONE, "batch/job1/job": ("12", "0,3")},
    12: {"kube-system/coredns/coredns": GONE},
    13: {"web/big/app": GONE, "web/extra/app": ("8-9", "2"), "web/more/app": ("8-9", "2")},
    14: {"web/extra/app": GONE},
    15: {"web/more/app": GONE},
}


def test_basics(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "basics.yaml", "basics.yaml")
    expect_steps(doc, BASICS)
    assert list(balloons(doc, 1)) == ["batch[0]", "reserved[0]", "default[0]"]
    assert balloons(doc, 1)["batch[0]"][0] == "2"
    assert "maxBalloons (2)" in errors(doc, 7)
    assert balloons(doc, 12)["reserved[0]"] == ("", "", [])  # kept empty
    after = balloons(doc, 15)
    assert "web[1]" not in after and after["web[0]"][0] == "4-5"
    assert after["default[0]"] == ("", "", [])


# ====================================================================== choice
def test_choice(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "choice.yaml", "choice.yaml")
    last = balloons(doc, len(doc["steps"]))
    members = {label: name for name, (_, _, labels) in last.items() for label in labels}
    assert members == {
        "shop/web/web": "shop[0]",
        "shop/pg/db": "db[0]",
        "shop-eu/web/web": "shop[1]",
        "shop/cart/cart": "shop[0]",
        "default/x/c": "teams[0]",
        "teams/a/c": "teams[1]",
        "teams/b/c": "teams[1]",
        "teams/c/c": "teams[2]",
        "spread/p/one": "spread[0]",
        "spread/p/two": "spread[1]",
        "spread/q/c": "spread[0]",
        "kube-system/pg/db": "reserved[0]",
        "default/misc/c": "default[0]",
    }
    assert len(ids(last["shop[0]"][0])) == 2  # 1300m
    assert "no balloon for annotation" in errors(doc, 13)


# ====================================================================== sharing
def test_sharing(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "sharing.yaml", "sharing.yaml")
    expect_steps(
        doc,
        {
            1: {"numa/a/c": ("0-3", "0")},
            2: {"numa/a/c": ("0-1", "0"), "pkg/b/c": ("0,2,4,6", "0-1")},
            3: {"pkg/c/c": ("0,2-7", "0-1")},
            4: {
                "pkg/b/c": ("0,2,5-6", "0-1"),
                "pkg/c/c": ("0,2-3,5-7", "0-1"),
                "default/d/c": ("4", "1"),
            },
            5: {"default/d/c": GONE, "pkg/b/c": ("0,2,4,6", "0-1"), "pkg/c/c": ("0,2-7", "0-1")},
        },
    )
    assert balloons(doc, 1)["numa[0]"][:2] == ("1", "0,2-3")
    assert balloons(doc, 2)["pkg[0]"][:2] == ("2-3", "0,4-7")


# ====================================================================== memory
def test_memory(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "memory.yaml", "memory.yaml", "server-112-pmem")
    expect_steps(
        doc,
        {
            1: {"default/a/c": ("56", "0,4")},
            2: {"dram/a/c": ("1", "0")},
            3: {"pmem/a/c": ("57", "4")},
            4: {"dram/b/c": ("1", "0,4")},
            5: {"loose/a/c": ("2", None)},
            6: {"default/m/c": ("56", None)},
            7: {"default/p/c": (None, None)},
            8: {"default/q/c": (None, None)},
        },
    )
    last = balloons(doc, 8)
    labels = {label for _, _, members in last.values() for label in members}
    assert "default/p/c" not in labels and "default/q/c" not in labels


# ====================================================================== topology
def test_topology(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "topology.yaml", "topology.yaml", "server-4s-144")
    expect_steps(
        doc,
        {
            1: {"ml/train/c": ("36,108", "2")},
            2: {"spread/s/c": ("1-3", "0")},
            3: {"pack/p/one": ("4,76", "0")},
            4: {"pack/q/one": ("5,77", "0")},
            5: {"bal/b1/c": ("54,126", "3")},
            6: {"bal/b2/c": ("55,127", "3")},
            7: {"avx/v/c": ("6,72-73", "0")},
            8: {"both/c/c": ("18,37,90,109", "1-2")},
        },
    )
    last = doc["steps"][7]["balloons"]
    both = next(b for b in last if b["name"] == "both[0]")
    assert [(c["name"], c["cpus"]) for c in both["components"]] == [
        ("near-nvme[0]", "18,90"),
        ("near-gpu[0]", "37,109"),
    ]


# ====================================================================== isolated CPUs
def test_isolated(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "isolated.yaml", "isolated.yaml", str(MACHINES / "box-16-isolated.yaml"))
    expect_steps(
        doc,
        {
            1: {"rt/a/c": ("6-7", "1")},
            2: {"apps/b/c": ("0-3,5", "0-1")},
            3: {"apps/b/c": ("3,5", "0-1"), "default/c/c": ("0-2,8-15", "0,2-3")},
        },
    )
    assert balloons(doc, 2)["apps[0]"][1] == "0-3"  # never the isolated 6-7


# ====================================================================== hybrid
def test_hybrid(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "hybrid.yaml", "hybrid.yaml", "hybrid-desktop")
    expect_steps(
        doc,
        {
            1: {"fast/a/c": ("0-1", "0")},
            2: {"eco/b/c": ("17-18", "0")},
            3: {"any/c/c": ("19", "0")},
            4: {"fast/a/c": ("0-2", "0"), "fast/d/c": ("0-2", "0")},
        },
    )
    assert balloons(doc, 1)["reserved[0]"][0] == "16"  # the built-in reserved type is low
    fast = next(b for b in doc["steps"][0]["balloons"] if b["name"] == "fast[0]")
    assert fast["cpu_class"] == "turbo"
    notices = [n["message"] for n in doc["steps"][3]["notices"]]
    assert any("scheduling class 'nope'" in n for n in notices)


# ====================================================================== reconfiguration
def test_reconfigure(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "reconfigure.yaml", "reconfigure-before.yaml")
    expect_steps(
        doc,
        {
            1: {"web/a/c": ("2-3", "0")},
            2: {"db/x/c": ("1", "0")},
            3: {"db/x/c": ("4-5", "1")},
            6: {"web/a/c": ("9-11", "2"), "db/x/c": ("0", "0")},
            7: {"db/x/c": ("0,2-7", "0-1"), "default/y/c": ("0,2-7", "0-1")},
        },
    )
    assert "cannot keep web/a/c" in errors(doc, 4)
    assert "balloonTypes[0].minCPUs" in errors(doc, 5)
    assert balloons(doc, 5) == balloons(doc, 3)  # the refused ones changed nothing
    assert balloons(doc, 6)["reserved[0]"][0] == "8"
    for number in (6, 7):
        for cpus, _ in placements(doc, number).values():
            assert cpus is None or not ids(cpus) & {12, 13, 14, 15}
