"""Key resolution: container keys, pod keys, missing keys and joint keys."""

from __future__ import annotations

import pytest

from nrirp.domain.matching import (
    ContainerKeys,
    JointKey,
    MappingKeys,
    key_value,
    split_joint_key,
)
from nrirp.domain.model import QOSClass
from tests.domain.support import make_container, make_pod

POD = make_pod(
    "web",
    namespace="shop",
    labels={"app": "web", "app.kubernetes.io/name": "frontend"},
    annotations={"team": "blue", "example.com/owner": "ops"},
    cgroup_parent="/kubepods/burstable/podweb",
)
CTR = make_container(
    POD,
    "nginx",
    labels={"io.kubernetes.container.name": "nginx", "tier": "edge"},
    annotations={"io.kubernetes.container.restartCount": "2", "a/b": "c"},
    tags={"topology-aware.pool": "socket #0"},
)
KEYS = ContainerKeys(CTR, POD)

RESOLVED = [
    ("name", "nginx"),
    ("id", "id-web-nginx"),
    ("namespace", "shop"),
    ("qosclass", "Burstable"),
    ("uid", "uid-web"),
    ("labels/tier", "edge"),
    ("labels/io.kubernetes.container.name", "nginx"),
    ("tags/topology-aware.pool", "socket #0"),
    ("annotations/io.kubernetes.container.restartCount", "2"),
    ("annotations/a/b", "c"),  # keys containing '/' are looked up whole
    ("pod/name", "web"),
    ("pod/namespace", "shop"),
    ("pod/qosclass", "Burstable"),
    ("pod/id", "id-web"),
    ("pod/uid", "uid-web"),
    ("pod/labels/app", "web"),
    ("pod/labels/app.kubernetes.io/name", "frontend"),
    ("pod/annotations/team", "blue"),
    ("pod/annotations/example.com/owner", "ops"),
]


@pytest.mark.parametrize(("key", "value"), RESOLVED)
def test_container_and_pod_keys_resolve(key: str, value: str) -> None:
    assert KEYS.resolve(key) == value
    assert key_value(KEYS, key) == value


MISSING = [
    "labels/nope",
    "tags/nope",
    "annotations/nope",
    "pod/labels/nope",
    "pod/annotations/nope",
    "pod/tags/topology-aware.pool",  # pods have no tags
    "pod/pod/name",
    "labels",
    "pod",
    "bogus",
    "",
    "Name",  # keys are case sensitive
]


@pytest.mark.parametrize("key", MISSING)
def test_unknown_and_missing_keys_do_not_exist(key: str) -> None:
    assert KEYS.resolve(key) is None


def test_empty_values_exist() -> None:
    pod = make_pod("p", namespace="", labels={"empty": ""})
    keys = ContainerKeys(make_container(pod, ""), pod)
    assert keys.resolve("name") == ""
    assert keys.resolve("namespace") == ""
    assert keys.resolve("pod/labels/empty") == ""


def test_without_a_pod_only_the_containers_own_keys_exist() -> None:
    keys = ContainerKeys(CTR, None)
    assert keys.resolve("name") == "nginx"
    assert keys.resolve("tags/topology-aware.pool") == "socket #0"
    for key in ("namespace", "qosclass", "uid", "pod/name", "pod/id", "pod/labels/app"):
        assert keys.resolve(key) is None


def test_qosclass_of_a_pod_whose_class_is_not_known_does_not_exist() -> None:
    pod = make_pod("q", cgroup_parent="")
    assert pod.qos_class is None
    keys = ContainerKeys(make_container(pod), pod)
    assert keys.resolve("qosclass") is None
    guaranteed = make_pod("g", qos_class=QOSClass.GUARANTEED)
    assert ContainerKeys(make_container(guaranteed), guaranteed).resolve("qosclass") == (
        "Guaranteed"
    )


# ------------------------------------------------------------------ joint keys
JOINT = [
    (":,/pod/namespace,name", "shop/nginx"),
    (":pod/namespace:name", "shop:nginx"),
    (":::pod/namespace:name", "shop:nginx"),
    (":pod/qosclass:pod/name:name", "Burstable:web:nginx"),
    (":;-namespace;pod/labels/app;labels/tier", "shop-web-edge"),
    (":, pod/name,name", "web nginx"),
    (":,/pod/labels/app.kubernetes.io/name,name", "frontend/nginx"),
    (":,/labels/nope,name", "/nginx"),  # a missing sub-key is empty
    (":,/name,labels/nope", "nginx/"),
    (":,/name", "nginx"),  # one sub-key
]


@pytest.mark.parametrize(("key", "value"), JOINT)
def test_joint_keys_join_their_sub_values(key: str, value: str) -> None:
    assert key_value(KEYS, key) == value
    assert KEYS.resolve(key) == value


def test_a_joint_key_exists_when_any_sub_key_does() -> None:
    assert key_value(KEYS, ":,/labels/nope,tags/nope") is None
    assert key_value(KEYS, ":,/labels/nope,tags/nope,name") == "//nginx"


def test_splitting_joint_keys() -> None:
    assert split_joint_key(":,/pod/namespace,name") == JointKey(("pod/namespace", "name"), "/")
    assert split_joint_key(":a:b") == JointKey(("a", "b"), ":")
    # '/' and '.' cannot separate keys (they occur inside them): the short form applies
    assert split_joint_key(":/,a/b") == JointKey(("/,a/b",), ":")
    assert split_joint_key(":.,a.b") == JointKey((".,a.b",), ":")
    # a letter or digit is no separator: the short form applies
    assert split_joint_key(":a,b:c") == JointKey(("a,b", "c"), ":")
    assert split_joint_key(":,1a,b") == JointKey((",1a,b",), ":")
    # shorter than four characters or no leading ':' -> a simple key
    for simple in ("name", ":ab", ":a", "", "pod/name", "a:b:c"):
        assert split_joint_key(simple) is None


def test_mapping_keys() -> None:
    keys = MappingKeys({"a": "1", "b": "2"})
    assert keys.resolve("a") == "1"
    assert keys.resolve("c") is None
    assert keys.resolve(":,+a,b,c") is None  # a plain mapping has no such key...
    assert key_value(keys, ":,+a,b,c") == "1+2+"  # ...but joint keys work on any resolver
    assert key_value(MappingKeys({":,+a,b": "literal"}), ":,+a,b") is None
