"""Cache groups from ``cpuN/cache/indexM``: each distinct cache is parsed once."""

from __future__ import annotations

import attrs

from nrirp.adapters.sysfs.files import SysfsFiles
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CacheGroup, CacheType

_TYPES = {
    "Data": CacheType.DATA,
    "Instruction": CacheType.INSTRUCTION,
    "Unified": CacheType.UNIFIED,
}
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


@attrs.define
class _Found:
    level: int
    type: CacheType
    id: int | None
    cpus: CPUSet
    size_bytes: int | None


def read_caches(files: SysfsFiles, online_cpus: CPUSet) -> list[CacheGroup]:
    """Every cache shared by at least one online CPU; missing cache dirs give no groups.

    A cache is recognised by its index directory name plus its ``shared_cpu_list`` text, so
    the CPUs sharing it read one file each instead of five. Caches without an ``id`` file get
    ids numbered per level and type in order of their first CPU.
    """
    seen: set[tuple[str, str]] = set()
    found: dict[tuple[int, CacheType, int], _Found] = {}
    for cpu in online_cpus:
        base = f"/devices/system/cpu/cpu{cpu}/cache/index"
        index = 0
        while True:
            prefix = f"{base}{index}/"
            shared_text = files.read(prefix + "shared_cpu_list")
            if shared_text is None:
                break
            key = (str(index), shared_text)
            index += 1
            if key in seen:
                continue
            seen.add(key)
            group = _read_group(files, prefix, shared_text, online_cpus)
            if group.cpus:
                found.setdefault((group.level, group.type, group.cpus.bits), group)
    return _with_ids(list(found.values()))


def _read_group(files: SysfsFiles, prefix: str, shared_text: str, online: CPUSet) -> _Found:
    level_text = files.require(prefix + "level")
    level = files.integer(prefix + "level", level_text)
    if level < 0:
        raise files.error(prefix + "level", "negative cache level", level_text)
    type_text = files.require(prefix + "type")
    cache_type = _TYPES.get(type_text.strip())
    if cache_type is None:
        raise files.error(prefix + "type", "unknown cache type", type_text)
    size_text = files.read(prefix + "size")
    return _Found(
        level=level,
        type=cache_type,
        id=files.read_int(prefix + "id"),
        cpus=files.cpuset(prefix + "shared_cpu_list", shared_text) & online,
        size_bytes=None if size_text is None else _size(files, prefix + "size", size_text),
    )


def _size(files: SysfsFiles, rel: str, text: str) -> int:
    stripped = text.strip()
    unit = stripped[-1:] if stripped[-1:].isalpha() else ""
    digits = stripped[: len(stripped) - len(unit)]
    if unit not in _SIZE_UNITS or not digits.isdigit() or not digits.isascii():
        raise files.error(rel, "not a cache size", text)
    return int(digits) * _SIZE_UNITS[unit]


def _with_ids(found: list[_Found]) -> list[CacheGroup]:
    next_free: dict[tuple[int, CacheType], int] = {}
    for f in found:
        if f.id is not None:
            key = (f.level, f.type)
            next_free[key] = max(next_free.get(key, 0), f.id + 1)
    groups = []
    for f in sorted(found, key=lambda f: (f.level, f.type.value, f.cpus.min())):
        cache_id = f.id
        if cache_id is None:
            key = (f.level, f.type)
            cache_id = next_free.get(key, 0)
            next_free[key] = cache_id + 1
        groups.append(
            CacheGroup(
                level=f.level, type=f.type, id=cache_id, cpus=f.cpus, size_bytes=f.size_bytes
            )
        )
    return groups
