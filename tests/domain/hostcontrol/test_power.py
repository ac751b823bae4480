"""CPU classes planned onto CPUs and dies: frequencies, turbo priority, shared domains."""

from __future__ import annotations

from types import MappingProxyType

import attrs
from hypothesis import given
from hypothesis import strategies as st

from nrirp.domain.config import ControlConfig
from nrirp.domain.config.control import CPUControlClass, CPUControlConfig
from nrirp.domain.config.cpu_class import CPUClass, Frequency
from nrirp.domain.config.enums import FrequencyKeyword, TurboDomain
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.hostcontrol.classes import ClassSettings, resolve_classes
from nrirp.domain.hostcontrol.power import (
    ALL_KNOBS,
    CPUCaps,
    Knob,
    PowerCaps,
    UncoreCaps,
    UncoreTarget,
    plan_power,
)
from nrirp.domain.hostcontrol.support import class_support, power_notices
from nrirp.testing import fake_machine

BOX = fake_machine("box-16")  # 2 packages x 2 nodes x 2 cores x 2 threads, one die each
MIN, BASE, TURBO = 800_000, 2_000_000, 4_000_000


def caps(**overrides: object) -> PowerCaps:
    cpu = CPUCaps(
        min_khz=MIN,
        max_khz=TURBO,
        base_khz=BASE,
        governors=("performance", "powersave"),
        cstates=("POLL", "C1", "C6"),
        knobs=ALL_KNOBS,
    )
    defaults: dict[str, object] = {
        "cpus": {i: cpu for i in BOX.online},
        "uncore": {(0, 0): UncoreCaps(800_000, 2_400_000), (1, 0): UncoreCaps(800_000, 2_400_000)},
    }
    defaults.update(overrides)
    return PowerCaps(**defaults)  # type: ignore[arg-type]


def khz(value: int) -> Frequency:
    return Frequency(khz=value)


def word(value: str) -> Frequency:
    return Frequency(keyword=FrequencyKeyword(value))


def test_a_class_resolves_min_base_turbo_and_clamps_khz() -> None:
    classes = {
        "slow": ClassSettings("slow", min_freq=word("min"), max_freq=word("base")),
        "fast": ClassSettings("fast", min_freq=khz(100), max_freq=khz(9_000_000), epp=0),
    }
    target = plan_power(
        {"slow": CPUSet.parse("0-1"), "fast": CPUSet.parse("2-3")}, classes, caps(), BOX
    )
    assert (target.cpus[0].min_khz, target.cpus[0].max_khz) == (MIN, BASE)
    assert (target.cpus[2].min_khz, target.cpus[2].max_khz, target.cpus[2].epp) == (
        MIN,
        TURBO,
        0,
    )
    assert 4 not in target.cpus  # no class: the host's own values
    assert target.classes == {0: "slow", 1: "slow", 2: "fast", 3: "fast"}


def test_turbo_priority_caps_lower_classes_at_base_within_a_package() -> None:
    classes = {
        "hi": ClassSettings("hi", max_freq=word("turbo"), turbo_priority=10),
        "lo": ClassSettings("lo", turbo_priority=1),
        "plain": ClassSettings("plain", governor="performance"),
    }
    assignment = {
        "hi": CPUSet.parse("0-1"),
        "lo": CPUSet.parse("2-3"),  # package 0 with hi: capped
        "plain": CPUSet.parse("8-9"),  # package 1, alone: keeps turbo
    }
    target = plan_power(assignment, classes, caps(), BOX)
    assert target.cpus[0].max_khz == TURBO
    assert target.cpus[2].max_khz == BASE
    assert target.cpus[8].max_khz is None
    # with one turbo domain for the system, package 1 is capped too when it runs "lo"
    assignment = {"hi": CPUSet.parse("0"), "lo": CPUSet.parse("8")}
    system = plan_power(assignment, classes, caps(), BOX, TurboDomain.SYSTEM)
    package = plan_power(assignment, classes, caps(), BOX, TurboDomain.PACKAGE)
    assert system.cpus[8].max_khz == BASE
    assert 8 not in package.cpus  # "lo" alone in package 1 keeps turbo


def test_uncore_takes_the_highest_value_among_active_classes_per_die() -> None:
    classes = {
        "a": ClassSettings("a", uncore_min_khz=1_000_000, uncore_max_khz=1_500_000),
        "b": ClassSettings("b", uncore_min_khz=1_200_000),
        "c": ClassSettings("c", uncore_max_khz=9_000_000),
    }
    target = plan_power(
        {"a": CPUSet.parse("0"), "b": CPUSet.parse("1"), "c": CPUSet.parse("8")},
        classes,
        caps(),
        BOX,
    )
    assert target.uncore[(0, 0)] == UncoreTarget(1_200_000, 1_500_000)
    assert target.uncore[(1, 0)] == UncoreTarget(None, 2_400_000)  # clamped to the die's range


def test_cpus_sharing_a_cpufreq_policy_take_the_highest_limits() -> None:
    shared = {i: CPUCaps(MIN, TURBO, BASE, knobs=ALL_KNOBS) for i in BOX.online}
    policies = {i: i - i % 2 for i in BOX.online}
    classes = {
        "low": ClassSettings("low", min_freq=khz(1_000_000), max_freq=khz(2_000_000), epp=200),
        "high": ClassSettings("high", min_freq=khz(1_500_000), max_freq=khz(3_000_000), epp=50),
    }
    target = plan_power(
        {"low": CPUSet.of(0), "high": CPUSet.of(1)},
        classes,
        caps(cpus=shared, policies=policies),
        BOX,
    )
    assert target.cpus[0] == target.cpus[1]
    assert (target.cpus[0].min_khz, target.cpus[0].max_khz, target.cpus[0].epp) == (
        1_500_000,
        3_000_000,
        50,
    )


def test_cstates_governor_and_missing_knobs() -> None:
    classes = {
        "rt": ClassSettings(
            "rt", disabled_cstates=("C6", "C9"), governor="ondemand", max_freq=khz(3_000_000)
        )
    }
    limited = {
        i: CPUCaps(
            MIN,
            TURBO,
            BASE,
            governors=("performance",),
            cstates=("C1", "C6"),
            knobs=frozenset({Knob.CSTATES, Knob.GOVERNOR}),
        )
        for i in BOX.online
    }
    target = plan_power({"rt": CPUSet.of(0)}, classes, caps(cpus=limited), BOX)
    cpu = target.cpus[0]
    assert cpu.disabled_cstates == frozenset({"C6"})  # the host has no C9
    assert cpu.governor is None  # ondemand not available
    assert cpu.max_khz is None  # scaling_max_freq cannot be written


def test_notices_name_what_cannot_be_applied_and_why() -> None:
    classes = {
        "rt": ClassSettings("rt", max_freq=word("base"), disabled_cstates=("C9",), pct=True),
        "ok": ClassSettings("ok", min_freq=khz(1_000_000)),
        "uncore": ClassSettings("uncore", uncore_max_khz=2_000_000),
    }
    no_base = {i: CPUCaps(MIN, TURBO, None, cstates=("C1",), knobs=ALL_KNOBS) for i in BOX.online}
    lines = power_notices(
        classes,
        caps(cpus=no_base, unavailable={Knob.UNCORE: "no uncore frequency control: x missing"}),
        BOX.online,
        has_uncore=False,
    )
    assert lines == [
        "CPU class rt cannot be applied in full: maxFreq: base frequency unknown; "
        "disabledCstates: no C-state C9 (C1); "
        "pctPriority/sstClosID/pctMinFreq/pctMaxFreq: no adapter drives Intel SST",
        "CPU class uncore cannot be applied in full: uncoreMinFreq/uncoreMaxFreq: "
        "no uncore frequency control: x missing",
    ]
    # a VM without cpufreq: every knob is gone, and the reason is the adapter's
    vm = PowerCaps(
        cpus={i: CPUCaps() for i in BOX.online},
        unavailable={Knob.MIN_FREQ: "no cpufreq: /sys/devices/system/cpu/cpu0/cpufreq is missing"},
    )
    assert power_notices({"ok": classes["ok"]}, vm, BOX.online, False) == [
        "CPU class ok cannot be applied in full: minFreq: "
        "no cpufreq: /sys/devices/system/cpu/cpu0/cpufreq is missing"
    ]
    partly = dict(caps().cpus)
    partly[3] = CPUCaps(MIN, TURBO, BASE, knobs=frozenset())
    assert class_support(classes["ok"], caps(cpus=partly), BOX.online) == BOX.online - CPUSet.of(3)


def test_frequencies_outside_the_host_s_range_are_said_to_be_clamped() -> None:
    """A kHz value beyond what the CPUs (or the dies' uncore) can run at is clamped when
    applied, and the configuration's notices say so, naming the limit and where."""
    classes = {
        "fast": ClassSettings("fast", min_freq=khz(5_000_000), max_freq=word("turbo")),
        "slow": ClassSettings("slow", max_freq=khz(500_000), uncore_max_khz=3_000_000),
        "fine": ClassSettings("fine", min_freq=khz(MIN), max_freq=khz(BASE)),
    }
    slower = dict(caps().cpus)
    for cpu in (4, 5):
        slower[cpu] = attrs.evolve(slower[cpu], max_khz=3_000_000)
    lines = power_notices(classes, caps(cpus=slower), BOX.online, has_uncore=True)
    assert lines == [
        "CPU class fast cannot be applied in full: "
        "minFreq on CPUs 4-5: 5000000 kHz is above the highest frequency (3000000 kHz): "
        "clamped to it; "
        "minFreq on CPUs 0-3,6-15: 5000000 kHz is above the highest frequency (4000000 kHz): "
        "clamped to it",
        "CPU class slow cannot be applied in full: "
        "maxFreq: 500000 kHz is below the lowest frequency (800000 kHz): clamped to it; "
        "uncoreMaxFreq on package 0 die 0: 3000000 kHz is above the highest uncore frequency "
        "(2400000 kHz): clamped to it; "
        "uncoreMaxFreq on package 1 die 0: 3000000 kHz is above the highest uncore frequency "
        "(2400000 kHz): clamped to it",
    ]
    target = plan_power({"fast": CPUSet.of(4, 0)}, classes, caps(cpus=slower), BOX)
    assert (target.cpus[4].min_khz, target.cpus[0].min_khz) == (3_000_000, TURBO)


def test_legacy_control_classes_are_added_under_unused_names() -> None:
    control = ControlConfig(
        cpu=CPUControlConfig(
            classes=MappingProxyType(
                {"a": CPUControlClass(min_freq=1), "legacy": CPUControlClass(max_freq=2_000_000)}
            )
        )
    )
    resolved = resolve_classes((CPUClass(name="a", max_freq=khz(5)),), control)
    assert list(resolved) == ["a", "legacy"]
    assert resolved["a"].max_freq == khz(5) and resolved["a"].min_freq is None
    assert resolved["legacy"].max_freq == khz(2_000_000)


frequencies = st.one_of(
    st.none(),
    st.integers(0, 10_000_000).map(khz),
    st.sampled_from(["min", "base", "turbo"]).map(word),
)


@given(
    st.lists(
        st.tuples(frequencies, frequencies, st.none() | st.integers(0, 20)), min_size=1, max_size=4
    ),
    st.lists(st.integers(0, 3), min_size=16, max_size=16),
)
def test_limits_stay_in_range_and_ordered(
    specs: list[tuple[Frequency | None, Frequency | None, int | None]], picks: list[int]
) -> None:
    classes = {
        f"c{i}": ClassSettings(f"c{i}", min_freq=lo, max_freq=hi, turbo_priority=prio)
        for i, (lo, hi, prio) in enumerate(specs)
    }
    assignment: dict[str, CPUSet] = {}
    for cpu, pick in enumerate(picks):
        name = f"c{pick % len(specs)}"
        assignment[name] = assignment.get(name, CPUSet()) | CPUSet.of(cpu)
    target = plan_power(assignment, classes, caps(), BOX)
    for cpu_target in target.cpus.values():
        for value in (cpu_target.min_khz, cpu_target.max_khz):
            assert value is None or MIN <= value <= TURBO
        if cpu_target.min_khz is not None and cpu_target.max_khz is not None:
            assert cpu_target.min_khz <= cpu_target.max_khz
