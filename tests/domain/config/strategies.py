"""Hypothesis strategies for valid reference-style config documents (plain data)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-0123456789", min_size=1, max_size=12)
globs = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-*", min_size=1, max_size=10)
cpu_lists = st.lists(st.integers(0, 255), min_size=1, max_size=6).map(
    lambda ids: ",".join(str(i) for i in sorted(set(ids)))
)
positive_cpu_amounts = st.one_of(
    st.integers(1, 64),
    st.integers(1, 64_000).map(lambda m: f"{m}m"),
    st.sampled_from(["1.5", "0.25", "2", "1e3", "2500m"]),
)
memory_amounts = st.one_of(
    st.integers(0, 2**40),
    st.tuples(st.integers(0, 4096), st.sampled_from(["Ki", "Mi", "Gi", "k", "M", "G", ""])).map(
        lambda t: f"{t[0]}{t[1]}"
    ),
)
durations = st.tuples(st.integers(0, 3), st.integers(0, 59), st.integers(1, 59)).map(
    lambda t: f"{t[0]}h{t[1]}m{t[2]}s"
)


def _optional(mapping: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=mapping)


def reserved_resources() -> st.SearchStrategy[dict[str, Any]]:
    cpu = st.one_of(positive_cpu_amounts, cpu_lists.map(lambda c: f"cpuset:{c}"))
    return st.fixed_dictionaries({"cpu": cpu}, optional={"memory": memory_amounts})


def available_resources() -> st.SearchStrategy[dict[str, Any]]:
    cpu = st.one_of(
        positive_cpu_amounts,
        cpu_lists.map(lambda c: f"cpuset:{c}"),
        cpu_lists.map(lambda c: f"exclude-cpuset:{c}"),
    )
    return _optional({"cpu": cpu, "memory": memory_amounts})


def available_cpusets() -> st.SearchStrategy[dict[str, Any]]:
    """``availableResources`` of the balloons policy: its CPUs only as a cpuset."""
    cpu = st.one_of(
        cpu_lists.map(lambda c: f"cpuset:{c}"),
        cpu_lists.map(lambda c: f"exclude-cpuset:{c}"),
    )
    return _optional({"cpu": cpu, "memory": memory_amounts})


def expressions() -> st.SearchStrategy[dict[str, Any]]:
    one = st.sampled_from(["Equals", "NotEqual", "Matches", "MatchesNot"]).flatmap(
        lambda op: st.fixed_dictionaries(
            {
                "key": names,
                "operator": st.just(op),
                "values": st.lists(globs, min_size=1, max_size=1),
            }
        )
    )
    many = st.sampled_from(["In", "NotIn", "MatchesAny", "MatchesNone"]).flatmap(
        lambda op: st.fixed_dictionaries(
            {"key": names, "operator": st.just(op), "values": st.lists(globs, max_size=3)}
        )
    )
    none = st.sampled_from(["Exists", "NotExists", "AlwaysTrue"]).flatmap(
        lambda op: st.fixed_dictionaries({"key": names, "operator": st.just(op)})
    )
    return st.one_of(one, many, none)


def frequencies() -> st.SearchStrategy[tuple[Any, Any]]:
    numeric = st.tuples(st.integers(0, 5_000_000), st.integers(0, 5_000_000)).map(
        lambda t: (min(t), max(t))
    )
    keywords = st.tuples(st.sampled_from(["min", "base"]), st.sampled_from(["base", "turbo"]))
    return st.one_of(numeric, keywords)


def cpu_class(name: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.tuples(
        frequencies(),
        _optional(
            {
                "energyPerformancePreference": st.integers(0, 255),
                "freqGovernor": st.sampled_from(["performance", "powersave", "schedutil"]),
                "disabledCstates": st.lists(st.sampled_from(["C1E", "C6", "C8"]), max_size=2),
                "turboPriority": st.integers(0, 10),
                "sstClosID": st.integers(0, 3),
                "publishExtendedResource": st.booleans(),
            }
        ),
    ).map(lambda t: {"name": name, "minFreq": t[0][0], "maxFreq": t[0][1], **t[1]})


def scheduling_class(name: str) -> st.SearchStrategy[dict[str, Any]]:
    realtime = st.fixed_dictionaries(
        {"policy": st.sampled_from(["fifo", "rr"]), "priority": st.integers(1, 99)}
    )
    normal = _optional(
        {
            "policy": st.sampled_from(["other", "batch", "idle", "none"]),
            "nice": st.integers(-20, 19),
            "ioClass": st.sampled_from(["none", "rt", "be", "idle"]),
            "ioPriority": st.integers(0, 7),
            "flags": st.lists(st.sampled_from(["reset-on-fork", "keep-params"]), unique=True),
        }
    )
    return st.one_of(realtime, normal).map(lambda d: {"name": name, **d})


def named(
    build: Any, min_size: int = 0, max_size: int = 3
) -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.lists(names, min_size=min_size, max_size=max_size, unique=True).flatmap(
        lambda ns: st.tuples(*(build(n) for n in ns)).map(list)
    )


def common_blocks() -> st.SearchStrategy[dict[str, Any]]:
    klog = _optional(
        {
            "skip_headers": st.booleans(),
            "v": st.integers(0, 10),
            "vmodule": st.just("policy=4,cache*=2"),
            "stderrthreshold": st.sampled_from(["INFO", "ERROR", 2]),
        }
    )
    log = _optional(
        {
            "debug": st.lists(st.sampled_from(["*", "policy", "cache"])),
            "source": st.booleans(),
            "klog": klog,
        }
    )
    instrumentation = _optional(
        {
            "httpEndpoint": st.sampled_from(["", ":8891", "127.0.0.1:9000", "[::1]:8891"]),
            "prometheusExport": st.booleans(),
            "metricsExporter": st.sampled_from(["prometheus", "otlp-http", "otlp-grpc"]),
            "reportPeriod": durations,
            "samplingRatePerMillion": st.integers(0, 1_000_000),
            "metrics": _optional({"enabled": st.lists(names), "polled": st.lists(names)}),
            "logExporter": st.sampled_from(["otlp-http", "otlp-grpc"]),
        }
    )
    agent = _optional({"nodeResourceTopology": st.booleans(), "podResourceAPI": st.booleans()})
    rdt_share = st.sampled_from(["100%", "50%", "20-60%", "0xff"])
    rdt = _optional(
        {
            "enable": st.booleans(),
            "usePodQoSAsDefaultClass": st.booleans(),
            "options": _optional({"l3": _optional({"optional": st.booleans()})}),
            "partitions": st.dictionaries(
                names,
                _optional(
                    {
                        "l3Allocation": rdt_share,
                        "mbAllocation": st.lists(st.sampled_from(["50%", "1000MBps"]), max_size=2),
                    }
                ),
                max_size=2,
            ),
        }
    )
    blockio = _optional(
        {
            "enable": st.booleans(),
            "classes": st.dictionaries(
                names,
                st.lists(
                    _optional(
                        {
                            "Devices": st.lists(st.sampled_from(["/dev/sda", "/dev/vd*"])),
                            "ThrottleReadBps": memory_amounts,
                            "Weight": st.integers(10, 1000),
                        }
                    ),
                    max_size=2,
                ),
                max_size=2,
            ),
        }
    )
    control = _optional(
        {
            "cpu": _optional(
                {"classes": st.dictionaries(names, st.just({"minFreq": 800}), max_size=2)}
            ),
            "rdt": rdt,
            "blockio": blockio,
        }
    )
    privileged = _optional(
        {"allowedNamespaces": st.lists(st.sampled_from(["kube-system", "infra-*", "ops"]))}
    )
    return _optional(
        {
            "log": log,
            "instrumentation": instrumentation,
            "agent": agent,
            "control": control,
            "privilegedAnnotations": privileged,
        }
    )


@st.composite
def topology_aware_documents(draw: st.DrawFn) -> dict[str, Any]:
    sched = draw(named(scheduling_class))
    cpu_classes = draw(named(cpu_class))
    sched_names = [c["name"] for c in sched]
    class_names = [c["name"] for c in cpu_classes]
    doc: dict[str, Any] = {"reservedResources": draw(reserved_resources())}
    doc |= draw(
        _optional(
            {
                "pinCPU": st.booleans(),
                "pinMemory": st.booleans(),
                "preferIsolatedCPUs": st.booleans(),
                "preferSharedCPUs": st.booleans(),
                "colocatePods": st.booleans(),
                "colocateNamespaces": st.booleans(),
                "reservedPoolNamespaces": st.lists(globs, max_size=3),
                "availableResources": available_resources(),
                "defaultCPUPriority": st.sampled_from(["high", "normal", "low", "none"]),
                "unlimitedBurstable": st.sampled_from(
                    ["system", "package", "die", "numa", "l3cache"]
                ),
                "controllableInterrupts": st.lists(
                    st.sampled_from(["*", "eth0*", "24"]), max_size=2
                ),
            }
        )
    )
    if sched:
        doc["schedulingClasses"] = sched
        doc["namespaceSchedulingClasses"] = draw(
            st.dictionaries(names, st.sampled_from(sched_names), max_size=3)
        )
        doc["podQoSSchedulingClasses"] = draw(
            st.dictionaries(
                st.sampled_from(["Guaranteed", "Burstable", "BestEffort"]),
                st.sampled_from(sched_names),
            )
        )
    if cpu_classes:
        doc["cpuClasses"] = cpu_classes
        doc["sharedPoolCPUClass"] = draw(st.sampled_from(class_names))
    return doc | draw(common_blocks())


_CPU_PICKING = (
    "cpuClass",
    "preferSpreadOnPhysicalCores",
    "allocatorTopologyBalancing",
    "preferCloseToDevices",
    "preferIsolCpus",
    "preferCoreType",
)


@st.composite
def balloon_types(
    draw: st.DrawFn, load_names: list[str], sched_names: list[str], class_names: list[str]
) -> list[dict[str, Any]]:
    # "reserved" has extra rules tied to reservedResources (tested by example)
    type_names = draw(st.lists(names.filter(lambda n: n != "reserved"), max_size=4, unique=True))
    out: list[dict[str, Any]] = []
    for index, name in enumerate(type_names):
        min_cpus = draw(st.integers(0, 8))
        max_cpus = draw(st.one_of(st.just(0), st.integers(max(min_cpus, 1), 16)))
        min_b = draw(st.integers(0, 3))
        item: dict[str, Any] = {
            "name": name,
            "minCPUs": min_cpus,
            "maxCPUs": max_cpus,
            "minBalloons": min_b,
            "maxBalloons": draw(st.one_of(st.just(0), st.integers(max(min_b, 1), 6))),
        }
        item |= draw(
            _optional(
                {
                    "namespaces": st.lists(globs, max_size=2),
                    "matchExpressions": st.lists(expressions(), max_size=2),
                    "groupBy": st.sampled_from(["${pod/labels/app}", "team-${namespace}"]),
                    "memoryTypes": st.lists(st.sampled_from(["DRAM", "PMEM", "HBM"]), unique=True),
                    "pinMemory": st.booleans(),
                    "allocatorPriority": st.sampled_from(["high", "normal", "low", "none"]),
                    "preferSpreadOnPhysicalCores": st.booleans(),
                    "hideHyperthreads": st.booleans(),
                    "preferSpreadingPods": st.booleans(),
                    "preferNewBalloons": st.booleans(),
                    "shareIdleCPUsInSame": st.sampled_from(["system", "numa", "l2cache", "core"]),
                    "preferCloseToDevices": st.lists(
                        st.sampled_from(["/sys/class/net/eth0", "podresourceapi:gpu/*"]), max_size=2
                    ),
                    "preferIsolCpus": st.booleans(),
                    "preferCoreType": st.sampled_from(["efficient", "performance"]),
                    "irqMode": st.sampled_from(["sink", "isolate", "other"]),
                    "irqClaim": st.lists(st.sampled_from(["1", "nvme*"]), max_size=2),
                }
            )
        )
        if load_names:
            item["loads"] = draw(st.lists(st.sampled_from(load_names), max_size=2, unique=True))
        if sched_names:
            item["schedulingClass"] = draw(st.sampled_from(sched_names))
        if class_names:
            item["cpuClass"] = draw(st.sampled_from(class_names))
        if index:  # components only point backwards: no cycles
            parts = draw(st.lists(st.sampled_from(type_names[:index]), max_size=2))
            if parts:
                item["components"] = [{"balloonType": p} for p in parts]
                item["componentCreation"] = draw(st.sampled_from(["all", "balance-balloons"]))
                for key in _CPU_PICKING:  # a composite type picks no CPUs of its own
                    item.pop(key, None)
        out.append(item)
    return out


@st.composite
def balloons_documents(draw: st.DrawFn) -> dict[str, Any]:
    loads = draw(
        named(
            lambda n: st.fixed_dictionaries(
                {"name": st.just(n), "level": st.sampled_from(["core", "l2cache"])}
            )
        )
    )
    sched = draw(named(scheduling_class))
    # without pctPriority (PCT is tested by example) nothing is published
    cpu_classes = [
        {k: v for k, v in c.items() if k != "publishExtendedResource"}
        for c in draw(named(cpu_class))
    ]
    load_names = [c["name"] for c in loads]
    sched_names = [c["name"] for c in sched]
    class_names = [c["name"] for c in cpu_classes]
    doc: dict[str, Any] = {
        "reservedResources": draw(reserved_resources()),
        "balloonTypes": draw(balloon_types(load_names, sched_names, class_names)),
        "loadClasses": loads,
        "schedulingClasses": sched,
        "cpuClasses": cpu_classes,
    }
    doc |= draw(
        _optional(
            {
                "pinCPU": st.booleans(),
                "allocatorTopologyBalancing": st.booleans(),
                "availableResources": available_cpusets(),
                "preserve": st.fixed_dictionaries(
                    {"matchExpressions": st.lists(expressions(), max_size=2)}
                ),
                "showContainersInNrt": st.booleans(),
                "turboDomain": st.sampled_from(["package", "system"]),
            }
        )
    )
    if class_names:
        doc["idleCPUClass"] = draw(st.sampled_from(class_names))
    return doc | draw(common_blocks())


def template_documents() -> st.SearchStrategy[dict[str, Any]]:
    return _optional(
        {"availableResources": available_resources(), "reservedResources": reserved_resources()}
    ).flatmap(lambda d: common_blocks().map(lambda c: d | c))


DOCUMENTS = {
    "topology-aware": topology_aware_documents(),
    "balloons": balloons_documents(),
    "template": template_documents(),
}
