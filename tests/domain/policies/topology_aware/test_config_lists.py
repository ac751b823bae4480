"""Decisions cost what changes, not the length of config lists (issue 9 item 3), and the
privileged annotations can be restricted to some namespaces."""

from __future__ import annotations

import pytest

from nrirp.domain.matching import GlobSet
from nrirp.domain.model.annotations import RESOURCE_POLICY_DOMAIN

from .support import anno, config, make_rig

NAMESPACES = [f"team-{n:05d}" for n in range(50_000)]


def test_reserved_namespaces_are_compiled_once_per_config() -> None:
    cfg = config(reservedPoolNamespaces=[*NAMESPACES, "infra-*", "*-system"])
    rig = make_rig("box-16", cfg)
    built = GlobSet.builds
    for n, namespace in enumerate(("team-00042", "infra-db", "logs-system", "prod", "team-x")):
        rig.run(f"p{n}", namespace=namespace, cpu=100)
    assert GlobSet.builds == built  # no decision compiles anything
    kinds = [c.tags["topology-aware.kind"] for c in rig.manager.containers()]
    assert kinds == ["reserved", "reserved", "reserved", "shared", "shared"]
    rig.manager.reconfigure(config(reservedPoolNamespaces=["prod"]))
    assert GlobSet.builds == built + 1  # one per configuration
    _, ctr, _ = rig.run("again", namespace="prod", cpu=100)
    assert rig.kind(ctr) == "reserved"
    _, ctr, _ = rig.run("team", namespace="team-00042", cpu=100)
    assert rig.kind(ctr) == "shared"


def test_reserved_namespaces_are_go_globs() -> None:
    rig = make_rig("box-16", config(reservedPoolNamespaces=["[a-c]?-infra", "x\\*"]))
    for n, (namespace, kind) in enumerate(
        [("b1-infra", "reserved"), ("d1-infra", "shared"), ("x*", "reserved"), ("xy", "shared")]
    ):
        _, ctr, _ = rig.run(f"p{n}", namespace=namespace, cpu=100)
        assert rig.kind(ctr) == kind, namespace


PRIVILEGED = {"privilegedAnnotations": {"allowedNamespaces": ["kube-system", "infra-*"]}}


@pytest.mark.parametrize(
    ("key", "allowed_kind", "refused_kind"),
    [("prefer-reserved-cpus", "reserved", "shared"), ("cpu.preserve", "preserve", "shared")],
)
def test_privileged_cpu_annotations_only_in_allowed_namespaces(
    key: str, allowed_kind: str, refused_kind: str
) -> None:
    rig = make_rig("box-16", config(**PRIVILEGED))
    _, allowed, _ = rig.run("a", namespace="infra-db", cpu=100, annotations=anno(key, "true"))
    assert rig.kind(allowed) == allowed_kind
    _, refused, _ = rig.run("r", namespace="prod", cpu=100, annotations=anno(key, "true"))
    assert rig.kind(refused) == refused_kind
    assert [(n.source, n.message) for n in rig.log.notices] == [
        (
            "annotations",
            f"container c: annotation {key}.{RESOURCE_POLICY_DOMAIN}='true' ignored: not allowed"
            " in namespace 'prod' (privilegedAnnotations.allowedNamespaces: kube-system, infra-*)",
        )
    ]
    # false is no privilege: honoured anywhere (kube-system opting out of the reserved CPUs)
    _, plain, _ = rig.run(
        "k", namespace="kube-system", cpu=100, annotations=anno("prefer-reserved-cpus", "false")
    )
    assert rig.kind(plain) == "shared"


def test_memory_preserve_only_in_allowed_namespaces() -> None:
    rig = make_rig("box-16", config(**PRIVILEGED))
    keep = anno("memory.preserve", "true")
    _, allowed, _ = rig.run("a", "Guaranteed", namespace="kube-system", cpu=1000, annotations=keep)
    _, refused, _ = rig.run("r", "Guaranteed", namespace="prod", cpu=1000, annotations=keep)
    assert rig.ctr(allowed).mems is None  # left as the runtime set it
    assert rig.ctr(refused).mems is not None  # pinned as without the annotation
    assert any("not allowed in namespace 'prod'" in n.message for n in rig.log.notices)


def test_without_the_block_the_annotations_work_everywhere_as_in_the_reference() -> None:
    rig = make_rig("box-16")
    _, ctr, _ = rig.run("p", namespace="prod", cpu=100, annotations=anno("cpu.preserve", "true"))
    assert rig.kind(ctr) == "preserve"
    nowhere = make_rig("box-16", config(privilegedAnnotations={"allowedNamespaces": []}))
    _, ctr, _ = nowhere.run(
        "k", namespace="kube-system", cpu=100, annotations=anno("cpu.preserve", "true")
    )
    assert nowhere.kind(ctr) == "reserved"  # kube-system, as without the annotation
    assert any("(privilegedAnnotations.allowedNamespaces: no namespace)" in n.message
               for n in nowhere.log.notices)  # fmt: skip
