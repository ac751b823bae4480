"""Per-CPU records from ``cpuN/topology``, ``cpuN/cpufreq`` and the core-kind PMU cpu lists."""

from __future__ import annotations

from collections.abc import Mapping

from nrirp.adapters.sysfs.files import SysfsFiles
from nrirp.domain.cpuset import EMPTY, CPUSet
from nrirp.domain.ports.hardware import HardwareDiscoveryError
from nrirp.domain.topology import CPU, CoreType

CPU_DIR = "/devices/system/cpu"
EFFICIENT_CPUS = "/devices/cpu_atom/cpus"
PERFORMANCE_CPUS = "/devices/cpu_core/cpus"


def read_online(files: SysfsFiles) -> CPUSet:
    """Online CPUs (falls back to ``present`` on trees without ``online``)."""
    for name in ("online", "present"):
        rel = f"{CPU_DIR}/{name}"
        text = files.read(rel)
        if text is not None:
            found = files.cpuset(rel, text)
            if not found:
                raise files.error(rel, "no CPUs listed", text)
            return found
    raise HardwareDiscoveryError(f"{files.path(CPU_DIR)}: neither 'online' nor 'present' exists")


def read_isolated(files: SysfsFiles, online: CPUSet) -> CPUSet:
    """Kernel-isolated CPUs that are online (``isolcpus=`` may name absent CPUs)."""
    found = files.read_cpuset(f"{CPU_DIR}/isolated")
    return EMPTY if found is None else found & online


def read_core_types(files: SysfsFiles, online: CPUSet) -> dict[int, CoreType]:
    """The kind of every online CPU from the ``cpu_core`` (P-cores) and ``cpu_atom`` (E-cores)
    PMU cpu lists.

    Without a ``cpu_core`` list every CPU that is not an E-core is a performance core (also
    the case on machines that mark no kinds at all). With one, a CPU in neither list has no
    kind (``CoreType.NONE``): the kernel marks some cores as performance cores, not these.
    """
    efficient = EMPTY
    atom = files.read(EFFICIENT_CPUS)
    if atom is not None:
        efficient = files.cpuset(EFFICIENT_CPUS, atom) & online
    performance = files.read_cpuset(PERFORMANCE_CPUS)
    if performance is not None and performance & efficient:
        clash = performance & efficient
        where = files.path(PERFORMANCE_CPUS)
        raise files.error(EFFICIENT_CPUS, f"cpus {clash} are also in {where}", atom or "")
    kinds: dict[int, CoreType] = {}
    for cpu in online:
        if cpu in efficient:
            kinds[cpu] = CoreType.EFFICIENT
        elif performance is None or cpu in performance:
            kinds[cpu] = CoreType.PERFORMANCE
        else:
            kinds[cpu] = CoreType.NONE
    return kinds


def read_cpus(
    files: SysfsFiles,
    online: CPUSet,
    node_of: Mapping[int, int],
    core_types: Mapping[int, CoreType],
) -> list[CPU]:
    """One record per online CPU.

    The topology ids are read once per physical core: thread siblings share package, die,
    cluster and core by definition. Missing ``die_id``/``cluster_id`` (older kernels, other
    architectures) or the value -1 mean one die per package and one cluster per die.
    """
    cpus: list[CPU] = []
    done = 0
    for cpu in online:
        if done >> cpu & 1:
            continue
        topo = f"{CPU_DIR}/cpu{cpu}/topology/"
        siblings = _siblings(files, topo, cpu, online, done)
        package_id = max(_required_int(files, topo + "physical_package_id"), 0)
        core_id = _required_int(files, topo + "core_id")
        die_id = files.read_int(topo + "die_id")
        die_id = 0 if die_id is None or die_id < 0 else die_id
        cluster_id = files.read_int(topo + "cluster_id")
        cluster_id = die_id if cluster_id is None or cluster_id < 0 else cluster_id
        for sibling in siblings:
            done |= 1 << sibling
            base_khz, max_khz, epp = _frequencies(files, sibling)
            cpus.append(
                CPU(
                    id=sibling,
                    package_id=package_id,
                    die_id=die_id,
                    cluster_id=cluster_id,
                    core_id=core_id,
                    node_id=node_of[sibling],
                    core_type=core_types.get(sibling, CoreType.PERFORMANCE),
                    base_frequency_khz=base_khz,
                    max_frequency_khz=max_khz,
                    epp=epp,
                )
            )
    return cpus


def _siblings(files: SysfsFiles, topo: str, cpu: int, online: CPUSet, placed: int) -> CPUSet:
    """The online threads of ``cpu``'s core; none may already belong to another core."""
    for name in ("thread_siblings_list", "core_cpus_list"):
        text = files.read(topo + name)
        if text is not None:
            siblings = files.cpuset(topo + name, text) & online
            if cpu not in siblings:
                raise files.error(topo + name, f"does not list cpu {cpu} itself", text)
            clash = CPUSet(siblings.bits & placed)
            if clash:
                raise files.error(
                    topo + name,
                    f"lists cpus {clash} whose own sibling lists leave out cpu {cpu}",
                    text,
                )
            return siblings
    return CPUSet.of(cpu)


def _required_int(files: SysfsFiles, rel: str) -> int:
    return files.integer(rel, files.require(rel))


def _frequencies(files: SysfsFiles, cpu: int) -> tuple[int | None, int | None, str | None]:
    freq = f"{CPU_DIR}/cpu{cpu}/cpufreq/"
    epp = files.read(freq + "energy_performance_preference")
    epp = None if epp is None or not epp.strip() else epp.strip()
    base_khz = _frequency(files, freq + "base_frequency")
    if base_khz is None:
        # CPPC platforms (amd-pstate, cppc_cpufreq) state the base as a nominal MHz value
        mhz = _frequency(files, f"{CPU_DIR}/cpu{cpu}/acpi_cppc/nominal_freq")
        base_khz = None if mhz is None else mhz * 1000
    return base_khz, _frequency(files, freq + "cpuinfo_max_freq"), epp


def _frequency(files: SysfsFiles, rel: str) -> int | None:
    """A positive frequency from ``rel`` (whatever unit the file uses), None if absent."""
    text = files.read(rel)
    if text is None:
        return None
    value = files.integer(rel, text)
    if value <= 0:
        raise files.error(rel, "frequency must be positive", text)
    return value
