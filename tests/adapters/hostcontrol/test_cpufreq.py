"""SysfsCPUPower on fake host trees: what it finds, writes, puts back; missing and read-only
files."""

from __future__ import annotations

from pathlib import Path

from nrirp.adapters.hostcontrol.cpufreq import SysfsCPUPower
from nrirp.domain.hostcontrol.power import (
    ALL_KNOBS,
    NO_TARGET,
    CPUTarget,
    Knob,
    PowerTarget,
    UncoreCaps,
    UncoreTarget,
)
from tests.adapters.hostcontrol.trees import host_tree, read

CPU3 = "sys/devices/system/cpu/cpu3"
UNCORE1 = "sys/devices/system/cpu/intel_uncore_frequency/package_01_die_00"


def test_capabilities_of_a_server() -> None:
    with host_tree() as tree:
        caps = SysfsCPUPower(tree.sysfs_root).capabilities()
    cpu = caps.cpus[3]
    assert (cpu.min_khz, cpu.max_khz, cpu.base_khz) == (1_000_000, 4_000_000, 2_700_000)
    assert cpu.governors == ("performance", "powersave")
    assert cpu.cstates == ("POLL", "C1", "C1E", "C6")
    assert cpu.knobs == ALL_KNOBS and caps.policies == {}  # one CPU per cpufreq policy
    assert caps.cpus[4] is cpu  # CPUs alike share one value
    assert len(caps.cpus) == 112
    assert dict(caps.uncore) == {
        (0, 0): UncoreCaps(1_200_000, 2_400_000),
        (1, 0): UncoreCaps(1_200_000, 2_400_000),
    }
    assert caps.unavailable == {}


def test_apply_changes_then_puts_back_what_no_class_needs() -> None:
    with host_tree() as tree:
        power = SysfsCPUPower(tree.sysfs_root)
        power.capabilities()
        target = PowerTarget(
            cpus={
                3: CPUTarget(
                    min_khz=2_000_000,
                    max_khz=2_700_000,
                    governor="performance",
                    epp=0,
                    disabled_cstates=frozenset({"C6", "C1E"}),
                )
            },
            uncore={(1, 0): UncoreTarget(2_000_000, 2_400_000)},
        )
        power.apply(target)
        assert read(tree, f"{CPU3}/cpufreq/scaling_min_freq") == "2000000"
        assert read(tree, f"{CPU3}/cpufreq/scaling_max_freq") == "2700000"
        assert read(tree, f"{CPU3}/cpufreq/scaling_governor") == "performance"
        assert read(tree, f"{CPU3}/cpufreq/energy_performance_preference") == "0"
        assert [read(tree, f"{CPU3}/cpuidle/state{i}/disable") for i in range(4)] == [
            "0",
            "0",
            "1",
            "1",
        ]
        assert read(tree, f"{UNCORE1}/min_freq_khz") == "2000000"
        # a smaller target: what it leaves out gets the host's value back
        power.apply(PowerTarget(cpus={3: CPUTarget(max_khz=3_000_000)}))
        assert read(tree, f"{CPU3}/cpufreq/scaling_min_freq") == "1000000"
        assert read(tree, f"{CPU3}/cpufreq/scaling_max_freq") == "3000000"
        assert read(tree, f"{CPU3}/cpufreq/scaling_governor") == "powersave"
        assert read(tree, f"{CPU3}/cpufreq/energy_performance_preference") == (
            "balance_performance"
        )
        assert read(tree, f"{CPU3}/cpuidle/state3/disable") == "0"
        assert read(tree, f"{UNCORE1}/min_freq_khz") == "1200000"
        power.apply(target)
        power.restore()
        assert read(tree, f"{CPU3}/cpufreq/scaling_max_freq") == "4000000"
        assert read(tree, f"{UNCORE1}/min_freq_khz") == "1200000"
        power.apply(NO_TARGET)
        power.restore()  # twice is fine


def test_read_only_and_missing_files_take_their_knob_out() -> None:
    with host_tree(
        read_only=[
            "sys/devices/system/cpu/cpufreq/policy*/scaling_governor",
            "sys/devices/system/cpu/cpu1/cpuidle/state*/disable",
        ],
        uncore=None,
    ) as tree:
        caps = SysfsCPUPower(tree.sysfs_root).capabilities()
    assert Knob.GOVERNOR not in caps.cpus[0].knobs
    assert caps.unavailable[Knob.GOVERNOR] == (
        f"read-only: {tree.sysfs_root}/devices/system/cpu/cpu0/cpufreq/scaling_governor"
    )
    assert Knob.CSTATES in caps.cpus[0].knobs and Knob.CSTATES not in caps.cpus[1].knobs
    assert caps.uncore == {}
    assert caps.unavailable[Knob.UNCORE].startswith("no uncore frequency control: ")
    # a VM without cpufreq (box-16 has no frequencies) and no cpuidle
    with host_tree("box-16") as tree:
        vm = SysfsCPUPower(tree.sysfs_root).capabilities()
    assert vm.cpus[0].knobs == frozenset()
    assert vm.unavailable[Knob.MAX_FREQ] == (
        f"no cpufreq: {tree.sysfs_root}/devices/system/cpu/cpu0/cpufreq is missing"
    )
    assert vm.unavailable[Knob.CSTATES].startswith("no cpuidle: ")


def test_lowering_and_raising_keep_min_below_max_in_order() -> None:
    with host_tree() as tree:
        power = SysfsCPUPower(tree.sysfs_root)
        written: list[str] = []
        real = power._files.set

        def spy(path: str, value: str) -> None:
            written.append(path.rsplit("/", 1)[1])
            real(path, value)

        power._files.set = spy  # type: ignore[method-assign]
        power.apply(PowerTarget(cpus={3: CPUTarget(min_khz=1_500_000, max_khz=2_000_000)}))
        assert written == ["scaling_min_freq", "scaling_max_freq"]  # lowering max: min first
        written.clear()
        power.apply(PowerTarget(cpus={3: CPUTarget(min_khz=3_500_000, max_khz=3_800_000)}))
        assert written == ["scaling_max_freq", "scaling_min_freq"]  # raising: max first


def test_a_killed_daemon_still_restores_what_it_found(tmp_path: Path) -> None:
    journal = str(tmp_path / "cpu-power.json")
    with host_tree() as tree:
        first = SysfsCPUPower(tree.sysfs_root, journal)
        first.apply(PowerTarget(cpus={3: CPUTarget(max_khz=2_000_000, governor="performance")}))
        # killed: the next daemon finds our values on the host and the originals in the journal
        second = SysfsCPUPower(tree.sysfs_root, journal)
        second.apply(NO_TARGET)
        assert read(tree, f"{CPU3}/cpufreq/scaling_max_freq") == "4000000"
        assert read(tree, f"{CPU3}/cpufreq/scaling_governor") == "powersave"
        second.restore()
        assert not Path(journal).exists()
