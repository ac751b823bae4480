"""The values the memory allocator takes and gives: requests, offers and allocations."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import MemoryType


def _owner_named(_instance: object, _attribute: object, value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"memory request owner must be a non-empty string, got {value!r}")


def _size_valid(_instance: object, _attribute: object, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"memory request size must be a non-negative int of bytes, got {value!r}")


def _types_valid(_instance: object, _attribute: object, value: frozenset[MemoryType]) -> None:
    if not isinstance(value, frozenset) or not value:
        raise ValueError(f"memory request types must be a non-empty frozenset, got {value!r}")
    bad = [t for t in value if not isinstance(t, MemoryType)]
    if bad:
        raise ValueError(f"memory request types must be MemoryType members, got {bad!r}")


def human_bytes(size: int) -> str:
    """``size`` in the largest binary unit that keeps it >= 1, one decimal (``1.5 GiB``)."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def type_names(types: frozenset[MemoryType]) -> str:
    """``DRAM|PMEM``: the types in their declaration order."""
    return "|".join(t.name for t in MemoryType if t in types)


@attrs.frozen
class MemoryRequest:
    """Memory to account for one owner (a container id).

    ``size`` is the bytes to account (policies pass the request; the topology-aware policy
    uses the OOM-score estimate for Burstable containers), ``nodes`` the
    preferred zone (NUMA node ids, e.g. the chosen pool's nodes), ``types`` the allowed memory
    types (HBM is used only when it is listed), ``strict`` forbids widening beyond ``nodes``.
    """

    owner: str = attrs.field(validator=_owner_named)
    size: int = attrs.field(validator=_size_valid)
    nodes: CPUSet
    types: frozenset[MemoryType] = attrs.field(validator=_types_valid)
    strict: bool = False

    def describe(self) -> str:
        """``owner 'c1': 2.0 GiB (2147483648 bytes) of DRAM memory in zone 0-1 (strict)``."""
        strict = " (strict)" if self.strict else ""
        return (
            f"owner {self.owner!r}: {human_bytes(self.size)} ({self.size} bytes) of "
            f"{type_names(self.types)} memory in zone {self.nodes or '(empty)'}{strict}"
        )


@attrs.frozen
class MemoryOffer:
    """What :meth:`MemoryAllocator.allocate` would do, without doing it.

    ``nodes`` is the zone the owner would get, ``fits`` is True when nobody (the owner
    included) has to be widened, ``widened`` maps the other owners that would move to their new
    zones, ``headroom`` is the capacity of ``nodes`` minus the demand there afterwards (how
    tight the fit is: smaller is tighter).
    """

    nodes: CPUSet
    fits: bool
    widened: Mapping[str, CPUSet]
    headroom: int = 0


@attrs.frozen
class MemoryAllocation:
    """One owner's accounted memory: its request, its preferred zone and its current zone."""

    request: MemoryRequest
    preferred: CPUSet
    zone: CPUSet

    @property
    def widened(self) -> bool:
        """True when the zone is wider than the preferred zone."""
        return self.zone != self.preferred
