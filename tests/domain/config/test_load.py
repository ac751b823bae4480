"""Loading each policy's config from reference-style documents."""

from __future__ import annotations

import json
from fractions import Fraction
from types import MappingProxyType

import pytest
import yaml

from nrirp.adapters.documents import load_policy_config
from nrirp.domain.config import (
    BUILTIN_DEFAULT,
    BUILTIN_RESERVED,
    BalloonsPolicySpec,
    BurstableLevel,
    ComponentCreation,
    ConfigError,
    CoreTypePreference,
    CPUPriority,
    CPUResource,
    CPUTopologyLevel,
    Duration,
    Expression,
    Frequency,
    FrequencyKeyword,
    IOClass,
    LoadLevel,
    MemoryKind,
    MetricsExporter,
    NonePolicySpec,
    Operator,
    PolicyConfig,
    QoSClass,
    Quantity,
    SchedulingFlag,
    SchedulingPolicy,
    TemplatePolicySpec,
    TopologyAwarePolicySpec,
    TurboDomain,
    unstructure_policy_config,
)
from nrirp.domain.cpuset import CPUSet
from tests.domain.config.documents import (
    BALLOONS_SPEC,
    TEMPLATE_SPEC,
    TOPOLOGY_AWARE_SPEC,
    as_custom_resource,
)


def test_topology_aware_helm_default_loads_with_reference_defaults() -> None:
    config = load_policy_config("topology-aware", "reservedResources:\n  cpu: 750m\n")
    spec = config.spec
    assert isinstance(spec, TopologyAwarePolicySpec)
    assert spec.reserved_resources.cpu == CPUResource.of_amount(Quantity.parse("750m"))
    assert spec.reserved_resources.cpu.amount is not None
    assert spec.reserved_resources.cpu.amount.milli_value() == 750
    assert (spec.pin_cpu, spec.pin_memory, spec.prefer_isolated_cpus) == (True, True, True)
    assert (spec.prefer_shared_cpus, spec.colocate_pods, spec.colocate_namespaces) == (
        False,
        False,
        False,
    )
    assert spec.default_cpu_priority is CPUPriority.NONE
    assert spec.unlimited_burstable is BurstableLevel.PACKAGE
    assert spec.controllable_interrupts == ("*",)
    assert spec.available_resources.is_empty()
    assert config.agent.exports_topology and config.agent.node_resource_topology is None
    assert config.agent.pod_resource_api is False
    assert config.instrumentation.report_period == Duration.parse("30s")
    assert config.instrumentation.metrics.enabled == ("policy", "buildinfo")
    assert config.log.debug == () and config.log.source is False
    assert config.control.rdt.enable is False and config.control.blockio.enable is False


def test_topology_aware_full_document() -> None:
    config = load_policy_config("topology-aware", TOPOLOGY_AWARE_SPEC)
    spec = config.spec
    assert config.policy == "topology-aware"
    assert spec.available_resources.cpu == CPUResource.of_cpuset(CPUSet.parse("0-63"))
    assert spec.available_resources.memory == Quantity.parse("120Gi")
    assert spec.reserved_pool_namespaces == ("kube-system", "monitoring-*")
    assert spec.default_cpu_priority is CPUPriority.NORMAL
    assert spec.unlimited_burstable is BurstableLevel.NUMA
    realtime, background = spec.scheduling_classes
    assert realtime.policy is SchedulingPolicy.FIFO and realtime.priority == 42
    assert realtime.flags == (SchedulingFlag.RESET_ON_FORK,)
    assert background.nice == 10 and background.io_class is IOClass.IDLE
    assert spec.namespace_scheduling_classes == {"batch-jobs": "background"}
    assert spec.pod_qos_scheduling_classes == {QoSClass.BEST_EFFORT: "background"}
    turbo = spec.cpu_classes[0]
    assert turbo.min_freq == Frequency(keyword=FrequencyKeyword.BASE)
    assert turbo.max_freq == Frequency(keyword=FrequencyKeyword.TURBO)
    assert turbo.uncore_max_freq == 2_400_000 and turbo.energy_performance_preference == 0
    assert spec.cpu_classes[1].min_freq == Frequency(khz=800_000)
    assert spec.shared_pool_cpu_class == "powersave"
    assert spec.reserved_pool_cpu_class is None
    assert config.log.source is True and config.log.debug == ("policy", "resource-manager")
    assert config.log.klog.skip_headers is True and config.log.klog.v is None
    assert config.instrumentation.http_endpoint == ":8891"
    assert config.instrumentation.prometheus_export is True
    assert config.instrumentation.report_period.nanoseconds == 60 * 10**9


def test_balloons_document_with_several_types() -> None:
    config = load_policy_config("balloons", BALLOONS_SPEC)
    spec = config.spec
    assert isinstance(spec, BalloonsPolicySpec)
    assert spec.reserved_resources.cpu == CPUResource.of_cpuset(CPUSet.parse("0-1"))
    assert spec.available_resources.cpu == CPUResource.of_cpuset(
        CPUSet.parse("62-63"), exclude=True
    )
    assert spec.allocator_topology_balancing is True
    assert spec.preserve is not None
    assert spec.preserve.match_expressions == (
        Expression(key="pod/labels/preserve-cpus", operator=Operator.EXISTS),
    )
    assert [(c.name, c.level, c.overloads_level_in_balloon) for c in spec.load_classes] == [
        ("avx", LoadLevel.CORE, True),
        ("membw", LoadLevel.L2CACHE, False),
    ]
    names = [t.name for t in spec.balloon_types]
    assert names == ["reserved", "full-core", "per-namespace", "composite", "default"]
    full_core = spec.balloon_types[1]
    assert (full_core.min_cpus, full_core.max_cpus, full_core.min_balloons) == (2, 16, 1)
    assert full_core.hide_hyperthreads is True and full_core.pin_memory is None
    assert full_core.share_idle_cpus_in_same is CPUTopologyLevel.NUMA
    assert full_core.match_expressions[0].values == ("db", "cache")
    per_ns = spec.balloon_types[2]
    assert per_ns.memory_types == (MemoryKind.DRAM, MemoryKind.HBM)
    assert per_ns.group_by == "${pod/labels/app}-${namespace}"
    assert per_ns.prefer_core_type is CoreTypePreference.PERFORMANCE
    assert per_ns.allocator_priority is CPUPriority.HIGH  # the CRD default
    composite = spec.balloon_types[3]
    assert [c.balloon_type for c in composite.components] == ["full-core", "per-namespace"]
    assert composite.component_creation is ComponentCreation.BALANCE_BALLOONS
    assert composite.match_expressions[0].operator is Operator.MATCHES_ANY
    assert spec.balloon_types[4].allocator_priority is CPUPriority.NORMAL
    assert spec.turbo_domain is TurboDomain.PACKAGE
    assert set(config.control.cpu.classes) == {"lowpower", "turbo"}
    assert config.instrumentation.metrics_exporter is MetricsExporter.OTLP_HTTP
    assert config.instrumentation.metrics.polled == ("policy",)
    assert config.agent.pod_resource_api is True


def test_balloons_rdt_and_blockio_blocks() -> None:
    control = load_policy_config("balloons", BALLOONS_SPEC).control
    rdt = control.rdt
    assert rdt.enable and rdt.use_pod_qos_as_default_class
    assert rdt.options.l2.optional and rdt.options.mb.optional
    partition = rdt.partitions["default"]
    assert partition.l3_allocation is not None
    assert partition.l3_allocation.by_cache_id["all"].unified == "100%"
    assert partition.mb_allocation is not None
    assert partition.mb_allocation.by_cache_id == {"all": ("100%",)}
    assert rdt.class_names() == ["BestEffort", "Burstable", "Guaranteed"]
    guaranteed = partition.classes["Guaranteed"]
    assert guaranteed.l3_allocation is not None
    split = guaranteed.l3_allocation.by_cache_id["2-3"]
    assert (split.unified, split.code, split.data) == ("80%", "0xff0", "20-60%")
    assert guaranteed.kubernetes.deny_container_annotation is True
    assert guaranteed.kubernetes.deny_pod_annotation is False
    blockio = control.blockio
    (slow,) = blockio.classes["slowreader"]
    assert slow.devices == ("/dev/vda", "/dev/sd[a-z]")
    assert slow.throttle_read_bps == Quantity.parse("512k")
    assert slow.throttle_read_iops == Quantity.parse("100")
    assert slow.weight is not None and slow.weight.value == 80
    (low,) = blockio.classes["lowprio"]  # lowerCamel spellings are accepted too
    assert low.devices == ("/dev/nvme0n1",) and low.weight is not None and low.weight.value == 20


def test_balloons_effective_types_prepend_reserved_and_append_default() -> None:
    spec = load_policy_config("balloons", "reservedResources: {cpu: 1}\n").spec
    assert spec.balloon_types == ()
    assert spec.effective_balloon_types() == (BUILTIN_RESERVED, BUILTIN_DEFAULT)
    configured = load_policy_config("balloons", BALLOONS_SPEC).spec
    effective = configured.effective_balloon_types()
    assert [t.name for t in effective] == [
        "reserved",
        "full-core",
        "per-namespace",
        "composite",
        "default",
    ]
    assert effective[0].max_cpus == 4  # the configured reserved type replaces the built-in
    odd_order = load_policy_config(
        "balloons",
        "reservedResources: {cpu: 1}\nballoonTypes: [{name: default}, {name: a}, {name: reserved}]",
    ).spec
    # configured built-ins keep their place in the list (the reference walks it in order)
    assert [t.name for t in odd_order.effective_balloon_types()] == ["default", "a", "reserved"]
    only_a = load_policy_config(
        "balloons", "reservedResources: {cpu: 1}\nballoonTypes: [{name: a}]"
    ).spec
    assert [t.name for t in only_a.effective_balloon_types()] == ["reserved", "a", "default"]


def test_template_and_none() -> None:
    template = load_policy_config("template", TEMPLATE_SPEC)
    assert isinstance(template.spec, TemplatePolicySpec)
    assert template.spec.reserved_resources.cpu == CPUResource.of_amount(Quantity.parse("1"))
    assert template.spec.available_resources.memory == Quantity.parse("64Gi")
    assert load_policy_config("template", "").spec == TemplatePolicySpec()
    for empty in ("", "# nothing here\n", "{}", {}):
        config = load_policy_config("none", empty)
        assert config == PolicyConfig(policy="none", spec=NonePolicySpec())
    with_log = load_policy_config("none", {"log": {"debug": ["*"]}})
    assert with_log.log.debug == ("*",)


@pytest.mark.parametrize(
    ("policy", "kind", "spec_yaml"),
    [
        ("topology-aware", "TopologyAwarePolicy", TOPOLOGY_AWARE_SPEC),
        ("balloons", "BalloonsPolicy", BALLOONS_SPEC),
        ("template", "TemplatePolicy", TEMPLATE_SPEC),
    ],
)
def test_bare_spec_and_custom_resource_give_the_same_config(
    policy: str, kind: str, spec_yaml: str
) -> None:
    bare = load_policy_config(policy, spec_yaml)
    document = load_policy_config(policy, as_custom_resource(kind, spec_yaml))
    assert bare == document
    parsed = yaml.safe_load(as_custom_resource(kind, spec_yaml))
    assert load_policy_config(policy, parsed) == bare
    assert load_policy_config(policy, json.dumps(parsed)) == bare


@pytest.mark.parametrize(
    ("policy", "spec_yaml"),
    [
        ("topology-aware", TOPOLOGY_AWARE_SPEC),
        ("balloons", BALLOONS_SPEC),
        ("template", TEMPLATE_SPEC),
        ("none", ""),
    ],
)
def test_unstructure_round_trips(policy: str, spec_yaml: str) -> None:
    config = load_policy_config(policy, spec_yaml)
    data = unstructure_policy_config(config)
    assert load_policy_config(policy, data) == config
    # plain data only: survives JSON and YAML text
    assert load_policy_config(policy, json.dumps(data)) == config
    assert load_policy_config(policy, yaml.safe_dump(data)) == config
    if policy != "none":
        document = unstructure_policy_config(config, as_document=True, name="node.worker-1")
        assert document["metadata"] == {"name": "node.worker-1"}
        assert load_policy_config(policy, document) == config


def test_unstructure_uses_reference_keys_and_text_forms() -> None:
    config = load_policy_config("balloons", BALLOONS_SPEC)
    data = unstructure_policy_config(config)
    assert data["reservedResources"] == {"cpu": "cpuset:0-1"}
    assert data["availableResources"] == {"cpu": "exclude-cpuset:62-63"}
    assert data["balloonTypes"][1]["minCPUs"] == 2
    assert data["balloonTypes"][1]["shareIdleCPUsInSame"] == "numa"
    assert data["balloonTypes"][2]["memoryTypes"] == ["DRAM", "HBM"]
    assert "pinMemory" not in data["balloonTypes"][1]  # unset optional: omitted, not null
    assert data["control"]["rdt"]["partitions"]["default"]["l3Allocation"] == "100%"
    assert data["control"]["rdt"]["partitions"]["default"]["classes"]["Guaranteed"][
        "l3Allocation"
    ] == {"all": "100%", "2-3": {"unified": "80%", "code": "0xff0", "data": "20-60%"}}
    slow = data["control"]["blockio"]["classes"]["slowreader"][0]
    assert slow["ThrottleReadBps"] == "512k" and slow["Weight"] == "80"
    assert data["instrumentation"]["reportPeriod"] == "30s"
    assert data["log"]["klog"] == {}


def test_values_are_immutable() -> None:
    config = load_policy_config("topology-aware", TOPOLOGY_AWARE_SPEC)
    assert isinstance(config.spec.namespace_scheduling_classes, MappingProxyType)
    with pytest.raises(TypeError):
        config.spec.namespace_scheduling_classes["x"] = "y"  # type: ignore[index]
    with pytest.raises(AttributeError):
        config.spec.pin_cpu = False  # type: ignore[misc]


def test_nulls_and_empty_optional_strings_mean_not_set() -> None:
    config = load_policy_config(
        "topology-aware",
        "reservedResources: {cpu: 2}\npinCPU: null\nsharedPoolCPUClass: ''\nlog:\n",
    )
    assert config.spec.pin_cpu is True
    assert config.spec.shared_pool_cpu_class is None
    assert config.spec.reserved_resources.cpu.amount.value == Fraction(2)


def test_source_mapping_is_not_modified() -> None:
    data = yaml.safe_load(as_custom_resource("BalloonsPolicy", BALLOONS_SPEC))
    before = json.dumps(data, sort_keys=True)
    load_policy_config("balloons", data)
    assert json.dumps(data, sort_keys=True) == before


def test_errors_leave_no_partial_config() -> None:
    with pytest.raises(ConfigError, match="bogus: unknown field") as info:
        load_policy_config("balloons", BALLOONS_SPEC + "bogus: 1\n")
    assert [str(p) for p in info.value.problems] == ["bogus: unknown field"]
