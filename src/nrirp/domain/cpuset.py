"""CPUSet: an immutable set of CPU (or memory node) ids in the Linux list syntax.

The set is a bit mask held in one Python int, so union, intersection and difference of
sets with thousands of ids are single big-integer operations.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any

import attrs


class CPUSetError(ValueError):
    """Raised for text that is not valid Linux list syntax (quotes the text)."""


_MAX_ID = 1 << 20  # far above any real CPU id; guards against "0-999999999999"

# One element of a list: "N", "A-B", or the kernel's grouped range "A-B:USED/GROUP"
# (bitmap_parselist: in A..B take the first USED ids of every GROUP ids).
_ELEMENT = re.compile(r"\s*(\d+)(?:\s*-\s*(\d+)(?::(\d+)/(\d+))?)?\s*", re.ASCII)


def _parse(text: str) -> int:
    stripped = text.strip()
    if not stripped:
        return 0
    spans: list[tuple[int, int]] = []
    for part in stripped.split(","):
        match = _ELEMENT.fullmatch(part)
        if match is None:
            what = "empty element" if not part.strip() else f"bad element {part.strip()!r}"
            raise CPUSetError(f"invalid cpu list {text!r}: {what}")
        lo_text, hi_text, used_text, group_text = match.groups()
        lo = int(lo_text)
        hi = int(hi_text) if hi_text is not None else lo
        if hi < lo:
            raise CPUSetError(f"invalid cpu list {text!r}: reversed range {part.strip()!r}")
        if hi >= _MAX_ID:
            raise CPUSetError(f"invalid cpu list {text!r}: id {hi} too large")
        if group_text is None:
            spans.append((lo, hi))
            continue
        used, group = int(used_text), int(group_text)
        if used == 0 or group == 0 or used > group:
            raise CPUSetError(f"invalid cpu list {text!r}: bad group {part.strip()!r}")
        for start in range(lo, hi + 1, group):
            spans.append((start, min(start + used - 1, hi)))
    return _bits_of_spans(spans)


def _bits_of_spans(spans: list[tuple[int, int]]) -> int:
    if len(spans) <= 16:
        bits = 0
        for lo, hi in spans:
            bits |= ((1 << (hi - lo + 1)) - 1) << lo
        return bits
    # many spans: paint a digit string once instead of one big-int operation per span
    digits = bytearray(b"0") * (max(hi for _, hi in spans) + 1)
    for lo, hi in spans:
        digits[lo : hi + 1] = b"1" * (hi - lo + 1)
    digits.reverse()
    return int(digits, 2)


def _ids(bits: int) -> list[int]:
    """Set bit positions in ascending order."""
    if not bits:
        return []
    if bits.bit_count() <= 8:
        out = []
        while bits:
            low = bits & -bits
            out.append(low.bit_length() - 1)
            bits ^= low
        return out
    text = bin(bits)[:1:-1]  # reversed binary digits: index == bit position
    return [i for i, c in enumerate(text) if c == "1"]


# Sets are immutable and the same big sets (a pool's shared CPUs) are rendered and iterated
# over and over, e.g. once for every container of the pool when its cpuset changes. Their ids
# and text are kept by bit mask; small sets' ids are cheap to redo and would only churn the
# cache, and their text is kept in a cache of its own.
_CACHED_FROM = 16  # ids
_CACHE_SIZE = 256  # sets


@lru_cache(maxsize=_CACHE_SIZE)
def _cached_ids(bits: int) -> tuple[int, ...]:
    return tuple(_ids(bits))


def _id_tuple(bits: int) -> tuple[int, ...] | list[int]:
    """The ids of ``bits`` (a shared tuple for big sets: never modify it)."""
    return _cached_ids(bits) if bits.bit_count() > _CACHED_FROM else _ids(bits)


def _ranges(ids: tuple[int, ...] | list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    if not ids:
        return out
    start = prev = ids[0]
    for i in ids[1:]:
        if i != prev + 1:
            out.append((start, prev))
            start = i
        prev = i
    out.append((start, prev))
    return out


def _render(bits: int) -> str:
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in _ranges(_id_tuple(bits)))


_cached_text = lru_cache(maxsize=_CACHE_SIZE)(_render)
_cached_small_text = lru_cache(maxsize=_CACHE_SIZE)(_render)
"""Small sets (memory nodes, a few exclusive CPUs) by themselves: a decision's text names
them for every container, and they must not push the big sets out of their cache."""


@attrs.frozen(slots=True, repr=False, order=False)
class CPUSet:
    """Immutable set of non-negative integer ids (CPUs or memory nodes)."""

    bits: int = 0

    # ---------------------------------------------------------------- construction
    @classmethod
    def parse(cls, text: str) -> CPUSet:
        """Parse Linux list syntax such as ``"0-3,8,10-11"``; empty text is the empty set."""
        return cls(_parse(text))

    @classmethod
    def of(cls, *ids: int) -> CPUSet:
        """The set of the given ids."""
        return cls.from_ids(ids)

    @classmethod
    def from_ids(cls, ids: Iterable[int]) -> CPUSet:
        """The set of ids from any iterable; negative ids raise :class:`CPUSetError`."""
        spans = []
        for i in ids:
            if i < 0:
                raise CPUSetError(f"negative id {i}")
            spans.append((i, i))
        return cls(_bits_of_spans(spans))

    @classmethod
    def range(cls, start: int, stop: int) -> CPUSet:
        """Ids ``start <= id < stop``."""
        if stop <= start:
            return cls(0)
        return cls(((1 << (stop - start)) - 1) << start)

    # ---------------------------------------------------------------- conversion
    def ids(self) -> list[int]:
        """Sorted list of the ids."""
        return list(_id_tuple(self.bits))

    def ranges(self) -> list[tuple[int, int]]:
        """Maximal runs of consecutive ids as inclusive ``(first, last)`` pairs."""
        return _ranges(_id_tuple(self.bits))

    def __str__(self) -> str:
        bits = self.bits
        return _cached_text(bits) if bits.bit_count() > _CACHED_FROM else _cached_small_text(bits)

    def __repr__(self) -> str:
        return f"CPUSet({str(self)!r})"

    # ---------------------------------------------------------------- container protocol
    def __iter__(self) -> Iterator[int]:
        return iter(_id_tuple(self.bits))

    def __len__(self) -> int:
        return self.bits.bit_count()

    def __bool__(self) -> bool:
        return self.bits != 0

    def __contains__(self, item: object) -> bool:
        return isinstance(item, int) and item >= 0 and bool(self.bits >> item & 1)

    # ---------------------------------------------------------------- algebra
    def __or__(self, other: CPUSet) -> CPUSet:
        return CPUSet(self.bits | other.bits)

    def __and__(self, other: CPUSet) -> CPUSet:
        return CPUSet(self.bits & other.bits)

    def __sub__(self, other: CPUSet) -> CPUSet:
        return CPUSet(self.bits & ~other.bits)

    def __xor__(self, other: CPUSet) -> CPUSet:
        return CPUSet(self.bits ^ other.bits)

    def union(self, *others: CPUSet) -> CPUSet:
        bits = self.bits
        for o in others:
            bits |= o.bits
        return CPUSet(bits)

    def intersection(self, *others: CPUSet) -> CPUSet:
        bits = self.bits
        for o in others:
            bits &= o.bits
        return CPUSet(bits)

    def difference(self, *others: CPUSet) -> CPUSet:
        bits = self.bits
        for o in others:
            bits &= ~o.bits
        return CPUSet(bits)

    def issubset(self, other: CPUSet) -> bool:
        return self.bits & ~other.bits == 0

    def issuperset(self, other: CPUSet) -> bool:
        return other.bits & ~self.bits == 0

    def isdisjoint(self, other: CPUSet) -> bool:
        return self.bits & other.bits == 0

    def __le__(self, other: CPUSet) -> bool:
        return self.issubset(other)

    def __ge__(self, other: CPUSet) -> bool:
        return self.issuperset(other)

    def __lt__(self, other: CPUSet) -> bool:
        return self.bits != other.bits and self.issubset(other)

    def __gt__(self, other: CPUSet) -> bool:
        return self.bits != other.bits and self.issuperset(other)

    def add(self, *ids: int) -> CPUSet:
        """A new set with ``ids`` added."""
        return self | CPUSet.from_ids(ids)

    def remove(self, *ids: int) -> CPUSet:
        """A new set without ``ids`` (absent ids are ignored)."""
        return self - CPUSet.from_ids(ids)

    # ---------------------------------------------------------------- helpers
    def min(self) -> int:
        """Smallest id; ValueError on the empty set."""
        if not self.bits:
            raise ValueError("min() of an empty CPUSet")
        return (self.bits & -self.bits).bit_length() - 1

    def max(self) -> int:
        """Largest id; ValueError on the empty set."""
        if not self.bits:
            raise ValueError("max() of an empty CPUSet")
        return self.bits.bit_length() - 1

    def first(self, n: int) -> CPUSet:
        """The ``n`` smallest ids (all of them if there are fewer)."""
        if n <= 0:
            return CPUSet(0)
        if n >= self.bits.bit_count():
            return self
        if n > 256:
            return CPUSet.from_ids(_id_tuple(self.bits)[:n])
        bits, out = self.bits, 0
        for _ in range(n):  # peel off the lowest set bit n times
            low = bits & -bits
            out |= low
            bits ^= low
        return CPUSet(out)


EMPTY = CPUSet()


def structure_cpuset(value: Any, _type: Any = CPUSet) -> CPUSet:
    """cattrs structure hook: accepts list syntax, an int, or a list of ints."""
    if isinstance(value, CPUSet):
        return value
    if isinstance(value, str):
        return CPUSet.parse(value)
    if isinstance(value, bool):
        raise CPUSetError(f"invalid cpu list {value!r}")
    if isinstance(value, int):
        return CPUSet.of(value)
    if isinstance(value, list | tuple):
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise CPUSetError(f"invalid cpu list {value!r}")
        return CPUSet.from_ids(value)
    raise CPUSetError(f"invalid cpu list {value!r}")


def unstructure_cpuset(value: CPUSet) -> str:
    return str(value)
