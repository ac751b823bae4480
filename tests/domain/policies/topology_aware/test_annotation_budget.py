"""Annotation values over the input budget are reported and ignored like any broken
annotation; the container is placed all the same (issue 9 item 1)."""

from __future__ import annotations

import itertools

from nrirp.adapters.documents import ANNOTATION

from .support import Rig, make_rig

AFFINITY = "resource-policy.nri.io/affinity"


def billion_laughs(container: str) -> str:
    """About 350 bytes that expand to 9**10 (3.4 billion) strings, keyed by ``container``."""
    names = [*"abcdefghi", container]
    lines = [f"a: &a [{','.join(['lol'] * 9)}]"]
    for before, name in itertools.pairwise(names):
        lines.append(f"{name}: &{name} [{','.join([f'*{before}'] * 9)}]")
    return "\n".join(lines) + "\n"


def affinity_notices(rig: Rig) -> list[str]:
    return [n.message for n in rig.log.notices if "affinity ignored" in n.message]


def test_a_billion_laughs_affinity_is_refused_and_the_container_placed() -> None:
    rig = make_rig("box-16")
    text = billion_laughs("c")
    assert len(text) < 400
    _, ctr, result = rig.run("p", cpu=100, annotations={AFFINITY: text})
    assert rig.kind(ctr) == "shared" and result.adjustment.resources.cpus
    (notice,) = affinity_notices(rig)
    assert "\n" not in notice and len(notice) < 400
    assert "YAML anchors, aliases and tags are not allowed (found an anchor) at line 1" in notice


def test_an_oversized_affinity_is_refused_by_size() -> None:
    rig = make_rig("box-16")
    text = "c: [" + ",".join(["web"] * ANNOTATION.max_bytes) + "]"
    _, ctr, _ = rig.run("p", cpu=100, annotations={AFFINITY: text})
    assert rig.kind(ctr) == "shared"
    (notice,) = affinity_notices(rig)
    assert f"annotation value too large: {len(text)} bytes (at most 8192)" in notice
    assert len(notice) < 400
