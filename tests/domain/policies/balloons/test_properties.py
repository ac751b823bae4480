"""Property tests of the ``balloons`` policy on the catalogue machines.

Random configurations (balloon types with namespaces, sizes, counts, sharing, grouping,
spreading, loads, composites, memory types; reserved CPUs as an amount or a cpuset; preserve
expressions) and random workloads (pods of every QoS class in several namespaces, with
labels and now and then the policy's annotations; creations, deletions, container exits,
in-place resizes, restarts and reconfigurations) go through the real
:class:`ResourceManager`. Written from ``reference-balloons.md``, not from the policy's code.
After every operation:

* no CPU is in two balloons, and every balloon's CPUs are available ones;
* every running container is in exactly one balloon, unless it is preserved (then the policy
  set nothing on it), and its cpuset is its balloon's CPUs plus the balloon's shared idle
  CPUs (one thread per core with ``hide-hyperthreads``);
* kube-system containers are in the reserved balloon;
* a balloon's size lies within its type's ``[minCPUs, maxCPUs]``, and a balloon with
  containers holds at least one CPU and covers their requests, unless ``maxCPUs`` caps it;
* a balloon counts exactly the requests of its containers;
* a refused request changes nothing;
* a restarted policy holds exactly what a twin that never restarted holds (the memory
  allocations' order numbers compared by rank), and goes on deciding exactly as the twin does.

At the end every pod is deleted: the policy then holds what a freshly started one holds, per
type as many balloons of the same sizes, the same number of free CPUs, no memory accounted.
(Which CPUs a balloon keeps when it deflates, and which of a type's balloons is deleted when
it empties, depend on what happened meanwhile, in the reference as here.)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nrirp.adapters.documents import load_policy_config
from nrirp.adapters.fakehw import expected_machine, load_machine
from nrirp.adapters.memory import InMemoryStateStore, RecordingRuntimeUpdates
from nrirp.domain.config import PolicyConfig
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, ContainerState, Pod, millis_from_shares
from nrirp.domain.model.kubelet import (
    Resources,
    container_resources,
    oom_score_adj,
    pod_cgroup_parent,
    pod_qos,
)
from nrirp.domain.pipeline import OperationFailedError, ResourceManager
from nrirp.domain.policies import BalloonsPolicy, builtin_registry
from nrirp.domain.topology import Machine
from tests.support.documents import ANNOTATIONS

POLICY = "balloons"
DOMAIN = "resource-policy.nri.io"
BALLOON_KEY = "balloon.balloons.resource-policy.nri.io"
TAG_MEMORY = "balloons.memory"
MiB = 1 << 20
MACHINES = ["box-16", "server-112-pmem", "hybrid-desktop", "hbm-cxl", "server-4s-144"]


@functools.cache
def machine(name: str) -> Machine:
    return expected_machine(load_machine(name))


# ====================================================================== configurations
_OPTIONS = {
    "shareIdleCPUsInSame": st.sampled_from(["numa", "core", "package", "l2cache"]),
    "preferNewBalloons": st.booleans(),
    "preferSpreadingPods": st.booleans(),
    "preferPerNamespaceBalloon": st.booleans(),
    "groupBy": st.just("${pod/labels/team}"),
    "hideHyperthreads": st.booleans(),
    "preferSpreadOnPhysicalCores": st.booleans(),
    "allocatorTopologyBalancing": st.booleans(),
    "memoryTypes": st.just(["DRAM"]),
    "allocatorPriority": st.sampled_from(["high", "normal", "low", "none"]),
    "loads": st.just(["busy"]),
    "pinMemory": st.booleans(),
}
_PICKING = (
    "preferSpreadOnPhysicalCores",
    "allocatorTopologyBalancing",
    "preferCloseToDevices",
    "preferIsolCpus",
    "preferCoreType",
    "cpuClass",
)


@st.composite
def balloon_type(draw: st.DrawFn, index: int) -> dict[str, Any]:
    min_cpus = draw(st.integers(0, 2))
    item: dict[str, Any] = {
        "name": f"t{index}",
        "namespaces": [draw(st.sampled_from(["ns-a", "ns-b", "ns-*"]))],
        "minCPUs": min_cpus,
        "maxCPUs": draw(st.one_of(st.just(0), st.integers(max(min_cpus, 1), 6))),
        "minBalloons": draw(st.integers(0, 1)),
        "maxBalloons": draw(st.sampled_from([0, 0, 1, 3])),
    }
    if item["maxBalloons"] and item["minBalloons"] > item["maxBalloons"]:
        item["maxBalloons"] = item["minBalloons"]
    keys = draw(st.sets(st.sampled_from(sorted(_OPTIONS)), max_size=4))
    for key in sorted(keys):
        item[key] = draw(_OPTIONS[key])
    if index and draw(st.integers(0, 4)) == 0:  # a composite of an earlier type
        item["components"] = [{"balloonType": "t0"}, {"balloonType": f"t{index - 1}"}]
        for key in _PICKING:
            item.pop(key, None)
    return item


@st.composite
def configs(draw: st.DrawFn, m: Machine) -> dict[str, Any]:
    types = [draw(balloon_type(i)) for i in range(draw(st.integers(0, 3)))]
    if draw(st.integers(0, 3)) == 0:  # a configured default type
        types.append(
            {"name": "default", "minBalloons": 1, "maxCPUs": draw(st.sampled_from([0, 4]))}
        )
    first = m.all_cpus.min()
    out: dict[str, Any] = {
        "reservedResources": {
            "cpu": draw(st.sampled_from(["750m", "1", "1500m", f"cpuset:{first}"]))
        },
        "balloonTypes": types,
        "loadClasses": [
            {
                "name": "busy",
                "level": draw(st.sampled_from(["core", "l2cache"])),
                "overloadsLevelInBalloon": draw(st.booleans()),
            }
        ],
        "pinMemory": draw(st.booleans()),
        "reservedPoolNamespaces": draw(st.sampled_from([[], ["infra"]])),
    }
    if draw(st.booleans()):
        out["preserve"] = {"matchExpressions": [{"key": "pod/labels/keep", "operator": "Exists"}]}
    if draw(st.integers(0, 5)) == 0:
        out["pinCPU"] = False
    return out


# ====================================================================== workloads
@attrs.frozen
class CtrSpec:
    name: str
    kind: str  # besteffort | burstable | guaranteed
    cpu: int = 0
    memory: int = 0
    annotations: Mapping[str, str] = attrs.field(factory=dict)

    def resources(self) -> Resources:
        if self.kind == "besteffort":
            return Resources()
        if self.kind == "guaranteed":
            return Resources(self.cpu, self.cpu, self.memory, self.memory)
        return Resources(self.cpu, None, self.memory, self.memory * 2)

    @property
    def request(self) -> int:
        """The request as the runtime reports it (kubelet's shares; 0-2m read as 0)."""
        shares = container_resources(self.resources()).cpu_shares
        return millis_from_shares(shares) if shares else 0


@attrs.frozen
class PodSpec:
    name: str
    namespace: str
    containers: tuple[CtrSpec, ...]
    labels: Mapping[str, str] = attrs.field(factory=dict)

    @property
    def qos(self) -> Any:
        return pod_qos(c.resources() for c in self.containers)

    def pod(self) -> Pod:
        annotations = {
            f"{key}/container.{ctr.name}": value
            for ctr in self.containers
            for key, value in ctr.annotations.items()
        }
        uid = f"uid-{self.name}"
        return Pod(
            id=f"id-{self.name}",
            name=self.name,
            uid=uid,
            namespace=self.namespace,
            labels=dict(self.labels),
            annotations=annotations,
            cgroup_parent=pod_cgroup_parent(self.qos, uid),
        )

    def container(self, ctr: CtrSpec, m: Machine) -> Container:
        capacity = sum(n.memory_bytes for n in m.nodes.values())
        return Container(
            id=f"id-{self.name}-{ctr.name}",
            pod_id=f"id-{self.name}",
            name=ctr.name,
            state=ContainerState.CREATING,
            resources=container_resources(ctr.resources()),
            oom_score_adj=oom_score_adj(self.qos, ctr.resources().memory_request, capacity),
        )


NAMESPACES = ["default", "ns-a", "ns-b", "kube-system", "infra"]


@st.composite
def pods(draw: st.DrawFn, index: int, type_names: list[str]) -> PodSpec:
    namespace = draw(st.sampled_from(NAMESPACES))
    kind = draw(st.sampled_from(["besteffort", "burstable", "guaranteed"]))
    ctrs = []
    for i in range(draw(st.integers(1, 2))):
        cpu = draw(st.integers(1, 3000)) if kind != "besteffort" else 0
        if kind == "guaranteed" and draw(st.booleans()):
            cpu = 1000 * draw(st.integers(1, 3))
        annotations: dict[str, str] = {}
        choice = draw(st.integers(0, 11))
        if choice == 0 and namespace != "kube-system" and type_names:
            annotations[BALLOON_KEY] = draw(st.sampled_from(type_names))
        elif choice == 1:
            annotations[f"cpu.preserve.{DOMAIN}"] = "true"
        elif choice == 2:
            annotations[f"hide-hyperthreads.{DOMAIN}"] = draw(st.sampled_from(["true", "false"]))
        elif choice == 3:
            annotations[f"memory-type.{DOMAIN}"] = "dram"
        ctrs.append(CtrSpec(f"c{i}", kind, cpu, draw(st.integers(1, 256)) * MiB, annotations))
    labels = {}
    if draw(st.booleans()):
        labels["team"] = draw(st.sampled_from(["red", "blue"]))
    if draw(st.integers(0, 5)) == 0:
        labels["keep"] = "yes"
    return PodSpec(f"p{index}", namespace, tuple(ctrs), labels)


@st.composite
def scenarios(draw: st.DrawFn, m: Machine, length: int) -> tuple[list[dict[str, Any]], list[Any]]:
    cfgs = [draw(configs(m)) for _ in range(draw(st.integers(1, 3)))]
    names = sorted({t["name"] for c in cfgs for t in c["balloonTypes"]} | {"default"})
    ops: list[Any] = []
    for index in range(draw(st.integers(1, length))):
        what = draw(
            st.sampled_from(["create"] * 4 + ["delete", "stop", "resize", "restart", "reconfigure"])
        )
        if what == "create":
            ops.append(("create", draw(pods(index, names))))
        elif what in ("delete", "stop"):
            ops.append((what, draw(st.integers(0, 99))))
        elif what == "resize":
            ops.append(("resize", draw(st.integers(0, 99)), draw(st.integers(1, 3000))))
        elif what == "restart":
            ops.append(("restart",))
        else:
            ops.append(("reconfigure", draw(st.integers(0, 9))))
    return cfgs, ops


# ====================================================================== the rig
@attrs.define
class Rig:
    machine_name: str
    store: InMemoryStateStore
    manager: ResourceManager
    sent: RecordingRuntimeUpdates

    @classmethod
    def of(cls, machine_name: str, store: InMemoryStateStore) -> Rig:
        sent = RecordingRuntimeUpdates()
        manager = ResourceManager(
            policy=builtin_registry().create(POLICY),
            machine=machine(machine_name),
            store=store,
            updates=sent,
            annotation_parser=ANNOTATIONS,
        )
        return cls(machine_name, store, manager, sent)

    @classmethod
    def fresh(cls, machine_name: str, config: PolicyConfig) -> Rig:
        rig = cls.of(machine_name, InMemoryStateStore())
        rig.manager.start(config)
        return rig

    def restarted(self) -> Rig:
        rig = Rig.of(self.machine_name, self.store)
        rig.manager.start()
        running = [c for c in self.manager.containers() if c.state.holds_resources]
        reported = [attrs.evolve(c, state=ContainerState.RUNNING) for c in running]
        rig.manager.synchronize(self.manager.pods(), reported)
        return rig


@attrs.define
class World:
    machine_name: str
    configs: list[dict[str, Any]]
    config: dict[str, Any]
    live: dict[str, PodSpec] = attrs.field(factory=dict)
    stopped: set[str] = attrs.field(factory=set)
    """Container ids that exited (their pods stay)."""


def observable(manager: ResourceManager) -> tuple[Any, ...]:
    return (manager.pods(), manager.containers(), manager.describe())


def held(manager: ResourceManager) -> dict[str, Any]:
    """Each running container's cpus, mems and tags; the memory tag's order number (which
    only ranks the memory allocations, and restarts from the highest one saved) as its rank."""
    running = [c for c in manager.containers() if c.state.holds_resources]
    orders = sorted(int(tag.split(":")[0]) for c in running if (tag := c.tags.get(TAG_MEMORY)))
    out = {}
    for c in running:
        tags = dict(c.tags)
        if tags.get(TAG_MEMORY):
            order, rest = tags[TAG_MEMORY].split(":", 1)
            tags[TAG_MEMORY] = f"#{orders.index(int(order))}:{rest}"
        out[c.id] = (c.cpus, c.mems, tags)
    return out


def pick(world: World, index: int) -> PodSpec | None:
    names = sorted(world.live)
    return world.live[names[index % len(names)]] if names else None


def apply(world: World, rig: Rig, op: tuple[Any, ...]) -> list[bool]:
    """Apply ``op``; returns per pipeline call whether it succeeded (a refused call must leave
    everything as it was)."""
    manager = rig.manager
    m = machine(world.machine_name)
    outcomes: list[bool] = []

    def attempt(call: Any) -> bool:
        before = observable(manager)
        try:
            call()
        except OperationFailedError:
            assert observable(manager) == before, "a refused request changed the state"
            return False
        return True

    if op[0] == "create":
        spec: PodSpec = op[1]
        pod = spec.pod()
        manager.run_pod(pod)
        for ctr in spec.containers:
            container = spec.container(ctr, m)

            def create(c: Container = container) -> None:
                manager.create_container(pod, c)
                running = attrs.evolve(c, state=ContainerState.RUNNING)
                manager.post_create(pod, running)
                manager.post_start(pod, running)

            outcomes.append(attempt(create))
    elif op[0] in ("delete", "stop"):
        target = pick(world, op[1])
        if target is not None:
            pod = target.pod()
            for ctr in target.containers:
                cached = manager.container(f"id-{target.name}-{ctr.name}")
                if cached is not None:
                    manager.stop_container(pod, cached)
                    if op[0] == "delete":
                        manager.remove_container(pod, cached)
                if op[0] == "stop":
                    break  # one container exits
            if op[0] == "delete":
                manager.stop_pod(pod)
                manager.remove_pod(pod)
    elif op[0] == "resize":
        target = pick(world, op[1])
        if target is not None:
            ctr = target.containers[0]
            cached = manager.container(f"id-{target.name}-{ctr.name}")
            if cached is not None and cached.state.holds_resources and ctr.kind == "burstable":
                new = attrs.evolve(ctr, cpu=op[2])
                resources = container_resources(new.resources())
                outcomes.append(
                    attempt(lambda: manager.update_container(target.pod(), cached, resources))
                )
    elif op[0] == "reconfigure":
        config = world.configs[op[1] % len(world.configs)]
        before = observable(manager)
        outcome = manager.reconfigure(load_policy_config(POLICY, config))
        if not outcome.applied:
            assert observable(manager) == before, "a refused configuration changed the state"
        outcomes.append(outcome.applied)
    return outcomes


def record(world: World, op: tuple[Any, ...], outcomes: list[bool], rig: Rig) -> None:
    if op[0] == "create":
        world.live[op[1].name] = op[1]
    elif op[0] == "delete":
        target = pick(world, op[1])
        if target is not None:
            del world.live[target.name]
    elif op[0] == "reconfigure" and outcomes[0]:
        world.config = world.configs[op[1] % len(world.configs)]
    elif op[0] == "resize" and outcomes and outcomes[0]:
        target = pick(world, op[1])
        assert target is not None
        ctr = attrs.evolve(target.containers[0], cpu=op[2])
        world.live[target.name] = attrs.evolve(target, containers=(ctr, *target.containers[1:]))


# ====================================================================== invariants
def type_limits(config: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """(minCPUs, maxCPUs) of each type as the reference expands the config."""
    out = {t["name"]: (t.get("minCPUs", 0), t.get("maxCPUs", 0)) for t in config["balloonTypes"]}
    out.setdefault("default", (0, 0))
    reserved = str(config["reservedResources"]["cpu"])
    if reserved.startswith("cpuset:"):
        out["reserved"] = (0, 0)
    else:
        millis = float(reserved[:-1]) if reserved.endswith("m") else float(reserved) * 1000
        out["reserved"] = (math.ceil(millis / 1000), 0)
    return out


def is_preserved(spec: PodSpec, ctr: CtrSpec, config: Mapping[str, Any]) -> bool:
    if ctr.annotations.get(f"cpu.preserve.{DOMAIN}") == "true":
        return True
    return "preserve" in config and "keep" in spec.labels


def check_invariants(world: World, rig: Rig) -> None:
    m = machine(world.machine_name)
    config = world.config
    manager = rig.manager
    view = manager.describe()
    limits = type_limits(config)
    used = CPUSet()
    balloons: dict[str, dict[str, Any]] = {}

    def walk(balloon: Mapping[str, Any], top: bool) -> None:
        nonlocal used
        cpus = CPUSet.parse(balloon["cpus"])
        lo, hi = limits[balloon["type"]]
        if "components" in balloon:
            for component in balloon["components"]:
                walk(component, False)
        else:
            assert used.isdisjoint(cpus), f"CPUs {used & cpus} in two balloons"
            used |= cpus
            assert len(cpus) >= lo and (hi == 0 or len(cpus) <= hi), (
                f"{balloon['name']} has {len(cpus)} CPUs outside [{lo}, {hi}]"
            )
        if top:
            balloons[balloon["name"]] = balloon

    for balloon in view["balloons"]:
        walk(balloon, True)
    assert used | CPUSet.parse(view["free"]) == CPUSet.parse(view["allowed"])
    assert used.isdisjoint(CPUSet.parse(view["free"]))

    specs = {
        f"id-{spec.name}-{ctr.name}": (spec, ctr)
        for spec in world.live.values()
        for ctr in spec.containers
    }
    listed: dict[str, str] = {}
    for name, balloon in balloons.items():
        for label in balloon["containers"]:
            assert label not in listed, f"{label} in {listed[label]} and {name}"
            listed[label] = name
    requested: dict[str, int] = {}
    pin_cpu = config.get("pinCPU", True)
    for c in manager.containers():
        if not c.state.holds_resources:
            continue
        spec, ctr = specs[c.id]
        label = f"{spec.namespace}/{spec.name}/{ctr.name}"
        where = f"{label} ({ctr}, cpus {c.cpus}, tag {c.tags.get('balloons.balloon')})"
        if is_preserved(spec, ctr, config):
            assert c.tags.get("balloons.balloon") == "(preserved)", where
            assert label not in listed, f"preserved {where} is in a balloon"
            continue
        assert label in listed, f"{where} is in no balloon"
        name = listed[label]
        assert c.tags.get("balloons.balloon") == name, where
        balloon = balloons[name]
        requested[name] = requested.get(name, 0) + ctr.request
        if spec.namespace == "kube-system":
            assert balloon["type"] == "reserved", f"{where} not in the reserved balloon"
        pinnable = CPUSet.parse(balloon["cpus"]) | CPUSet.parse(balloon["shared_idle_cpus"])
        hide = ctr.annotations.get(f"hide-hyperthreads.{DOMAIN}")
        if not pin_cpu:
            pass  # nothing is written (a cpuset set under an earlier config stays)
        elif c.cpus != pinnable:
            assert hide == "true" or (hide is None and c.cpus is not None), where
            assert c.cpus is not None and c.cpus <= pinnable, where
            assert {m.core_of(cpu) for cpu in c.cpus} == {m.core_of(cpu) for cpu in pinnable}
            assert len(c.cpus) == len({m.core_of(cpu) for cpu in pinnable}), where
    for name, balloon in balloons.items():
        assert balloon["requested_mcpu"] == requested.get(name, 0), f"{name} miscounts requests"
        if balloon["containers"] and "components" not in balloon:
            size = len(CPUSet.parse(balloon["cpus"]))
            _, hi = limits[balloon["type"]]
            assert size >= 1, f"{name} holds containers but no CPU"
            assert size * 1000 >= balloon["requested_mcpu"] or size == hi, (
                f"{name}: {size} CPUs for {balloon['requested_mcpu']}m (maxCPUs {hi})"
            )


# ====================================================================== the test
def run(machine_name: str, cfgs: list[dict[str, Any]], ops: list[Any]) -> None:
    try:
        first = load_policy_config(POLICY, cfgs[0])
    except Exception as exc:  # the generator keeps to valid configs
        raise AssertionError(f"generated an invalid config: {exc}") from exc
    world = World(machine_name, cfgs, cfgs[0])
    try:
        rig = Rig.fresh(machine_name, first)
    except OperationFailedError:
        return  # minBalloons that do not fit this machine: refused at start, nothing to run
    twin = Rig.fresh(machine_name, first)
    for op in ops:
        if op[0] == "restart":
            rig = rig.restarted()
            assert held(rig.manager) == held(twin.manager), "the restart changed placements"
            assert rig.manager.describe() == twin.manager.describe()
            continue
        outcomes = apply(world, rig, op)
        assert apply(world, twin, op) == outcomes, f"{op}: the twin decided otherwise"
        record(world, op, outcomes, rig)
        check_invariants(world, rig)
        assert held(rig.manager) == held(twin.manager), f"after {op[0]}: rig and twin differ"
    # free everything: the policy is as a fresh one with the config in force
    for name in sorted(world.live):
        apply(world, rig, ("delete", sorted(world.live).index(name)))
        del world.live[name]
    fresh = Rig.fresh(machine_name, load_policy_config(POLICY, world.config))
    assert at_rest(rig.manager) == at_rest(fresh.manager), "freeing all is not a fresh start"
    policy = rig.manager.policy
    assert isinstance(policy, BalloonsPolicy)
    assert policy.state.pinning.memory.allocator.owners() == ()


def at_rest(manager: ResourceManager) -> Any:
    """What a policy without containers holds: per type its balloons' sizes, the free CPUs'
    count, nothing requested or shared beyond idle CPUs. Which CPUs a balloon kept when it
    shrank back and which index survived depend on the history (as in the reference)."""
    view = manager.describe()
    sizes: dict[str, list[int]] = {}
    for balloon in view["balloons"]:
        assert balloon["containers"] == [] and balloon["requested_mcpu"] == 0
        sizes.setdefault(balloon["type"], []).append(len(CPUSet.parse(balloon["cpus"])))
    return (
        {t: sorted(v) for t, v in sizes.items()},
        len(CPUSet.parse(view["free"])),
        view["preserved"],
    )


SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("machine_name", MACHINES)
@SETTINGS
@given(data=st.data())
def test_balloons_properties(machine_name: str, data: st.DataObject) -> None:
    cfgs, ops = data.draw(scenarios(machine(machine_name), 24))
    run(machine_name, cfgs, ops)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_balloons_properties_on_4096_cpus(data: st.DataObject) -> None:
    cfgs, ops = data.draw(scenarios(machine("sparse-8s-4096"), 12))
    run("sparse-8s-4096", cfgs, ops)
