"""A Synchronize admits many containers at once with what one container's admission works out
remembered for the next ones (``request_memo.py``, the planner's setups, the scores of pools
that only saw grants come and go worked out again from their last ones: ``PoolScorer.rescored``):
its placements must be exactly those of admitting the containers one by one without any of it.

Random pods of the property tests (every QoS class, annotations, affinities, devices with
topology hints, memory pressure) plus requests no pool can take (more CPUs or memory than the
machine has, a memory type it lacks) on the catalogue machines and configurations, reserved,
shared and exclusive mixed: a Synchronize into a started policy, then a second one (a
reconnect: some gone, some new) is compared with

* the same two Synchronizes with the memos off: everything observable equal (containers with
  their cpus, mems and tags, describe(), zones, the updates returned);
* creating the same containers one by one (memos off) in the same order: the same grant for
  every container (pool, kind, exclusive CPUs, shared and reserved mCPU, memory zone), the
  same ones refused.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any
from unittest import mock

import attrs
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from nrirp.adapters.documents import load_policy_config
from nrirp.domain.model import Container, ContainerState, Pod
from nrirp.domain.pipeline import OperationFailedError, ResourceManager
from nrirp.domain.policies.topology_aware import planner as planner_module
from nrirp.domain.policies.topology_aware import policy as policy_module
from nrirp.domain.policies.topology_aware import scoring as scoring_module
from nrirp.domain.policies.topology_aware.policy import TopologyAwarePolicy
from tests.domain.policies.test_topology_aware_properties import (
    MACHINES,
    POLICY,
    CtrSpec,
    PodSpec,
    Rig,
    allocations,
    configs,
    machine,
    memory_capacity,
    observable,
    pods,
)


class _Forgetful(dict[Any, Any]):
    """A memo that keeps nothing."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


@contextlib.contextmanager
def memos_off() -> Iterator[None]:
    """Every request worked out from its annotations, every plan set up anew, every changed
    pool scored in full."""
    original = planner_module.Planner.__init__

    def forgetful_init(self: planner_module.Planner, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.setups = _Forgetful()

    with (
        mock.patch.object(policy_module, "annotated", lambda pod: True),
        mock.patch.object(planner_module.Planner, "__init__", forgetful_init),
        mock.patch.object(scoring_module.PoolScorer, "rescored", lambda *args: None),
    ):
        yield


@contextlib.contextmanager
def counting_rescores(count: list[int]) -> Iterator[None]:
    """Count in ``count[0]`` the scores worked out again from the last ones."""
    original = scoring_module.PoolScorer.rescored

    def counted(self: Any, pool: Any, old: Any) -> Any:
        score = original(self, pool, old)
        count[0] += score is not None
        return score

    with mock.patch.object(scoring_module.PoolScorer, "rescored", counted):
        yield


@st.composite
def impossible_pods(draw: st.DrawFn, index: int, name: str) -> PodSpec:
    """A pod no pool can take: too many CPUs, too much memory, or a memory type missing."""
    m = machine(name)
    what = draw(st.sampled_from(["cpus", "memory", "hbm"]))
    if what == "cpus":
        ctr = CtrSpec("c0", "guaranteed-int", 1000 * (len(m.all_cpus) + 4), None, 64 << 20)
    elif what == "memory":
        ctr = CtrSpec("c0", "guaranteed-frac", 500, None, 4 * memory_capacity(m))
    else:
        ctr = CtrSpec("c0", "burstable", 100, 200, 64 << 20, 128 << 20)
        ctr = attrs.evolve(ctr, annotations={"memory-type": "hbm"})
    namespace = draw(st.sampled_from(["default", "kube-system"]))
    return PodSpec(f"p{index}", namespace, (ctr,))


@st.composite
def workloads(draw: st.DrawFn, name: str, max_cpus: int) -> list[PodSpec]:
    m = machine(name)
    out = []
    for index in range(draw(st.integers(1, 24))):
        if draw(st.integers(0, 9)) == 0:
            out.append(draw(impossible_pods(index, name)))
        else:
            out.append(draw(pods(index, m, max_cpus)))
    return out


def reported(specs: Sequence[PodSpec], name: str) -> tuple[list[Pod], list[Container]]:
    """The pods and their running containers as a runtime's Synchronize reports them."""
    m = machine(name)
    out_pods = [spec.pod() for spec in specs]
    out_ctrs = [
        attrs.evolve(spec.container(ctr, m), state=ContainerState.RUNNING)
        for spec in specs
        for ctr in spec.containers
    ]
    return out_pods, out_ctrs


def grants(manager: ResourceManager) -> dict[str, tuple[Any, ...]]:
    policy = manager.policy
    assert isinstance(policy, TopologyAwarePolicy)
    return {
        cid: (g.pool.name, g.kind, g.exclusive, g.shared, g.reserved, g.memory, g.memory_types)
        for cid, g in policy.allocations.grants.items()
    }


def synchronized(
    name: str, config: dict[str, Any], rounds: Sequence[Sequence[PodSpec]]
) -> tuple[Rig, list[Any]]:
    """A fresh policy synchronized with each round's pods in turn; what each returned."""
    rig = Rig.fresh(name, load_policy_config(POLICY, config))
    returned = []
    for specs in rounds:
        pod_list, ctr_list = reported(specs, name)
        returned.append(rig.manager.synchronize(pod_list, ctr_list))
    return rig, returned


def one_by_one(name: str, config: dict[str, Any], specs: Sequence[PodSpec]) -> Rig:
    """A fresh policy creating the pods' containers one at a time (refusals skipped)."""
    rig = Rig.fresh(name, load_policy_config(POLICY, config))
    m = machine(name)
    for spec in specs:
        pod = spec.pod()
        rig.manager.run_pod(pod)
        for ctr in spec.containers:
            with contextlib.suppress(OperationFailedError):
                rig.manager.create_container(pod, spec.container(ctr, m))
    return rig


RESCORING = [
    PodSpec(f"p{index}", "default", (CtrSpec("c0", "burstable", 100, 200, 64 << 20, 128 << 20),))
    for index in range(12)
]
"""A dozen small burstable pods: shared pools scored again from their last scores on every
machine (random workloads may miss it: 20 examples on epyc-nps2-64 once did)."""


@pytest.mark.parametrize(("name", "max_cpus", "examples"), MACHINES)
def test_a_synchronize_places_as_one_by_one_admission(
    name: str, max_cpus: int, examples: int
) -> None:
    rescored = [0]

    @settings(
        max_examples=max(10, examples // 2),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        config_index=st.integers(0, len(configs(machine(name))) - 1),
        first=workloads(name, max_cpus),
        kept=st.lists(st.booleans(), max_size=24),
        later=workloads(name, max_cpus),
    )
    @example(config_index=0, first=RESCORING, kept=[], later=[])
    def run(
        config_index: int, first: list[PodSpec], kept: list[bool], later: list[PodSpec]
    ) -> None:
        config = configs(machine(name))[config_index]
        # a reconnect: some pods gone, new ones (renamed apart from the first ones)
        survivors = [spec for i, spec in enumerate(first) if i >= len(kept) or kept[i]]
        fresh = [attrs.evolve(spec, name=f"q{spec.name[1:]}") for spec in later]
        rounds = [first, [*survivors, *fresh]]

        with counting_rescores(rescored):
            batched, returned = synchronized(name, config, rounds)
        with memos_off():
            plain, plain_returned = synchronized(name, config, rounds)
            single = one_by_one(name, config, first)
        assert allocations(batched.manager) == allocations(plain.manager)
        assert observable(batched.manager) == observable(plain.manager)
        assert returned == plain_returned

        # the first Synchronize against creating its containers one by one
        first_only, _ = synchronized(name, config, [first])
        placed = grants(first_only.manager)
        assert placed == grants(single.manager)
        ids = {c.id for c in reported(first, name)[1]}
        refused = ids - placed.keys()
        assert refused == ids - grants(single.manager).keys()

    run()
    assert rescored[0] > 0, "no example scored a pool again from its last score"
