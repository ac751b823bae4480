"""Balloons: a type is chosen at a cost independent of the length of its namespace and value
lists (issue 9 item 3), and the privileged annotations can be restricted to some namespaces."""

from __future__ import annotations

from nrirp.domain.matching import GlobSet
from nrirp.domain.model.annotations import RESOURCE_POLICY_DOMAIN
from tests.domain.policies.balloons.support import BALLOON_KEY, anno, config, make_rig

NAMESPACES = [f"team-{n:05d}" for n in range(50_000)]


def test_namespaces_and_expressions_are_compiled_once_per_config() -> None:
    types = [
        {
            "name": "labelled",
            "matchExpressions": [
                {"key": "pod/labels/app", "operator": "In", "values": NAMESPACES},
                {"key": "name", "operator": "MatchesAny", "values": [*NAMESPACES, "side-*"]},
            ],
        },
        {"name": "teams", "namespaces": [*NAMESPACES, "infra-*"]},
    ]
    cfg = config(
        balloonTypes=types,
        reservedPoolNamespaces=NAMESPACES[:1000],
        preserve={"matchExpressions": [{"key": "name", "operator": "In", "values": NAMESPACES}]},
    )
    rig = make_rig(cfg=cfg)
    built = GlobSet.builds
    where = []
    for n, (namespace, labels) in enumerate(
        [("team-00999", {}), ("team-49999", {}), ("infra-a", {}), ("x", {"app": "team-00007"}),
         ("y", {})]
    ):  # fmt: skip
        _, ctr = rig.run(f"p{n}", 100, namespace=namespace, labels=labels)
        where.append(rig.where(ctr))
    assert GlobSet.builds == built  # decisions compile nothing
    assert where == ["reserved[0]", "teams[0]", "teams[0]", "labelled[0]", "default[0]"]
    rig.manager.reconfigure(config(balloonTypes=[{"name": "teams", "namespaces": ["y*"]}]))
    assert GlobSet.builds > built  # a new configuration compiles its own


PRIVILEGED = {"privilegedAnnotations": {"allowedNamespaces": ["kube-system", "infra-*"]}}


def test_privileged_annotations_only_in_allowed_namespaces() -> None:
    rig = make_rig(cfg=config(**PRIVILEGED))
    preserve = anno("cpu.preserve", "true")
    _, kept = rig.run("a", 100, namespace="infra-db", annotations=preserve)
    _, placed = rig.run("b", 100, namespace="prod", annotations=preserve)
    assert rig.where(kept) == "(preserved)" and rig.where(placed) == "default[0]"
    _, reserved = rig.run("c", 100, namespace="infra-db", annotations={BALLOON_KEY: "reserved"})
    _, other = rig.run("d", 100, namespace="prod", annotations={BALLOON_KEY: "reserved"})
    assert rig.where(reserved) == "reserved[0]" and rig.where(other) == "default[0]"
    reason = "not allowed in namespace 'prod' (privilegedAnnotations.allowedNamespaces:"
    assert [n for n in rig.notices() if reason in n] == [
        f"container c: annotation cpu.preserve.{RESOURCE_POLICY_DOMAIN}='true' ignored: "
        f"{reason} kube-system, infra-*)",
        f"container c: annotation {BALLOON_KEY}='reserved' ignored: {reason} kube-system, infra-*)",
    ]
    # another type by annotation is no privilege
    typed = config(balloonTypes=[{"name": "fast"}], **PRIVILEGED)
    rig = make_rig(cfg=typed)
    _, fast = rig.run("e", 100, namespace="prod", annotations={BALLOON_KEY: "fast"})
    assert rig.where(fast) == "fast[0]"


def test_memory_preserve_only_in_allowed_namespaces() -> None:
    rig = make_rig(cfg=config(**PRIVILEGED))
    keep = anno("memory.preserve", "true")
    _, allowed = rig.run("a", 1000, qos="Guaranteed", namespace="kube-system", annotations=keep)
    _, refused = rig.run("b", 1000, qos="Guaranteed", namespace="prod", annotations=keep)
    assert rig.mems(allowed) is None and rig.mems(refused) is not None


def test_restricting_them_later_decides_the_containers_again() -> None:
    rig = make_rig(cfg=config())
    _, kept = rig.run("a", 100, namespace="prod", annotations=anno("cpu.preserve", "true"))
    assert rig.where(kept) == "(preserved)"  # allowed everywhere, as in the reference
    outcome = rig.manager.reconfigure(config(**PRIVILEGED))
    assert outcome.applied
    assert rig.where(kept) == "default[0]"
