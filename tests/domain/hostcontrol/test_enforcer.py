"""The resource manager's host enforcement with both policies and the in-memory host ports:
CPU classes, interrupts, resctrl, resources.sh, scheduling routed by the runtime's NRI level,
restore at shutdown, what a host lacks said once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from nrirp.adapters.memory import (
    InMemoryCPUPower,
    InMemoryHostControl,
    InMemoryInterrupts,
    InMemoryResctrl,
    InMemoryResourceExport,
    RecordingDecisionLog,
    RecordingRuntimeUpdates,
)
from nrirp.domain.config import load_policy_config
from nrirp.domain.control import RuntimeFeatures
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.hostcontrol.interrupts import Interrupt
from nrirp.domain.hostcontrol.power import ALL_KNOBS, CPUCaps, Knob, PowerCaps
from nrirp.domain.hostcontrol.resctrl import BandwidthInfo, CacheInfo, ResctrlInfo
from nrirp.domain.model import ContainerState, SchedulingPolicy
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policies import BalloonsPolicy, TopologyAwarePolicy
from nrirp.testing import fake_machine
from tests.domain.policies.topology_aware.support import anno, make_container, make_pod

MACHINE = fake_machine("server-112-pmem")
BASE, TURBO = 2_700_000, 4_000_000
CAPS = PowerCaps(
    cpus={
        i: CPUCaps(1_000_000, TURBO, BASE, ("performance", "powersave"), ("C1", "C6"), ALL_KNOBS)
        for i in MACHINE.online
    }
)


@attrs.define
class Host:
    manager: ResourceManager
    power: InMemoryCPUPower
    irqs: InMemoryInterrupts
    resctrl: InMemoryResctrl
    export: InMemoryResourceExport
    host: InMemoryHostControl
    log: RecordingDecisionLog

    def notices(self) -> list[str]:
        return [n.message for n in self.log.notices]

    def run(self, name: str, cpu: int, *, guaranteed: bool = False, **pod: Any) -> Any:
        pod_value = make_pod(name, "Guaranteed" if guaranteed else "Burstable", **pod)
        limits = {"limit": cpu, "memory": 1 << 30} if guaranteed else {}
        ctr = make_container(pod_value, cpu=cpu, **limits)
        self.manager.run_pod(pod_value)
        result = self.manager.create_container(pod_value, ctr)
        running = attrs.evolve(ctr, state=ContainerState.RUNNING, pid=4242)
        self.manager.post_create(pod_value, running)
        self.manager.post_start(pod_value, running)
        return pod_value, ctr, result


def start(policy: str, spec: dict[str, Any], **ports: Any) -> Host:
    config = load_policy_config(policy, {"reservedResources": {"cpu": "cpuset:0"}, **spec})
    power = ports.get("power", InMemoryCPUPower(CAPS))
    irqs = ports.get(
        "irqs",
        InMemoryInterrupts(
            (Interrupt(40, "eth0-TxRx-0", MACHINE.online), Interrupt(60, "nvme0q0", MACHINE.online))
        ),
    )
    resctrl = ports.get("resctrl", InMemoryResctrl(ResctrlInfo(l3=CacheInfo(0x7FF, ids=(0, 1)))))
    export = InMemoryResourceExport()
    host = InMemoryHostControl()
    log = RecordingDecisionLog()
    manager = ResourceManager(
        policy=TopologyAwarePolicy() if policy == "topology-aware" else BalloonsPolicy(),
        machine=MACHINE,
        updates=RecordingRuntimeUpdates(),
        host=host,
        decisions=log,
        cpu_power=power,
        interrupts=irqs,
        resctrl=resctrl,
        resource_export=export,
    )
    manager.start(config)
    return Host(manager, power, irqs, resctrl, export, host, log)


CLASSES = {
    "cpuClasses": [
        {"name": "turbo", "minFreq": "base", "maxFreq": "turbo", "turboPriority": 10},
        {"name": "eco", "maxFreq": 2_000_000, "disabledCstates": ["C9"]},
    ],
    "defaultExclusiveCPUClass": "turbo",
    "sharedPoolCPUClass": "eco",
}


def test_topology_aware_classes_follow_exclusive_grants_and_go_back() -> None:
    h = start("topology-aware", CLASSES)
    applied = len(h.power.applied)
    assert h.power.target.cpus[5].max_khz == 2_000_000  # the shared CPUs' class
    assert "CPU class eco cannot be applied in full: disabledCstates: no C-state C9 (C1, C6)" in (
        h.notices()
    )
    for i in range(3):
        h.run(f"s{i}", 100)
    assert len(h.power.applied) == applied  # nothing changed: nothing applied
    pod, ctr, _ = h.run("g", 2000, guaranteed=True)
    cpus = h.manager.container(ctr.id).cpus  # type: ignore[union-attr]
    assert cpus is not None and len(cpus) == 2
    for cpu in cpus:
        assert (h.power.target.cpus[cpu].min_khz, h.power.target.cpus[cpu].max_khz) == (
            BASE,
            TURBO,
        )
        assert h.power.target.classes[cpu] == "turbo"
    # interrupts keep off the exclusive CPUs
    assert h.irqs.affinity(40) == MACHINE.online - cpus
    h.manager.stop_container(pod, ctr)
    h.manager.remove_container(pod, ctr)
    assert all(h.power.target.classes[cpu] == "eco" for cpu in cpus)
    assert h.irqs.affinity(40) == MACHINE.online  # back as it was
    h.manager.shutdown()
    assert h.power.restored == 1 and h.irqs.restored == 1


def test_topology_aware_irq_affinity_annotation_is_kept_as_a_tag_and_steers_nothing() -> None:
    # the reference inventory names the annotation's parts (claim/mask/mode), not their syntax
    # or meaning: nrirp keeps the value and steers interrupts as it does without it
    plain, annotated = start("topology-aware", {}), start("topology-aware", {})
    tags = {}
    for h, value in ((plain, None), (annotated, "claim: eth0-*")):
        annotations = {} if value is None else anno("irq-affinity", value)
        _, ctr, _ = h.run("g", 2000, guaranteed=True, annotations=annotations)
        h.run("s", 100, annotations=annotations)
        placed = h.manager.container(ctr.id)
        assert placed is not None and placed.cpus is not None
        tags[value] = placed.tags
        assert h.irqs.affinity(40) == MACHINE.online - placed.cpus  # off the exclusive CPUs
    assert tags["claim: eth0-*"]["topology-aware.irq-affinity"] == "claim: eth0-*"
    assert "topology-aware.irq-affinity" not in tags[None]
    assert annotated.irqs.applied == plain.irqs.applied


def test_balloons_turbo_priority_and_idle_class() -> None:
    h = start(
        "balloons",
        {
            "cpuClasses": [
                {"name": "hi", "turboPriority": 5},
                {"name": "lo", "turboPriority": 1},
            ],
            "idleCPUClass": "lo",
            "balloonTypes": [
                {
                    "name": "fast",
                    "namespaces": ["fast"],
                    "cpuClass": "hi",
                    "minCPUs": 2,
                    "minBalloons": 1,
                }
            ],
        },
    )
    fast = next(b for b in h.manager.policy.engine.balloons if b.kind.name == "fast")  # type: ignore[attr-defined]
    hi = CPUSet(fast.cpus)
    assert len(hi) == 2
    for cpu in hi:
        assert h.power.target.cpus.get(cpu) is None or h.power.target.cpus[cpu].max_khz is None
    idle = next(iter(MACHINE.package_cpus(MACHINE.cpus[min(hi)].package_id) - hi))
    assert h.power.target.cpus[idle].max_khz == BASE  # lo loses turbo next to hi
    other = next(iter(MACHINE.package_cpus(1 - MACHINE.cpus[min(hi)].package_id)))
    assert other not in h.power.target.cpus  # alone in its package: lo keeps turbo


def test_balloons_irq_claim_and_sink() -> None:
    h = start(
        "balloons",
        {
            "balloonTypes": [
                {"name": "net", "minCPUs": 2, "minBalloons": 1, "irqClaim": ["eth*"]},
                {"name": "sink", "minCPUs": 1, "minBalloons": 1, "irqMode": "sink"},
            ]
        },
    )
    engine = h.manager.policy.engine  # type: ignore[attr-defined]
    net = next(b for b in engine.balloons if b.kind.name == "net")
    sink = next(b for b in engine.balloons if b.kind.name == "sink")
    assert h.irqs.affinity(40) == CPUSet(net.cpus)
    assert h.irqs.affinity(60) == CPUSet(sink.cpus)
    assert h.irqs.affinities.default == CPUSet(sink.cpus)


def test_what_a_host_lacks_is_said_once_and_containers_are_placed() -> None:
    vm = InMemoryCPUPower(
        PowerCaps(
            cpus={i: CPUCaps() for i in MACHINE.online},
            unavailable={
                k: "no cpufreq: /sys/devices/system/cpu/cpu0/cpufreq is missing" for k in Knob
            },
        )
    )
    h = start(
        "topology-aware",
        {
            **CLASSES,
            "control": {
                "rdt": {
                    "enable": True,
                    "partitions": {"p": {"l2Allocation": "50%", "classes": {"gold": {}}}},
                }
            },
        },
        power=vm,
        irqs=InMemoryInterrupts(unavailable="no interrupt control: /proc/irq is missing"),
        resctrl=InMemoryResctrl(ResctrlInfo(l3=CacheInfo(0x7FF))),
    )
    for i in range(2):
        h.run(f"g{i}", 1000, guaranteed=True)
    notices = h.notices()
    lacking = [n for n in notices if "cannot be applied in full" in n]
    assert lacking == [
        "CPU class turbo cannot be applied in full: minFreq: no cpufreq: "
        "/sys/devices/system/cpu/cpu0/cpufreq is missing; maxFreq: no cpufreq: "
        "/sys/devices/system/cpu/cpu0/cpufreq is missing; turboPriority: no cpufreq: "
        "/sys/devices/system/cpu/cpu0/cpufreq is missing",
        "CPU class eco cannot be applied in full: maxFreq: no cpufreq: "
        "/sys/devices/system/cpu/cpu0/cpufreq is missing; disabledCstates: no cpufreq: "
        "/sys/devices/system/cpu/cpu0/cpufreq is missing",
    ]
    assert "interrupt affinity is not applied: no interrupt control: /proc/irq is missing" in (
        notices
    )
    assert any(
        n.startswith("RDT classes are not applied: control.rdt.partitions[*].l2Allocation: ")
        for n in notices
    )
    assert h.resctrl.plan is None


def test_rdt_groups_are_laid_out_and_maintained() -> None:
    rdt = {
        "enable": True,
        "partitions": {
            "p": {
                "l3Allocation": "100%",
                "classes": {"gold": {}, "bronze": {"l3Allocation": "25%"}},
            }
        },
    }
    info = ResctrlInfo(l3=CacheInfo(0x7FF, ids=(0, 1)), mb=BandwidthInfo(ids=(0, 1)))
    h = start("topology-aware", {"control": {"rdt": rdt}}, resctrl=InMemoryResctrl(info))
    assert h.resctrl.plan is not None
    assert dict(h.resctrl.plan.groups) == {"gold": ("L3:0=7ff;1=7ff",), "bronze": ("L3:0=7;1=7",)}
    _, _, result = h.run("r", 100, annotations={"rdtclass.resource-policy.nri.io": "gold"})
    assert result.adjustment.resources.rdt_class == "gold"
    config = load_policy_config(
        "topology-aware", {"reservedResources": {"cpu": "cpuset:0"}, "control": {"rdt": {}}}
    )
    assert h.manager.reconfigure(config).applied
    # RDT off: the groups go at the reconfiguration (cleared, tasks or not), not at the stop
    assert h.resctrl.plan is None and (h.resctrl.cleared, h.resctrl.restored) == (1, 0)
    assert h.manager.reconfigure(config).applied
    assert h.resctrl.cleared == 1  # nothing more to clear


def test_rdt_groups_holding_tasks_stay_at_shutdown_and_rdt_off_clears_at_start() -> None:
    rdt = {"enable": True, "partitions": {"p": {"classes": {"gold": {}, "bronze": {}}}}}
    info = ResctrlInfo(l3=CacheInfo(0x7FF, ids=(0, 1)))
    resctrl = InMemoryResctrl(info)
    h = start("topology-aware", {"control": {"rdt": rdt}}, resctrl=resctrl)
    resctrl.tasks["gold"] = 1  # runc put a container's task there
    h.manager.shutdown()
    assert (resctrl.restored, resctrl.cleared, resctrl.kept) == (1, 0, {"gold"})
    start("topology-aware", {"control": {"rdt": rdt}}, resctrl=resctrl)
    assert resctrl.plan is not None and "gold" in resctrl.plan.groups and not resctrl.kept
    # a daemon started without RDT removes what the previous one left, at its start
    start("topology-aware", {}, resctrl=resctrl)
    assert resctrl.plan is None and resctrl.cleared == 1


def test_resources_sh_is_exported_to_containers_that_ask() -> None:
    h = start("topology-aware", {})
    key = "export-resources.resource-policy.nri.io"
    _, ctr, result = h.run("x", 100, annotations={key: "true"})
    mounts = result.adjustment.mounts
    assert [(m.destination, m.source, m.options) for m in mounts] == [
        ("/.nri-resource-policy", f"{h.export.root}/{ctr.id}", ("bind", "ro", "rslave"))
    ]
    text = h.export.files[ctr.id]
    shared = h.manager.container(ctr.id).cpus  # type: ignore[union-attr]
    assert f'SHARED_CPUS="{shared}"\n' in text
    assert "EXCLUSIVE_CPUS" not in text and 'DRAM_MEMS="' in text and 'ALL_MEMS="' in text
    _, plain, result = h.run("y", 100)
    assert result.adjustment.mounts == () and plain.id not in h.export.files
    # an exclusive grant in its pool changes its shared CPUs: the file follows
    h.run("g", 4000, guaranteed=True)
    now = h.manager.container(ctr.id).cpus  # type: ignore[union-attr]
    assert now != shared and f'SHARED_CPUS="{now}"\n' in h.export.files[ctr.id]


def test_scheduling_goes_to_the_host_when_the_runtime_cannot_carry_it() -> None:
    spec = {
        "schedulingClasses": [{"name": "rt", "policy": "fifo", "priority": 10, "ioClass": "be"}]
    }
    h = start("topology-aware", spec)
    sched = {"scheduling-class.resource-policy.nri.io": "rt"}
    _, carried, result = h.run("a", 100, annotations=sched)
    assert result.adjustment.scheduling is not None and carried.id not in h.host.settings
    h.manager.set_runtime_features(RuntimeFeatures(scheduling=False, io_priority=False))
    _, later, result = h.run("b", 100, annotations=sched)
    assert result.adjustment.scheduling is None and result.adjustment.io_priority is None
    applied = h.host.settings[later.id]  # after it started
    assert applied.scheduling is not None and applied.scheduling.policy is SchedulingPolicy.FIFO
    assert applied.io_priority is not None
    assert h.host.calls[-1].target.pid == 4242


def test_topology_aware_prefers_pools_whose_cpus_take_the_class() -> None:
    """Scoring item 8: with EPP writable only on socket #1's CPUs, a container whose class
    sets EPP gets CPUs there; without the class it goes where it would anyway (socket #0)."""
    socket1 = MACHINE.package_cpus(1)
    partial = PowerCaps(
        cpus={
            i: CPUCaps(1_000_000, TURBO, BASE, knobs=ALL_KNOBS if i in socket1 else frozenset())
            for i in MACHINE.online
        },
        unavailable={Knob.EPP: "read-only: .../cpu0/cpufreq/energy_performance_preference"},
    )
    spec = {"cpuClasses": [{"name": "perf", "energyPerformancePreference": 0}]}
    h = start(
        "topology-aware",
        {**spec, "defaultExclusiveCPUClass": "perf"},
        power=InMemoryCPUPower(partial),
    )
    assert any(n.startswith("CPU class perf cannot be applied in full: ") for n in h.notices())
    _, ctr, _ = h.run("g", 2000, guaranteed=True)
    cpus = h.manager.container(ctr.id).cpus  # type: ignore[union-attr]
    assert cpus is not None and cpus <= socket1
    assert all(h.power.target.cpus[c].epp == 0 for c in cpus)
    plain = start("topology-aware", spec, power=InMemoryCPUPower(partial))
    _, ctr, _ = plain.run("g", 2000, guaranteed=True)
    cpus = plain.manager.container(ctr.id).cpus  # type: ignore[union-attr]
    assert cpus is not None and cpus <= MACHINE.package_cpus(0)


def test_missing_interrupt_control_is_warned_at_start_not_at_every_reload() -> None:
    """The host's lack of interrupt control does not change: one warning at start, none at
    the reloads after it (it came back at every reload)."""
    balloons = {"name": "net", "minCPUs": 2, "minBalloons": 1, "irqClaim": ["eth*"]}
    h = start(
        "balloons",
        {"balloonTypes": [balloons]},
        irqs=InMemoryInterrupts(unavailable="no interrupt control: /proc/irq is missing"),
    )
    for cpus in (3, 4):
        spec = {
            "reservedResources": {"cpu": "cpuset:0"},
            "balloonTypes": [{**balloons, "minCPUs": cpus}],
        }
        outcome = h.manager.reconfigure(load_policy_config("balloons", spec))
        assert outcome.applied, outcome
    warned = [n for n in h.notices() if n.startswith("interrupt affinity is not applied")]
    assert warned == [
        "interrupt affinity is not applied: no interrupt control: /proc/irq is missing"
    ]


def test_a_killed_daemons_changes_are_given_back_even_when_nothing_is_asked(
    tmp_path: Path,
) -> None:
    """The originals journalled by a daemon killed without restoring come back at the next
    start's first operation, also when its configuration has no classes and steers no
    interrupts (balloons without them: the assignment asks nothing)."""
    from nrirp.adapters.hostcontrol.cpufreq import SysfsCPUPower
    from nrirp.adapters.hostcontrol.irq import ProcInterruptControl
    from nrirp.domain.hostcontrol.interrupts import Affinities
    from nrirp.domain.hostcontrol.power import CPUTarget, PowerTarget
    from tests.adapters.hostcontrol.trees import host_tree, read

    cpu_journal, irq_journal = str(tmp_path / "cpu.json"), str(tmp_path / "irq.json")
    max_freq = "sys/devices/system/cpu/cpu3/cpufreq/scaling_max_freq"
    irq40 = "proc/irq/40/smp_affinity_list"
    with host_tree() as tree:
        killed_power = SysfsCPUPower(tree.sysfs_root, cpu_journal)
        killed_power.apply(PowerTarget(cpus={3: CPUTarget(max_khz=2_000_000)}))
        killed_irqs = ProcInterruptControl(tree.procfs_root, irq_journal)
        killed_irqs.apply(Affinities(irqs={40: CPUSet.parse("2-3")}))
        assert (read(tree, max_freq), read(tree, irq40)) == ("2000000", "2-3")
        h = start(
            "balloons",
            {},
            power=SysfsCPUPower(tree.sysfs_root, cpu_journal),
            irqs=ProcInterruptControl(tree.procfs_root, irq_journal),
        )
        h.run("a", 100)
        assert (read(tree, max_freq), read(tree, irq40)) == ("4000000", "0-111")
        h.manager.shutdown()
        assert not Path(cpu_journal).exists() and not Path(irq_journal).exists()
