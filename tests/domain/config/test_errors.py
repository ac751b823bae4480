"""Invalid configs: one ConfigError naming every problem's path and bad value."""

from __future__ import annotations

from typing import Any

import pytest

from nrirp.adapters.documents import load_policy_config
from nrirp.domain.config import ConfigError, ConfigProblem
from tests.domain.config.documents import BALLOONS_SPEC, as_custom_resource

RESERVED = "reservedResources: {cpu: 750m}\n"


def problems(policy: str, source: str | dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as info:
        load_policy_config(policy, source)
    error = info.value
    assert isinstance(error, ValueError)
    for problem in error.problems:
        assert isinstance(problem, ConfigProblem)
        assert f"{problem.path}: {problem.message}" in str(error)
    return [(p.path, p.message) for p in error.problems]


def only(policy: str, source: str | dict[str, Any]) -> tuple[str, str]:
    found = problems(policy, source)
    assert len(found) == 1, found
    return found[0]


# ------------------------------------------------------------------ unknown keys and types
def test_unknown_key_is_named_with_its_full_path_in_a_custom_resource() -> None:
    spec = RESERVED + "balloonTypes:\n  - name: a\n    foo: 1\n"
    document = as_custom_resource("BalloonsPolicy", spec)
    assert only("balloons", document) == ("spec.balloonTypes[0].foo", "unknown field")


def test_paths_in_a_bare_spec_start_at_the_spec() -> None:
    spec = RESERVED + "balloonTypes:\n  - name: a\n    foo: 1\n"
    assert only("balloons", spec) == ("balloonTypes[0].foo", "unknown field")


@pytest.mark.parametrize(
    ("snippet", "path", "message"),
    [
        ("pinCPU: 'true'", "pinCPU", "invalid value 'true': expected true or false"),
        ("pinCPU: 1", "pinCPU", "invalid value 1: expected true or false"),
        (
            "reservedPoolNamespaces: kube-system",
            "reservedPoolNamespaces",
            "invalid value 'kube-system': expected a list",
        ),
        (
            "reservedPoolNamespaces: [ok, 7]",
            "reservedPoolNamespaces[1]",
            "invalid value 7: expected a string",
        ),
        ("availableResources: [1]", "availableResources", "invalid value [1]: expected a mapping"),
        (
            "namespaceSchedulingClasses: [a]",
            "namespaceSchedulingClasses",
            "invalid value ['a']: expected a mapping".replace("['a']", '["a"]'),
        ),
        ("log: {debug: '*'}", "log.debug", "invalid value '*': expected a list"),
        (
            "agent: {podResourceAPI: yes please}",
            "agent.podResourceAPI",
            "invalid value 'yes please': expected true or false",
        ),
    ],
)
def test_wrong_types(snippet: str, path: str, message: str) -> None:
    assert only("topology-aware", RESERVED + snippet + "\n") == (path, message)


def test_integers_are_not_taken_from_strings_or_floats() -> None:
    spec = RESERVED + "balloonTypes:\n  - {name: a, minCPUs: '2', maxCPUs: 2.5}\n"
    assert problems("balloons", spec) == [
        ("balloonTypes[0].minCPUs", "invalid value '2': expected an integer"),
        ("balloonTypes[0].maxCPUs", "invalid value 2.5: expected an integer"),
    ]


# ------------------------------------------------------------------ enums
@pytest.mark.parametrize(
    ("policy", "snippet", "path", "value", "choices"),
    [
        (
            "topology-aware",
            "unlimitedBurstable: l2cache",
            "unlimitedBurstable",
            "l2cache",
            "'system', 'package', 'die', 'numa', 'l3cache'",
        ),
        (
            "topology-aware",
            "defaultCPUPriority: urgent",
            "defaultCPUPriority",
            "urgent",
            "'high', 'normal', 'low', 'none'",
        ),
        (
            "balloons",
            "balloonTypes: [{name: a, allocatorPriority: High}]",
            "balloonTypes[0].allocatorPriority",
            "High",
            "'high', 'normal', 'low', 'none'",
        ),
        (
            "balloons",
            "balloonTypes: [{name: a, shareIdleCPUsInSame: rack}]",
            "balloonTypes[0].shareIdleCPUsInSame",
            "rack",
            "'system', 'package', 'die', 'numa', 'l2cache', 'core', 'thread'",
        ),
        (
            "balloons",
            "balloonTypes: [{name: a, preferCoreType: big}]",
            "balloonTypes[0].preferCoreType",
            "big",
            "'efficient', 'performance'",
        ),
        (
            "balloons",
            "balloonTypes: [{name: a, componentCreation: some}]",
            "balloonTypes[0].componentCreation",
            "some",
            "'all', 'balance-balloons'",
        ),
        (
            "balloons",
            "loadClasses: [{name: x, level: numa}]",
            "loadClasses[0].level",
            "numa",
            "'l2cache', 'core'",
        ),
        (
            "balloons",
            "balloonTypes: [{name: a, matchExpressions: [{key: k, operator: Like}]}]",
            "balloonTypes[0].matchExpressions[0].operator",
            "Like",
            "'Equals', 'NotEqual', 'In', 'NotIn', 'Exists', 'NotExists', 'AlwaysTrue', "
            "'Matches', 'MatchesNot', 'MatchesAny', 'MatchesNone'",
        ),
        (
            "balloons",
            "instrumentation: {metricsExporter: statsd}",
            "instrumentation.metricsExporter",
            "statsd",
            "'prometheus', 'otlp-http', 'otlp-grpc'",
        ),
        (
            "balloons",
            "balloonTypes: [{name: a, memoryTypes: [DRAM, NVRAM]}]",
            "balloonTypes[0].memoryTypes[1]",
            "NVRAM",
            "'DRAM', 'PMEM', 'HBM'",
        ),
    ],
)
def test_bad_enum_values(policy: str, snippet: str, path: str, value: str, choices: str) -> None:
    assert only(policy, RESERVED + snippet + "\n") == (
        path,
        f"invalid value '{value}': expected one of {choices}",
    )


def test_bad_mapping_key() -> None:
    spec = RESERVED + "schedulingClasses: [{name: s}]\npodQoSSchedulingClasses: {Gold: s}\n"
    assert only("topology-aware", spec) == (
        "podQoSSchedulingClasses.Gold",
        "invalid key 'Gold': expected one of 'Guaranteed', 'Burstable', 'BestEffort'",
    )


# ------------------------------------------------------------------ quantities and cpusets
@pytest.mark.parametrize(
    ("resources", "path", "value"),
    [
        ("reservedResources: {cpu: lots}", "reservedResources.cpu", "'lots'"),
        (
            "reservedResources: {cpu: 1}\navailableResources: {memory: 12XB}",
            "availableResources.memory",
            "'12XB'",
        ),
        (
            "reservedResources: {cpu: 1}\navailableResources: {memory: true}",
            "availableResources.memory",
            "true",
        ),
    ],
)
def test_bad_quantities(resources: str, path: str, value: str) -> None:
    where, message = only("topology-aware", resources + "\n")
    assert where == path
    assert message.startswith(f"invalid value {value}: expected ")


def test_negative_and_zero_quantities() -> None:
    assert only("topology-aware", "reservedResources: {cpu: 1, memory: -1Gi}\n") == (
        "reservedResources.memory",
        "invalid value '-1Gi': must not be negative",
    )
    assert only("topology-aware", "reservedResources: {cpu: '0'}\n") == (
        "reservedResources.cpu",
        "invalid value '0': must be positive",
    )
    assert only("topology-aware", "reservedResources: {cpu: -500m}\n") == (
        "reservedResources.cpu",
        "invalid value '-500m': must not be negative",
    )


@pytest.mark.parametrize(
    ("cpu", "detail"),
    [
        ("cpuset:3-1", "reversed range '3-1'"),
        ("cpuset:0-x", "bad element '0-x'"),
        ("exclude-cpuset:1,,2", "empty element"),
    ],
)
def test_bad_cpusets(cpu: str, detail: str) -> None:
    path, message = only("balloons", f"reservedResources: {{cpu: '{cpu}'}}\n")
    assert path == "reservedResources.cpu"
    assert message.startswith(f"invalid value '{cpu}': expected a cpu list after")
    assert detail in message


def test_empty_cpuset_is_rejected() -> None:
    assert only("balloons", "reservedResources: {cpu: 'cpuset:'}\n") == (
        "reservedResources.cpu",
        "invalid value 'cpuset:': the cpuset is empty",
    )


# ------------------------------------------------------------------ required fields
def test_reserved_resources_are_required() -> None:
    for policy in ("topology-aware", "balloons"):
        assert only(policy, "") == ("reservedResources", "required field missing")
        assert only(policy, "reservedResources: {memory: 1Gi}") == (
            "reservedResources.cpu",
            "required field missing",
        )
    load_policy_config("template", "")  # template does not need them


def test_required_list_item_fields() -> None:
    spec = RESERVED + "balloonTypes: [{minCPUs: 1}]\nloadClasses: [{name: x}]\n"
    assert problems("balloons", spec) == [
        ("balloonTypes[0].name", "required field missing"),
        ("loadClasses[0].level", "required field missing"),
    ]


# ------------------------------------------------------------------ cross-field rules
def test_balloon_sizes() -> None:
    spec = RESERVED + (
        "balloonTypes:\n"
        "  - {name: a, minCPUs: 8, maxCPUs: 4}\n"
        "  - {name: b, minCPUs: 8, maxCPUs: 0}\n"
        "  - {name: c, minCPUs: 8, maxCPUs: -1}\n"
        "  - {name: d, maxCPUs: -2, minCPUs: -1}\n"
        "  - {name: e, minBalloons: 3, maxBalloons: 2}\n"
        "  - {name: f, maxCPUs: -1}\n"
    )
    # as the reference: maxCPUs -1 is no "forbid" value, minCPUs 0 > maxCPUs -1 is refused
    assert problems("balloons", spec) == [
        ("balloonTypes[0].minCPUs", "invalid value 8: exceeds maxCPUs (4)"),
        (
            "balloonTypes[2].maxCPUs",
            "invalid value -1: minCPUs (8) > maxCPUs (-1); maxCPUs is 0 (no limit) or at least"
            " minCPUs",
        ),
        ("balloonTypes[3].minCPUs", "invalid value -1: must be at least 0"),
        (
            "balloonTypes[3].maxCPUs",
            "invalid value -2: minCPUs (-1) > maxCPUs (-2); maxCPUs is 0 (no limit) or at least"
            " minCPUs",
        ),
        ("balloonTypes[4].minBalloons", "invalid value 3: exceeds maxBalloons (2)"),
        (
            "balloonTypes[5].maxCPUs",
            "invalid value -1: minCPUs (0) > maxCPUs (-1); maxCPUs is 0 (no limit) or at least"
            " minCPUs",
        ),
    ]


def test_balloon_type_names_and_references() -> None:
    spec = RESERVED + (
        "loadClasses: [{name: avx, level: core}]\n"
        "schedulingClasses: [{name: rt, policy: fifo, priority: 1}]\n"
        "balloonTypes:\n"
        "  - {name: a, loads: [avx, sse], schedulingClass: nope}\n"
        "  - {name: a}\n"
        "  - {name: c, components: [{balloonType: a}, {balloonType: ghost}]}\n"
        "  - {name: self, components: [{balloonType: self}]}\n"
        "  - {name: x, components: [{balloonType: y}]}\n"
        "  - {name: y, components: [{balloonType: x}]}\n"
    )
    assert problems("balloons", spec) == [
        (
            "balloonTypes[3].components[0].balloonType",
            "invalid value 'self': a balloon type cannot contain itself",
        ),
        ("balloonTypes[1].name", "invalid value 'a': duplicate name (also used by item 0)"),
        ("balloonTypes[0].loads[1]", "invalid value 'sse': unknown load class ('avx')"),
        (
            "balloonTypes[0].schedulingClass",
            "invalid value 'nope': unknown scheduling class ('rt')",
        ),
        (
            "balloonTypes[2].components[1].balloonType",
            "invalid value 'ghost': unknown balloon type ('a', 'c', 'default', 'reserved', 'self',"
            " 'x', 'y')",
        ),
        ("balloonTypes[4].components", "invalid value 'x': components form a cycle"),
        ("balloonTypes[5].components", "invalid value 'y': components form a cycle"),
    ]


def test_cpu_class_references_see_both_class_lists() -> None:
    base = RESERVED + (
        "cpuClasses: [{name: turbo}]\ncontrol: {cpu: {classes: {lowpower: {minFreq: 800000}}}}\n"
    )
    ok = base + "idleCPUClass: lowpower\nballoonTypes: [{name: a, cpuClass: turbo}]\n"
    config = load_policy_config("balloons", ok)
    assert config.spec.undefined_cpu_classes(config.control) == []
    # the balloons policy only warns about undefined CPU classes, as the reference does
    bad = base + "idleCPUClass: eco\nballoonTypes: [{name: a, cpuClass: fast}]\n"
    config = load_policy_config("balloons", bad)
    assert config.spec.undefined_cpu_classes(config.control) == [
        "idleCPUClass: 'eco'",
        "balloonTypes[0].cpuClass: 'fast'",
    ]
    assert only("topology-aware", RESERVED + "sharedPoolCPUClass: eco\n") == (
        "sharedPoolCPUClass",
        "invalid value 'eco': unknown CPU class (none are defined)",
    )


def test_scheduling_class_references_and_ranges() -> None:
    spec = RESERVED + (
        "schedulingClasses:\n"
        "  - {name: rt, policy: fifo, priority: 0}\n"
        "  - {name: nice, nice: 20, ioPriority: 8, priority: 100}\n"
        "  - {name: dl, policy: deadline, runtime: 10, deadline: 5, period: 4}\n"
        "namespaceSchedulingClasses: {batch: bulk}\n"
        "podQoSSchedulingClasses: {Guaranteed: rt}\n"
    )
    assert problems("topology-aware", spec) == [
        ("schedulingClasses[0].priority", "invalid value 0: policy fifo needs a priority of 1-99"),
        ("schedulingClasses[1].priority", "invalid value 100: must be between 0 and 99"),
        ("schedulingClasses[1].nice", "invalid value 20: must be between -20 and 19"),
        ("schedulingClasses[1].ioPriority", "invalid value 8: must be between 0 and 7"),
        ("schedulingClasses[2].runtime", "invalid value 10: exceeds deadline (5)"),
        ("schedulingClasses[2].deadline", "invalid value 5: exceeds period (4)"),
        (
            "namespaceSchedulingClasses.batch",
            "invalid value 'bulk': unknown scheduling class ('dl', 'nice', 'rt')",
        ),
    ]


def test_expression_values_match_the_operator() -> None:
    spec = RESERVED + (
        "preserve:\n"
        "  matchExpressions:\n"
        "    - {key: name, operator: Equals, values: [a, b]}\n"
        "    - {key: name, operator: Exists, values: [a]}\n"
        "    - {operator: In, values: [a]}\n"
        "    - {operator: AlwaysTrue}\n"
    )
    assert problems("balloons", spec) == [
        ("preserve.matchExpressions[0].values", "operator Equals takes exactly one value, got 2"),
        ("preserve.matchExpressions[1].values", "operator Exists takes no values, got 1"),
        ("preserve.matchExpressions[2].key", "invalid value '': a key is required"),
    ]


def test_group_by_syntax_and_devices() -> None:
    spec = RESERVED + (
        "balloonTypes:\n"
        "  - name: a\n"
        "    groupBy: ${pod/labels/app\n"
        "    preferCloseToDevices: [eth0, 'podresourceapi:', /sys/class/net/eth0]\n"
    )
    # device references are not checked (the reference resolves them when it starts)
    assert problems("balloons", spec) == [
        (
            "balloonTypes[0].groupBy",
            "invalid value '${pod/labels/app': every '${' needs a closing '}'",
        ),
    ]


# ------------------------------------------------------------------ common blocks
def test_control_block_errors() -> None:
    spec = RESERVED + (
        "control:\n"
        "  cpu:\n"
        "    classes:\n"
        "      slow: {minFreq: 2000, maxFreq: 1000, energyPerformancePreference: 300}\n"
        "  rdt:\n"
        "    partitions:\n"
        "      p1:\n"
        "        l3Allocation: 120%\n"
        "        mbAllocation: [50%, 10Gbps]\n"
        "        classes: {gold: {l2Allocation: {'x-y': 50%}}}\n"
        "      p2:\n"
        "        classes: {gold: {}}\n"
        "  blockio:\n"
        "    classes:\n"
        "      slow:\n"
        "        - {Devices: [sda], Weight: 5000}\n"
        "        - {Devices: [/dev/sda], devices: [/dev/sdb]}\n"
    )
    found = problems("topology-aware", spec)
    assert found == [
        (
            "control.cpu.classes.slow.energyPerformancePreference",
            "invalid value 300: must be between 0 and 255",
        ),
        ("control.cpu.classes.slow.minFreq", "invalid value 2000: exceeds maxFreq (1000)"),
        (
            "control.rdt.partitions.p1.l3Allocation",
            "invalid value '120%': a percentage must be at most 100%",
        ),
        (
            "control.rdt.partitions.p1.mbAllocation",
            "invalid value '10Gbps': expected a percentage ('50%') or a rate ('1000MBps')",
        ),
        (
            "control.rdt.partitions.p1.classes.gold.l2Allocation",
            "invalid key 'x-y': expected 'all' or a list of cache ids such as '0-3'",
        ),
        (
            "control.blockio.classes.slow[0].Weight",
            "invalid value 5000: a weight must be between 10 and 1000",
        ),
        (
            "control.blockio.classes.slow[1].devices",
            "conflicts with 'Devices': give only one of them",
        ),
    ]


def test_rdt_class_names_are_unique_across_partitions() -> None:
    spec = RESERVED + (
        "control:\n  rdt:\n    partitions:\n"
        "      p1: {classes: {gold: {}}}\n      p2: {classes: {gold: {}}}\n"
    )
    assert only("topology-aware", spec) == (
        "control.rdt.partitions.p2.classes.gold",
        "duplicate class name 'gold' (also in partition 'p1')",
    )


def test_blockio_device_paths_are_absolute() -> None:
    spec = RESERVED + "control: {blockio: {classes: {c: [{Devices: [sda]}]}}}\n"
    assert only("topology-aware", spec) == (
        "control.blockio.classes.c[0].Devices[0]",
        "invalid value 'sda': expected a device path",
    )


def test_instrumentation_and_log_errors() -> None:
    spec = RESERVED + (
        "instrumentation:\n"
        "  reportPeriod: 30 seconds\n"
        "  logExportPeriod: -5s\n"
        "  httpEndpoint: localhost\n"
        "  samplingRatePerMillion: 2000000\n"
        "log:\n"
        "  klog: {vmodule: 'policy=x', stderrthreshold: LOUD, log_backtrace_at: main.go}\n"
    )
    assert problems("topology-aware", spec) == [
        (
            "instrumentation.reportPeriod",
            "invalid value '30 seconds': expected a duration such as '30s', '1m30s' or '500ms'",
        ),
        (
            "log.klog.stderrthreshold",
            "invalid value 'LOUD': expected one of 'INFO', 'WARNING', 'ERROR', 'FATAL'",
        ),
    ]
    fixed = spec.replace("30 seconds", "1m").replace("LOUD", "2")
    assert problems("topology-aware", fixed) == [
        ("instrumentation.httpEndpoint", "invalid value 'localhost': expected '[host]:port'"),
        ("instrumentation.logExportPeriod", "invalid value '-5s': must be positive"),
        (
            "instrumentation.samplingRatePerMillion",
            "invalid value 2000000: must be between 0 and 1000000",
        ),
        ("log.klog.vmodule", "invalid value 'policy=x': expected 'pattern=N' items joined by ','"),
        ("log.klog.log_backtrace_at", "invalid value 'main.go': expected 'file.go:line'"),
    ]


# ------------------------------------------------------------------ many problems at once
def test_every_problem_is_reported_in_document_order() -> None:
    spec = (
        "log: {debug: [1]}\n"
        "balloonTypes:\n"
        "  - {name: a, minCPUs: x}\n"
        "  - {name: b, bogus: true, maxBalloons: many}\n"
        "pinCPU: maybe\n"
        "reservedResources: {cpu: 'cpuset:9-1'}\n"
        "extra: 1\n"
    )
    assert problems("balloons", spec) == [
        ("log.debug[0]", "invalid value 1: expected a string"),
        ("balloonTypes[0].minCPUs", "invalid value 'x': expected an integer"),
        ("balloonTypes[1].maxBalloons", "invalid value 'many': expected an integer"),
        ("balloonTypes[1].bogus", "unknown field"),
        ("pinCPU", "invalid value 'maybe': expected true or false"),
        (
            "reservedResources.cpu",
            "invalid value 'cpuset:9-1': expected a cpu list after 'cpuset:' (invalid cpu list"
            " '9-1': reversed range '9-1')",
        ),
        ("extra", "unknown field"),
    ]


def test_error_text_lists_every_problem() -> None:
    with pytest.raises(ConfigError) as info:
        load_policy_config("balloons", "pinCPU: 3\nfoo: 1\n")
    assert str(info.value) == (
        "invalid balloons policy configuration (3 problems):\n"
        "  pinCPU: invalid value 3: expected true or false\n"
        "  foo: unknown field\n"
        "  reservedResources: required field missing"
    )


# ------------------------------------------------------------------ documents
def test_custom_resource_envelope_errors() -> None:
    spec = RESERVED
    wrong_kind = as_custom_resource("TopologyAwarePolicy", spec)
    assert only("balloons", wrong_kind) == (
        "kind",
        "invalid value 'TopologyAwarePolicy': expected 'BalloonsPolicy' for policy 'balloons'",
    )
    wrong_api = as_custom_resource("BalloonsPolicy", spec).replace("v1alpha1", "v1")
    assert only("balloons", wrong_api) == (
        "apiVersion",
        "invalid value 'config.nri/v1': expected 'config.nri/v1alpha1'",
    )
    assert problems("balloons", {"spec": {"reservedResources": {"cpu": 1}}, "junk": 1}) == [
        ("apiVersion", "required field missing"),
        ("kind", "required field missing"),
        ("junk", "unknown field"),
    ]
    not_a_mapping = {"apiVersion": "config.nri/v1alpha1", "kind": "BalloonsPolicy", "spec": [1]}
    assert only("balloons", not_a_mapping) == ("spec", "expected a mapping")
    assert only("none", {"apiVersion": "config.nri/v1alpha1", "kind": "X", "spec": {}}) == (
        "<document>",
        "policy 'none' has no custom resource kind; give a bare spec",
    )


def test_document_errors() -> None:
    path, message = only("balloons", "pinCPU: [1, 2\n")
    assert path == "<document>" and message.startswith("invalid YAML at line ")
    assert only("balloons", "pinCPU: true\npinCPU: false\n") == (
        "<document>",
        "invalid YAML at line 2, column 1: found duplicate key 'pinCPU'",
    )
    assert only("balloons", "- 1\n- 2\n") == ("<document>", "expected a mapping, got list")
    assert only("balloons", "just text") == ("<document>", "expected a mapping, got str")


def test_unknown_policy() -> None:
    with pytest.raises(ConfigError, match="unknown policy 'magic' \\(known: 'balloons', "):
        load_policy_config("magic", "")


def test_invalid_realistic_document_reports_only_the_injected_faults() -> None:
    broken = BALLOONS_SPEC.replace("minCPUs: 2\n    maxCPUs: 16", "minCPUs: 20\n    maxCPUs: 16")
    broken = broken.replace("level: l2cache", "level: l3cache")
    assert problems("balloons", broken) == [
        ("loadClasses[1].level", "invalid value 'l3cache': expected one of 'l2cache', 'core'"),
        ("balloonTypes[1].minCPUs", "invalid value 20: exceeds maxCPUs (16)"),
    ]
