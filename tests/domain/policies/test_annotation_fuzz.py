"""Fuzzing what a pod author controls (issue 9, fuzz tests): any annotation values under every
key the policies read, per pod or per container, make a CreateContainer either place the
container or refuse it with a reason, never fail with an internal error, and every notice
stays one bounded line (bounded: a few hundred examples, no deadline)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nrirp.domain.pipeline import OperationFailedError
from tests.domain.policies.balloons.support import make_rig as balloons_rig
from tests.domain.policies.topology_aware.support import make_rig as topology_rig

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DOMAIN = "resource-policy.nri.io"

KEYS = [
    f"{key}.{DOMAIN}"
    for key in (
        "allow.topologyhints", "blockioclass", "cold-start", "cpu-class", "cpu.preserve",
        "deny.topologyhints", "hide-hyperthreads", "irq-affinity", "memory-type",
        "memory.preserve", "pick-resources-by-hints", "prefer-cpu-priority",
        "prefer-isolated-cpus", "prefer-reserved-cpus", "prefer-shared-cpus", "rdtclass",
        "require-isolated-cpus", "scheduling-class", "strict.topologyhints", "topologyhints",
        "unlimited-burstable",
    )
] + [
    f"balloon.balloons.{DOMAIN}",
    f"{DOMAIN}/affinity",
    f"{DOMAIN}/anti-affinity",
    "cri-resource-manager.intel.com/affinity",
    "noderesource.dev/resources",
]  # fmt: skip
SCOPES = st.sampled_from(["", "/pod", "/container.c", "/container.other"])
VALUES = st.one_of(
    st.sampled_from(
        ["true", "false", "1", "", "reserved", "default", "dram", "pmem,hbm", "30s",
         "duration: 1h", "-5s", "0-3", "high", "package", "[a, b]", "{c: [d]}",
         "- scope: {key: name, operator: In, values: [c]}\n  match: {key: name, operator: Exists}",
         "containers: {c: {requests: {cpu: 3}}}", "&a [*a]", "!!python/object:x {}", "\x00"]
    ),
    st.text(alphabet="-?:,[]{}#&*!|>'\" \nab01.=", max_size=60),
)  # fmt: skip
ANNOTATIONS = st.dictionaries(st.tuples(st.sampled_from(KEYS), SCOPES).map("".join), VALUES)


@pytest.mark.parametrize("policy", ["topology-aware", "balloons"])
@FUZZ
@given(
    annotations=ANNOTATIONS,
    qos=st.sampled_from(["BestEffort", "Burstable", "Guaranteed"]),
    cpu=st.sampled_from([0, 100, 1000, 1500, 2000, 4000]),
    namespace=st.sampled_from(["default", "kube-system"]),
)
def test_any_annotations_place_or_refuse_a_container_never_an_internal_error(
    policy: str, annotations: dict[str, str], qos: str, cpu: int, namespace: str
) -> None:
    rig = topology_rig("box-16") if policy == "topology-aware" else balloons_rig("box-16")
    if qos == "BestEffort":
        cpu = 0
    elif qos == "Burstable" and cpu == 0:
        cpu = 100
    try:
        if policy == "topology-aware":
            rig.run("p", qos, cpu=cpu, namespace=namespace, annotations=annotations)
        else:
            rig.run("p", cpu, qos=qos, namespace=namespace, annotations=annotations)
    except OperationFailedError as exc:
        assert not exc.internal, f"an internal error: {exc}"
        assert "\n" not in exc.reason and len(exc.reason) < 1000
    for notice in rig.log.notices:
        assert "\n" not in notice.message and len(notice.message) < 1000, notice.message
