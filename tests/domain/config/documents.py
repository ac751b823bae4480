"""Reference-style config documents (in the spirit of the reference's Helm chart defaults)."""

from __future__ import annotations

TOPOLOGY_AWARE_SPEC = """\
pinCPU: true
pinMemory: true
preferIsolatedCPUs: true
preferSharedCPUs: false
colocatePods: false
colocateNamespaces: false
reservedResources:
  cpu: 750m
availableResources:
  cpu: cpuset:0-63
  memory: 120Gi
reservedPoolNamespaces: [kube-system, monitoring-*]
defaultCPUPriority: normal
unlimitedBurstable: numa
schedulingClasses:
  - name: realtime
    policy: fifo
    priority: 42
    flags: [reset-on-fork]
  - name: background
    policy: batch
    nice: 10
    ioClass: idle
namespaceSchedulingClasses:
  batch-jobs: background
podQoSSchedulingClasses:
  BestEffort: background
cpuClasses:
  - name: turbo
    minFreq: base
    maxFreq: turbo
    uncoreMinFreq: 2000000
    uncoreMaxFreq: 2400000
    energyPerformancePreference: 0
  - name: powersave
    minFreq: 800000
    maxFreq: 1200000
    disabledCstates: [C6]
sharedPoolCPUClass: powersave
defaultExclusiveCPUClass: turbo
log:
  source: true
  debug: [policy, resource-manager]
  klog:
    skip_headers: true
instrumentation:
  httpEndpoint: :8891
  prometheusExport: true
  reportPeriod: 60s
  samplingRatePerMillion: 0
agent:
  nodeResourceTopology: true
"""


def as_custom_resource(kind: str, spec_yaml: str, name: str = "default") -> str:
    indented = "".join(f"  {line}\n" if line else "\n" for line in spec_yaml.splitlines())
    return (
        "apiVersion: config.nri/v1alpha1\n"
        f"kind: {kind}\n"
        "metadata:\n"
        f"  name: {name}\n"
        "  namespace: kube-system\n"
        "spec:\n"
        f"{indented}"
        "status:\n"
        "  nodes:\n"
        "    worker-1: {status: Success, generation: 3}\n"
    )


BALLOONS_SPEC = """\
pinCPU: true
pinMemory: true
allocatorTopologyBalancing: true
reservedResources:
  cpu: cpuset:0-1
availableResources:
  cpu: exclude-cpuset:62-63
idleCPUClass: lowpower
reservedPoolNamespaces: [kube-system, cattle-system]
preserve:
  matchExpressions:
    - key: pod/labels/preserve-cpus
      operator: Exists
loadClasses:
  - name: avx
    level: core
    overloadsLevelInBalloon: true
  - name: membw
    level: l2cache
balloonTypes:
  - name: reserved
    namespaces: [kube-system]
    minCPUs: 2
    maxCPUs: 4
  - name: full-core
    minCPUs: 2
    maxCPUs: 16
    minBalloons: 1
    cpuClass: turbo
    preferSpreadOnPhysicalCores: false
    hideHyperthreads: true
    allocatorPriority: high
    shareIdleCPUsInSame: numa
    loads: [avx]
    matchExpressions:
      - key: pod/labels/app
        operator: In
        values: [db, cache]
  - name: per-namespace
    namespaces: ["team-*"]
    preferPerNamespaceBalloon: true
    preferNewBalloons: true
    maxBalloons: 4
    groupBy: ${pod/labels/app}-${namespace}
    memoryTypes: [dram, HBM]
    preferCloseToDevices: [/sys/class/net/eth0, podresourceapi:gpu.example.com/*]
    preferCoreType: performance
    schedulingClass: latency
  - name: composite
    components:
      - balloonType: full-core
      - balloonType: per-namespace
    componentCreation: balance-balloons
    matchExpressions:
      - key: name
        operator: MatchesAny
        values: ["trainer-*", "solver-*"]
  - name: default
    minCPUs: 1
    allocatorPriority: normal
    preferSpreadingPods: true
schedulingClasses:
  - name: latency
    policy: rr
    priority: 10
    ioClass: rt
    ioPriority: 0
turboDomain: package
control:
  cpu:
    classes:
      lowpower:
        minFreq: 800000
        maxFreq: 800000
      turbo:
        minFreq: 3000000
        maxFreq: 3600000
        uncoreMinFreq: 2000000
        uncoreMaxFreq: 2400000
  rdt:
    enable: true
    usePodQoSAsDefaultClass: true
    options:
      l2: {optional: true}
      l3: {optional: true}
      mb: {optional: true}
    partitions:
      default:
        l3Allocation: 100%
        mbAllocation: [100%]
        classes:
          BestEffort:
            l3Allocation: 33%
            mbAllocation: [50%]
          Burstable:
            l3Allocation: 66%
          Guaranteed:
            l3Allocation:
              all: 100%
              "2-3":
                unified: 80%
                code: 0xff0
                data: 20-60%
            mbAllocation:
              all: [100%, 10000MBps]
            kubernetes:
              denyContainerAnnotation: true
  blockio:
    enable: true
    usePodQoSAsDefaultClass: true
    classes:
      slowreader:
        - Devices: [/dev/vda, "/dev/sd[a-z]"]
          ThrottleReadBps: 512k
          ThrottleReadIOPS: 100
          Weight: "80"
      lowprio:
        - devices: [/dev/nvme0n1]
          weight: 20
log:
  debug: ["*"]
instrumentation:
  httpEndpoint: 127.0.0.1:8891
  metricsExporter: otlp-http
  tracingCollector: otlp-http
  metrics:
    enabled: [policy, buildinfo, "rdt*"]
    polled: [policy]
agent:
  podResourceAPI: true
"""

TEMPLATE_SPEC = """\
reservedResources:
  cpu: "1"
availableResources:
  memory: 64Gi
"""
