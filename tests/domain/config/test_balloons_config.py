"""The ``BalloonsPolicy`` spec: defaults and the refusals of the reference (reference-balloons.md
§1.1, §1.2 and §1.4), each with its path and reason."""

from __future__ import annotations

from nrirp.adapters.documents import load_policy_config
from nrirp.domain.config import (
    BUILTIN_DEFAULT,
    BUILTIN_RESERVED,
    BalloonsPolicySpec,
    CPUPriority,
    Operator,
)
from tests.domain.config.test_errors import only, problems

RESERVED = "reservedResources: {cpu: 750m}\n"


def spec_of(text: str) -> BalloonsPolicySpec:
    spec = load_policy_config("balloons", text).spec
    assert isinstance(spec, BalloonsPolicySpec)
    return spec


def test_defaults_are_the_crd_defaults() -> None:
    spec = spec_of(RESERVED + "balloonTypes: [{name: a}]\n")
    assert spec.pin_cpu is True and spec.pin_memory is True
    assert spec.show_containers_in_nrt is False
    assert spec.controllable_interrupts == ("*",)
    (a,) = spec.balloon_types
    assert a.allocator_priority is CPUPriority.HIGH  # the CRD default when omitted
    assert (a.min_cpus, a.max_cpus, a.min_balloons, a.max_balloons) == (0, 0, 0, 0)
    assert a.pin_memory is None and a.hide_hyperthreads is None  # inherit / false
    assert a.component_creation is None and a.share_idle_cpus_in_same is None
    assert a.irq_claim == () and a.irq_mode is None


def test_builtin_types() -> None:
    assert (BUILTIN_RESERVED.min_balloons, BUILTIN_RESERVED.max_balloons) == (1, 1)
    assert BUILTIN_RESERVED.allocator_priority is CPUPriority.LOW
    assert (BUILTIN_DEFAULT.min_balloons, BUILTIN_DEFAULT.max_balloons) == (1, 1)
    assert BUILTIN_DEFAULT.allocator_priority is CPUPriority.LOW


def test_empty_strings_mean_unset() -> None:
    spec = spec_of(RESERVED + "balloonTypes: [{name: a, shareIdleCPUsInSame: '', irqMode: ''}]\n")
    assert spec.balloon_types[0].share_idle_cpus_in_same is None
    assert spec.balloon_types[0].irq_mode is None


def test_irq_fields_take_what_the_reference_takes() -> None:
    spec = spec_of(
        RESERVED + "balloonTypes: [{name: a, irqClaim: ['12', 'nvme*'], irqMode: whatever}]\n"
    )
    assert spec.balloon_types[0].irq_claim == ("12", "nvme*")
    assert spec.balloon_types[0].irq_mode == "whatever"  # no enum in the CRD; does nothing


def test_memory_types_ignore_case_and_may_repeat() -> None:
    spec = spec_of(RESERVED + "balloonTypes: [{name: a, memoryTypes: [dram, DRAM, Pmem]}]\n")
    assert [t.value for t in spec.balloon_types[0].memory_types] == ["DRAM", "DRAM", "PMEM"]


def test_not_exist_is_the_reference_spelling() -> None:
    spec = spec_of(
        RESERVED + "preserve: {matchExpressions: [{key: pod/labels/x, operator: NotExist}]}\n"
    )
    assert spec.preserve is not None
    assert spec.preserve.match_expressions[0].operator is Operator.NOT_EXISTS


def test_available_cpu_is_a_cpuset() -> None:
    assert only("balloons", RESERVED + "availableResources: {cpu: '4'}\n") == (
        "availableResources.cpu",
        "invalid value '4': the balloons policy takes 'cpuset:<cpu list>' or"
        " 'exclude-cpuset:<cpu list>' here, not an amount",
    )
    spec_of(RESERVED + "availableResources: {cpu: 'exclude-cpuset:0-1'}\n")


def test_composite_types_pick_no_cpus() -> None:
    spec = RESERVED + (
        "balloonTypes:\n"
        "  - {name: a}\n"
        "  - name: c\n"
        "    components: [{balloonType: a}]\n"
        "    cpuClass: turbo\n"
        "    preferSpreadOnPhysicalCores: false\n"
        "    allocatorTopologyBalancing: false\n"
        "    preferCloseToDevices: [/sys/devices/pci0000:00]\n"
        "    preferIsolCpus: true\n"
        "    preferCoreType: efficient\n"
        "  - {name: d, componentCreation: all}\n"
        "  - {name: e, components: [{balloonType: a}], preferIsolCpus: false}\n"
    )
    why = "not allowed: a composite balloon type (with components) picks no CPUs of its own"
    assert problems("balloons", spec) == [
        ("balloonTypes[1].cpuClass", why),
        ("balloonTypes[1].preferSpreadOnPhysicalCores", why),  # set at all, even false
        ("balloonTypes[1].allocatorTopologyBalancing", why),
        ("balloonTypes[1].preferCloseToDevices", why),
        ("balloonTypes[1].preferIsolCpus", why),
        ("balloonTypes[1].preferCoreType", why),
        (
            "balloonTypes[2].componentCreation",
            "invalid value 'all': only composite balloon types (with components) create components",
        ),
    ]


def test_composite_reserved_type_with_a_reserved_cpuset() -> None:
    spec = (
        "reservedResources: {cpu: 'cpuset:0'}\n"
        "balloonTypes: [{name: a}, {name: reserved, components: [{balloonType: a}]}]\n"
    )
    assert only("balloons", spec) == (
        "balloonTypes[1].components",
        "not allowed: with a reserved cpuset the reserved balloon type prefers the reserved"
        " CPUs, which a composite balloon type cannot",
    )


def test_reserved_amount_and_the_reserved_type() -> None:
    spec = (
        "reservedResources: {cpu: 1500m}\n"
        "balloonTypes: [{name: reserved, maxCPUs: 1}, {name: x, minCPUs: 1}]\n"
    )
    assert only("balloons", spec) == (
        "balloonTypes[0].maxCPUs",
        "invalid value 1: below the 2 CPUs reserved by reservedResources.cpu (1500m)",
    )
    spec = "reservedResources: {cpu: 1500m}\nballoonTypes: [{name: reserved, minCPUs: 3}]\n"
    assert only("balloons", spec) == (
        "balloonTypes[0].minCPUs",
        "invalid value 3: reservedResources.cpu (1500m) makes the reserved balloon 2 CPUs;"
        " leave minCPUs out or set it to 2",
    )
    # a matching minCPUs is fine, and so is maxCPUs when minCPUs is given (checked only at 0)
    spec_of("reservedResources: {cpu: 1500m}\nballoonTypes: [{name: reserved, minCPUs: 2}]\n")
    spec_of(
        "reservedResources: {cpu: 1500m}\n"
        "balloonTypes: [{name: reserved, minCPUs: 2, maxCPUs: 3}]\n"
    )
    # with a cpuset, the reserved type's sizes are free
    spec_of("reservedResources: {cpu: 'cpuset:0-3'}\nballoonTypes: [{name: reserved, minCPUs: 1}]")


def test_load_and_scheduling_classes_need_names_but_may_repeat() -> None:
    spec = RESERVED + (
        "loadClasses: [{name: '', level: core}, {name: x, level: core},"
        " {name: x, level: l2cache}]\n"
        "schedulingClasses: [{name: ''}]\n"
    )
    assert problems("balloons", spec) == [
        ("loadClasses[0].name", "invalid value '': a name is required"),
        ("schedulingClasses[0].name", "invalid value '': a name is required"),
    ]


def test_pct_rules() -> None:
    spec = RESERVED + (
        "cpuClasses:\n"
        "  - {name: both, pctPriority: high, sstClosID: 2}\n"
        "  - {name: freq, pctMinFreq: 1000, pctMaxFreq: 2000}\n"
        "  - {name: pub, publishExtendedResource: true}\n"
        "  - {name: closed, sstClosID: 1}\n"
    )
    assert problems("balloons", spec) == [
        (
            "cpuClasses[0].sstClosID",
            "not allowed together with pctPriority: a class is either managed by its priority"
            " or associated with a CLOS",
        ),
        ("cpuClasses[1].pctMinFreq", "not allowed without pctPriority"),
        ("cpuClasses[1].pctMaxFreq", "not allowed without pctPriority"),
        (
            "cpuClasses[2].publishExtendedResource",
            "not allowed without pctPriority (only PCT classes are published)",
        ),
        (
            "cpuClasses[0].sstClosID",
            "not allowed: cpuClasses[0] is managed by pctPriority; managed and CLOS-associated"
            " classes cannot be mixed",
        ),
    ]
    spec_of(RESERVED + "cpuClasses: [{name: hi, pctPriority: high, publishExtendedResource: true}]")


def test_at_most_one_managed_high_and_one_managed_low_class() -> None:
    spec = RESERVED + (
        "cpuClasses:\n"
        "  - {name: hi, pctPriority: high}\n"
        "  - {name: lo, pctPriority: low}\n"
        "  - {name: hi2, pctPriority: high}\n"
        "  - {name: lo2, pctPriority: low}\n"
        "  - {name: hi3, pctPriority: high}\n"
    )
    assert problems("balloons", spec) == [
        (
            "cpuClasses[2].pctPriority",
            "invalid value 'high': cpuClasses[0] is already the managed high-priority class"
            " (one managed class of each priority at most)",
        ),
        (
            "cpuClasses[3].pctPriority",
            "invalid value 'low': cpuClasses[1] is already the managed low-priority class"
            " (one managed class of each priority at most)",
        ),
        (
            "cpuClasses[4].pctPriority",
            "invalid value 'high': cpuClasses[0] is already the managed high-priority class"
            " (one managed class of each priority at most)",
        ),
    ]
    spec_of(RESERVED + "cpuClasses: [{name: hi, pctPriority: high}, {name: lo, pctPriority: low}]")


def test_duplicate_and_empty_type_names() -> None:
    spec = RESERVED + "balloonTypes: [{name: a}, {name: a}, {name: ''}]\n"
    assert problems("balloons", spec) == [  # each problem once
        ("balloonTypes[1].name", "invalid value 'a': duplicate name (also used by item 0)"),
        ("balloonTypes[2].name", "invalid value '': a name is required"),
    ]


def test_an_unknown_field_close_to_a_known_one_names_it() -> None:
    spec = RESERVED + "idleCpuClass: x\nballoonTypes: [{name: a, minCpus: 2, nope: 1}]\n"
    assert problems("balloons", spec) == [
        ("idleCpuClass", "unknown field (did you mean idleCPUClass?)"),
        ("balloonTypes[0].minCpus", "unknown field (did you mean minCPUs?)"),
        ("balloonTypes[0].nope", "unknown field"),
    ]
