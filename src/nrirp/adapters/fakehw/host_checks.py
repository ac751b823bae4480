"""The rules of a machine spec's ``host`` section that its types do not check."""

from __future__ import annotations

from nrirp.adapters.fakehw.host_spec import CacheAllocationSpec, HostSpec
from nrirp.adapters.fakehw.records import Problems
from nrirp.domain.cpuset import CPUSet


def check_host(host: HostSpec, online: CPUSet, problems: Problems) -> None:
    """The host section's own rules (the rest is checked by the types)."""
    seen: set[int] = set()
    for index, irq in enumerate(host.interrupts):
        path = f"$.host.interrupts[{index}]"
        if irq.irq < 0 or irq.irq in seen:
            problems.add(f"{path}.irq", f"{irq.irq} is negative or listed twice")
        seen.add(irq.irq)
        if irq.cpus is not None and not irq.cpus.issubset(online):
            problems.add(f"{path}.cpus", f"cpus {irq.cpus - online} are not online")
    resctrl = host.resctrl
    for name in ("l2", "l3"):
        cache: CacheAllocationSpec | None = getattr(resctrl, name, None)
        if cache is None:
            continue
        try:
            mask = int(cache.cbm_mask, 16)
        except ValueError:
            mask = 0
        if mask <= 0 or mask & (mask + 1):
            problems.add(
                f"$.host.resctrl.{name}.cbm_mask",
                f"expected a hex mask of contiguous low bits (fff), got {cache.cbm_mask!r}",
            )
    if host.cpufreq is not None and host.cpufreq.governor not in host.cpufreq.governors:
        problems.add("$.host.cpufreq.governor", f"{host.cpufreq.governor} is not in governors")
