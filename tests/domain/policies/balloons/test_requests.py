"""What a container asks for: groupBy expansion, requests from the resources annotation,
memory types (reference-balloons.md §3.3, §4, §7)."""

from __future__ import annotations

import pytest

from nrirp.domain.model import Container, Pod
from nrirp.domain.policies.balloons.groups import expand_group
from nrirp.domain.policies.balloons.requests import parse_memory_types
from nrirp.domain.topology import MemoryType
from tests.domain.policies.balloons.support import config, make_rig

POD = Pod(id="p", name="web", namespace="shop", labels={"app": "cart", "tier": "front"})
CTR = Container(id="c", pod_id="p", name="nginx", labels={"x": "1"})


@pytest.mark.parametrize(
    ("template", "expanded"),
    [
        ("${pod/labels/app}", "cart"),
        ("$pod/labels/app", "cart"),
        ("${namespace}-${pod/labels/tier}", "shop-front"),
        ("$namespace$pod/name", "shopweb"),  # a bare key runs to the next $
        ("cost$$-${name}", "cost$-nginx"),
        ("plain", "plain"),
        ("${pod/labels/none}", None),  # does not resolve: no group
        ("x-$labels/missing", None),
    ],
)
def test_group_by_expansion(template: str, expanded: str | None) -> None:
    assert expand_group(template, CTR, POD) == expanded


def test_memory_type_annotation_values() -> None:
    assert parse_memory_types("HBM,dram") == frozenset({MemoryType.HBM, MemoryType.DRAM})
    assert parse_memory_types(" pmem ,") == frozenset({MemoryType.PMEM})
    with pytest.raises(ValueError, match="unknown memory type 'nvram'"):
        parse_memory_types("nvram")


def test_requests_come_from_the_resources_annotation_first() -> None:
    rig = make_rig()
    resources = '{"containers": {"c": {"requests": {"cpu": "2500m"}}}}'
    rig.run("a", 500, annotations={"noderesource.dev/resources": resources})
    assert rig.balloon("default[0]").requested == 2500
    assert rig.balloon("default[0]").cpus.bit_count() == 3
    # another container of a pod that does not list it: from its shares
    rig.run("b", 500, annotations={"noderesource.dev/resources": "containers: {}"})
    assert rig.balloon("default[0]").requested == 3000


def test_an_unusable_resources_annotation_is_reported() -> None:
    rig = make_rig(cfg=config())
    rig.run("a", 500, annotations={"noderesource.dev/resources": "[1, 2"})
    assert rig.balloon("default[0]").requested == 500
    assert any("noderesource.dev/resources" in n for n in rig.notices())
