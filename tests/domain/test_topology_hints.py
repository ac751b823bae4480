"""Topology hints: scoring against pools and selection by annotations."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import AnnotationReader
from nrirp.domain.topology import HintOrigin, TopologyHint, hint_score, select_hints
from nrirp.domain.topology.hints import (
    HintSelection,
    PathPattern,
    parse_origins,
    parse_patterns,
)
from tests.support.documents import ANNOTATIONS

KEY = "topologyhints.resource-policy.nri.io"
ALLOW = "allow.topologyhints.resource-policy.nri.io"
DENY = "deny.topologyhints.resource-policy.nri.io"
GPU = "/sys/devices/pci0000:00/0000:00:02.0"
NVME = "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0"


def cpus(text: str) -> CPUSet:
    return CPUSet.parse(text)


# ---------------------------------------------------------------------- scoring
def test_cpu_hint_scores_the_fraction_of_its_cpus_in_the_pool() -> None:
    hint = TopologyHint(GPU, cpus=cpus("0-3"), nodes=cpus("1"))
    pool = {"nodes": cpus("0"), "sockets": cpus("0")}
    assert hint_score(hint, cpus=cpus("0-7"), **pool) == 1.0
    assert hint_score(hint, cpus=cpus("2-5"), **pool) == 0.5
    assert hint_score(hint, cpus=cpus("3"), **pool) == 0.25
    # cpus decide even though the node (1) is not the pool's
    assert hint_score(hint, cpus=cpus("8-15"), nodes=cpus("1"), sockets=cpus("0")) == 0.0


def test_node_hint_is_used_when_the_hint_has_no_cpus() -> None:
    hint = TopologyHint(GPU, nodes=cpus("1"), sockets=cpus("0"))
    assert hint_score(hint, cpus=cpus("0-3"), nodes=cpus("1"), sockets=cpus("1")) == 1.0
    assert hint_score(hint, cpus=cpus("0-3"), nodes=cpus("0"), sockets=cpus("0")) == 0.0
    two = TopologyHint(GPU, nodes=cpus("0,1"))
    assert hint_score(two, cpus=cpus("0-3"), nodes=cpus("1"), sockets=cpus("0")) == 0.5


def test_socket_hint_is_the_last_resort() -> None:
    hint = TopologyHint("podresapi:gpu", sockets=cpus("1"))
    assert hint_score(hint, cpus=cpus("0-3"), nodes=cpus("0"), sockets=cpus("0,1")) == 1.0
    assert hint_score(hint, cpus=cpus("0-3"), nodes=cpus("0"), sockets=cpus("0")) == 0.0


def test_a_hint_without_locality_is_neutral() -> None:
    hint = TopologyHint(GPU)
    assert hint.is_empty()
    assert hint_score(hint, cpus=CPUSet(), nodes=CPUSet(), sockets=CPUSet()) == 1.0


@given(
    st.sets(st.integers(0, 63), min_size=1),
    st.sets(st.integers(0, 63)),
    st.sets(st.integers(0, 63)),
)
def test_score_is_a_fraction_and_monotonic_in_the_pool(
    hint_ids: set[int], pool_ids: set[int], extra: set[int]
) -> None:
    hint = TopologyHint(GPU, cpus=CPUSet.from_ids(hint_ids))
    none = CPUSet()
    small = hint_score(hint, cpus=CPUSet.from_ids(pool_ids), nodes=none, sockets=none)
    big = hint_score(hint, cpus=CPUSet.from_ids(pool_ids | extra), nodes=none, sockets=none)
    assert 0.0 <= small <= big <= 1.0
    assert (small == 1.0) == hint_ids.issubset(pool_ids)
    assert (small == 0.0) == hint_ids.isdisjoint(pool_ids)


def test_hint_text_names_provider_and_locality() -> None:
    assert str(TopologyHint(GPU, cpus=cpus("0-3"), nodes=cpus("0"))) == f"{GPU}: cpus 0-3, nodes 0"
    assert str(TopologyHint(GPU)) == f"{GPU}: no locality"


# ---------------------------------------------------------------------- selection
def hints() -> dict[str, TopologyHint]:
    return {
        GPU: TopologyHint(GPU, cpus=cpus("0-3"), origin=HintOrigin.DEVICES, path="/dev/dri/card0"),
        NVME: TopologyHint(NVME, nodes=cpus("1"), origin=HintOrigin.MOUNTS, path="/mnt/fast"),
        "podresapi:gpu.example.com": TopologyHint(
            "podresapi:gpu.example.com", nodes=cpus("0"), origin=HintOrigin.POD_RESOURCES
        ),
    }


def select(annotations: dict[str, str], name: str = "ctr") -> tuple[set[str], AnnotationReader]:
    reader = AnnotationReader(annotations, name)
    return set(select_hints(hints(), reader, ANNOTATIONS)), reader


def test_default_selects_mounts_and_devices() -> None:
    chosen, reader = select({})
    assert chosen == {GPU, NVME}
    assert reader.problems == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", {GPU, NVME}),
        ("True", {GPU, NVME}),
        ("1", {GPU, NVME}),
        ("false", set()),
        ("0", set()),
        ("none", set()),
        ("devices", {GPU}),
        ("mounts", {NVME}),
        ("pod-resources", {"podresapi:gpu.example.com"}),
        ("all", {GPU, NVME, "podresapi:gpu.example.com"}),
        ("mounts, pod-resources", {NVME, "podresapi:gpu.example.com"}),
        ("Devices,MOUNTS", {GPU, NVME}),
        ("none,devices", {GPU}),
    ],
)
def test_topologyhints_annotation_chooses_sources(value: str, expected: set[str]) -> None:
    chosen, reader = select({KEY: value})
    assert chosen == expected
    assert reader.problems == []


def test_container_annotation_wins_over_pod_and_plain() -> None:
    annotations = {KEY: "false", f"{KEY}/pod": "mounts", f"{KEY}/container.ctr": "devices"}
    assert select(annotations)[0] == {GPU}
    assert select(annotations, name="other")[0] == {NVME}
    assert select({KEY: "false", f"{KEY}/container.other": "all"})[0] == set()


def test_unknown_source_is_a_problem_and_the_default_applies() -> None:
    chosen, reader = select({f"{KEY}/pod": "devices,gpus"})
    assert chosen == {GPU, NVME}
    (problem,) = reader.problems
    assert problem.key == f"{KEY}/pod"
    assert problem.value == "devices,gpus"
    assert "unknown hint source 'gpus'" in problem.reason


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        # prefixes match the provider or the path
        ({ALLOW: "/sys/devices/pci0000:00"}, {GPU}),
        ({ALLOW: "/dev/dri"}, {GPU}),
        ({ALLOW: "/mnt/"}, {NVME}),
        ({DENY: "/sys/devices/pci0000:80"}, {GPU}),
        ({DENY: "/dev/"}, {NVME}),
        # globs: '*' does not cross '/'
        ({ALLOW: "/sys/devices/*/0000:00:02.0"}, {GPU}),
        ({ALLOW: "/sys/devices/*/0000:81:00.0"}, set()),
        ({ALLOW: "/sys/devices/*/*/0000:81:00.0"}, {NVME}),
        ({DENY: "/dev/dri/card[0-3]"}, {NVME}),
        ({DENY: "/dev/dri/card[!0]"}, {GPU, NVME}),
        ({DENY: "/dev/dri/card[^0]"}, {GPU, NVME}),
        ({DENY: "/mnt/fas?"}, {GPU}),
        # lists: comma-separated, YAML list, the reference's typed mapping
        ({ALLOW: "/dev/dri, /mnt/fast"}, {GPU, NVME}),
        ({ALLOW: "[/dev/dri/card0]"}, {GPU}),
        ({DENY: "- /mnt\n- /nothing\n"}, {GPU}),
        ({ALLOW: "type: glob\npaths:\n  - /dev/*/card0\n"}, {GPU}),
        ({ALLOW: "type: prefix\npaths: [/sys/devices/pci0000:80/]\n"}, {NVME}),
        # a typed prefix does not treat '*' specially
        ({ALLOW: "type: prefix\npaths: ['/dev/*']\n"}, set()),
        # deny wins over allow
        ({ALLOW: "/dev/dri,/mnt", DENY: "/dev/dri/card0"}, {NVME}),
        ({ALLOW: "/sys/devices", DENY: "/sys/devices/pci0000:80/*/*"}, {GPU}),
    ],
)
def test_allow_and_deny(annotations: dict[str, str], expected: set[str]) -> None:
    chosen, reader = select(annotations)
    assert chosen == expected
    assert reader.problems == []


def test_allow_and_deny_apply_after_sources() -> None:
    chosen, _ = select({KEY: "all", ALLOW: "podresapi:"})
    assert chosen == {"podresapi:gpu.example.com"}
    chosen, _ = select({KEY: "devices", ALLOW: "/mnt"})
    assert chosen == set()
    chosen, _ = select({KEY: "all", DENY: "podresapi:*"})
    assert chosen == {GPU, NVME}


def test_allow_and_deny_follow_container_precedence() -> None:
    annotations = {f"{DENY}/container.ctr": "/dev", f"{ALLOW}/pod": "/mnt"}
    assert select(annotations)[0] == {NVME}
    assert select(annotations, name="other")[0] == {NVME}
    assert select({f"{DENY}/container.ctr": "/dev"}, name="other")[0] == {GPU, NVME}


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "no paths given"),
        (" , ", "invalid path ''"),
        ("[1, 2]", "invalid path 1"),
        ("{type: regex, paths: [/dev]}", "type 'regex'"),
        ("{type: glob, path: [/dev]}", "unknown field 'path'"),
        ("{type: glob, paths: /dev}", "'paths' must be a list"),
        ("/dev/card[0", "'[' without ']'"),
        ("/dev/card[]", "empty character class"),
        ("[/dev/a", "not a path list"),
    ],
)
def test_unusable_allow_list_is_a_problem_and_filters_nothing(value: str, reason: str) -> None:
    chosen, reader = select({ALLOW: value, DENY: value})
    assert chosen == {GPU, NVME}
    assert [p.key for p in reader.problems] == [ALLOW, DENY]
    assert all(reason in p.reason for p in reader.problems), reader.problems


def test_parsers_directly() -> None:
    assert parse_origins("all") == frozenset(HintOrigin)
    assert parse_origins("none") == frozenset()
    assert parse_patterns("/a,/b*", ANNOTATIONS) == (
        PathPattern("/a", False),
        PathPattern("/b*", True),
    )
    assert not PathPattern("/a", False).matches("")
    selection = HintSelection()
    assert selection.admits(TopologyHint(GPU))
    assert not selection.admits(TopologyHint("x", origin=HintOrigin.POD_RESOURCES))
