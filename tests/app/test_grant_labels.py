"""The readers of topology-aware's ``describe()`` grants (placement, simulator pool views, the
status report) name each container ``namespace/pod/container``, from the grant's identity keys
or, in a description made before them, from its former ``container`` label."""

from __future__ import annotations

from typing import Any

from nrirp.app.daemon.status import resource_groups
from nrirp.app.placement import groups_from_description
from nrirp.app.placement.description import grant_label
from nrirp.app.simulator.policy_view import pool_views
from tests.domain.policies.topology_aware.support import config, make_rig


def test_a_grant_is_labelled_from_its_identity_or_its_former_label() -> None:
    new = {"namespace": "prod", "pod": "web", "container": "nginx", "pool": "socket #0"}
    assert grant_label("c1", new) == "prod/web/nginx"
    assert grant_label("c1", {"container": "prod/web/nginx", "pool": "socket #0"}) == (
        "prod/web/nginx"
    )
    assert grant_label("c1", {"namespace": "", "pod": "", "container": "lone"}) == "lone"
    assert grant_label("c1", {"pool": "socket #0"}) == "c1"
    assert grant_label("c1", None) == "c1"


def _described() -> tuple[dict[str, Any], str]:
    rig = make_rig("box-16", config(reservedResources={"cpu": "cpuset:0"}))
    _, ctr, _ = rig.run("db", "Guaranteed", cpu=2000, namespace="prod")
    return dict(rig.manager.describe()), ctr.id


def _formerly(described: dict[str, Any]) -> dict[str, Any]:
    """The description as it was made before the identity keys: ``container`` the label."""
    pools = []
    for pool in described["pools"]:
        grants = {}
        for cid, grant in pool["grants"].items():
            old = {k: v for k, v in grant.items() if k not in ("namespace", "pod")}
            old["container"] = f"{grant['namespace']}/{grant['pod']}/{grant['container']}"
            grants[cid] = old
        pools.append(pool | {"grants": grants})
    return described | {"pools": pools}


def test_every_reader_names_the_container_of_a_grant_in_both_forms() -> None:
    described, cid = _described()
    for description in (described, _formerly(described)):
        groups, by_id = groups_from_description(description)
        holder = by_id[cid]
        assert "prod/db/c" in next(g for g in groups if g.name == holder).members
        views = {v.name: v for v in pool_views(description)}
        assert views[holder].containers == ("prod/db/c",)
        assert views[holder].container_ids == (cid,)
        kind, reported = resource_groups(description)
        assert kind == "pools"
        assert next(r for r in reported if r["name"] == holder)["containers"] == ["prod/db/c"]
