"""docs/affinity.md: its annotation examples parse and do what the text says; its error
messages are the ones the code gives."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from nrirp.domain.affinity import (
    AFFINITY_ANNOTATION,
    ANTI_AFFINITY_ANNOTATION,
    AffinityError,
    affinity_weights,
    container_affinities,
    implicit_affinities,
)
from nrirp.domain.cache.store import Cache
from nrirp.domain.model import ContainerState, QOSClass
from tests.domain.support import make_container, make_pod
from tests.support.documents import ANNOTATIONS

DOC = Path(__file__).resolve().parents[3] / "docs" / "affinity.md"
TEXT = DOC.read_text()


def _annotated_examples() -> list[dict[str, str]]:
    found = []
    for block in re.findall(r"```yaml\n(.*?)```", TEXT, flags=re.DOTALL):
        data: Any = yaml.safe_load(block)
        annotations = (data.get("metadata") or {}).get("annotations") if data else None
        if annotations:
            found.append(annotations)
    return found


EXAMPLES = _annotated_examples()


def test_the_doc_has_its_examples() -> None:
    assert len(EXAMPLES) == 4


@pytest.mark.parametrize(
    "annotations", EXAMPLES, ids=lambda a: next(iter(yaml.safe_load(next(iter(a.values())))))
)
def test_every_example_entry_parses(annotations: dict[str, str]) -> None:
    pod = make_pod("doc", annotations=annotations)
    names = {name for value in annotations.values() for name in yaml.safe_load(value)}
    for name in names:
        assert container_affinities(pod, make_container(pod, name), ANNOTATIONS)


def _world(
    annotations: dict[str, str],
    pods: dict[tuple[str, str], list[str]],
    **pod_settings: dict[str, Any],
) -> Cache:
    """Pods by (namespace, name) with running containers; the pod named 'me' is annotated."""
    cache = Cache()
    for (namespace, name), containers in pods.items():
        settings = dict(pod_settings.get(name, {}))
        if name == "me":
            settings["annotations"] = annotations
        cache.put_pod(make_pod(name, namespace=namespace, **settings))
        for ctr in containers:
            pod = cache.require_pod(f"id-{name}")
            cache.put_container(make_container(pod, ctr, state=ContainerState.RUNNING))
    return cache


def _weights(cache: Cache, name: str) -> dict[str, int]:
    pod = cache.require_pod("id-me")
    ctr = cache.require_container(f"id-me-{name}")
    weights = affinity_weights(cache, ctr, container_affinities(pod, ctr, ANNOTATIONS))
    return {cid.removeprefix("id-"): w for cid, w in weights.items()}


def test_peter_sheep_and_wolf() -> None:
    cache = _world(EXAMPLES[0], {("zoo", "me"): ["peter", "sheep", "wolf"]})
    assert _weights(cache, "peter") == {"me-sheep": 5, "me-wolf": -5}
    assert _weights(cache, "sheep") == {}


def test_trainers_push_each_other_node_wide() -> None:
    trainer = {"labels": {"app": "trainer"}}
    cache = _world(
        EXAMPLES[1],
        {("ml", "me"): ["trainer"], ("ml", "other"): ["trainer"], ("ml", "x"): ["trainer"]},
        me=trainer,
        other=trainer,
    )
    assert _weights(cache, "trainer") == {"other-trainer": -100}


def test_shorthand_example() -> None:
    cache = _world(EXAMPLES[2], {("ns", "me"): [f"container{i}" for i in range(1, 5)]})
    assert _weights(cache, "container3") == {
        "me-container1": 1,
        "me-container2": -1,
        "me-container4": -1,
    }
    assert _weights(cache, "container4") == {"me-container2": -1, "me-container3": -1}
    assert _weights(cache, "container1") == {"me-container3": 1}
    assert _weights(cache, "container2") == {"me-container3": -1, "me-container4": -1}


def test_joint_key_example() -> None:
    cache = _world(
        EXAMPLES[3],
        {
            ("shop", "me"): ["cache", "web"],
            ("shop", "front"): ["nginx"],
            ("bank", "vault"): ["db", "api"],
            ("bank", "other"): ["web"],
        },
        front={"qos_class": QOSClass.BESTEFFORT},
    )
    assert _weights(cache, "cache") == {"me-web": 20, "vault-db": 20}


def test_implicit_affinities_table() -> None:
    assert "`colocatePods: true` | weight 10" in TEXT
    assert "`colocateNamespaces: true` | weight 10" in TEXT
    both = implicit_affinities(colocate_pods=True, colocate_namespaces=True)
    assert [a.weight for a in both] == [10, 10]


ERROR_INPUTS = [
    "web:\n- match:\n    key: name\n    operator: Equal\n    values: [db]\n",
    "web:\n- match:\n    key: name\n    operator: Equals\n    values: [db]\n  weight: 2000\n",
    "web:\n- match: {key: name, operator: In, values: [db]}\n  wieght: 2\n",
    "web:\n- match:\n    key: name\n    operator: Matches\n    values: ['db-[0-9']\n",
    "web: [db\n",
]


@pytest.mark.parametrize("text", ERROR_INPUTS)
def test_documented_error_messages_are_the_real_ones(text: str) -> None:
    pod = make_pod("shop", namespace="prod", annotations={AFFINITY_ANNOTATION: text})
    with pytest.raises(AffinityError) as caught:
        container_affinities(pod, make_container(pod, "web"), ANNOTATIONS)
    assert f"\n{caught.value}\n" in TEXT


def test_every_annotation_key_is_documented() -> None:
    for key in (AFFINITY_ANNOTATION, ANTI_AFFINITY_ANNOTATION):
        assert f"| `{key}` |" in TEXT
    assert "| `cri-resource-manager.intel.com/affinity` |" in TEXT
    assert "| `cri-resource-manager.intel.com/anti-affinity` |" in TEXT
