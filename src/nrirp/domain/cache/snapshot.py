"""The persisted state: a versioned snapshot of the cache, with strict (de)serialization.

Structuring is strict: unknown keys, missing keys and values of the wrong type are refused
with every offending path listed, so a corrupt or foreign state file is never half-loaded.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from contextlib import suppress
from types import MappingProxyType
from typing import Any

import attrs
import cattrs
from cattrs.errors import ForbiddenExtraKeysError

from nrirp.domain.cpuset import CPUSet, CPUSetError, structure_cpuset, unstructure_cpuset
from nrirp.domain.model import Container, Pod

SNAPSHOT_VERSION = 1


class SnapshotError(ValueError):
    """The snapshot cannot be used; ``problems`` lists ``path: reason`` for each fault."""

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        detail = "".join(f"\n  {p}" for p in problems)
        super().__init__(message + detail)
        self.problems = problems


@attrs.frozen(hash=False)
class Snapshot:
    """Everything the resource manager needs to continue after a restart."""

    version: int
    policy: str
    pods: tuple[Pod, ...] = ()
    containers: tuple[Container, ...] = ()
    policy_data: Mapping[str, Any] = attrs.field(factory=dict)
    """JSON-compatible data per policy name."""
    config: Mapping[str, Any] | None = None
    """The active configuration in its document form (reference key names)."""


def _strict(kind: type, *, accept: tuple[type, ...] | None = None) -> Any:
    accepted = accept or (kind,)

    def structure(value: Any, _: Any) -> Any:
        if isinstance(value, bool) and kind is not bool:
            raise TypeError(f"invalid value {value!r}: expected {kind.__name__}")
        if not isinstance(value, accepted):
            raise TypeError(f"invalid value {value!r}: expected {kind.__name__}")
        return kind(value)

    return structure


def _structure_cpuset(value: Any, _: Any) -> CPUSet:
    if not isinstance(value, str):
        raise TypeError(f"invalid value {value!r}: expected a cpu list string")
    try:
        return structure_cpuset(value)
    except CPUSetError as exc:
        raise ValueError(str(exc)) from None


def _is_set_type(type_: Any) -> bool:
    return getattr(type_, "__origin__", type_) in (frozenset, set)


def _make_converter() -> cattrs.Converter:
    # fields at their default are left out: smaller state, and structuring fills them back in
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True, omit_if_default=True)
    conv.register_structure_hook(int, _strict(int))
    conv.register_structure_hook(str, _strict(str))
    conv.register_structure_hook(bool, _strict(bool))
    conv.register_structure_hook(float, _strict(float, accept=(int, float)))
    conv.register_structure_hook(CPUSet, _structure_cpuset)
    conv.register_unstructure_hook(CPUSet, unstructure_cpuset)
    conv.register_unstructure_hook(MappingProxyType, dict)
    conv.register_unstructure_hook_func(_is_set_type, lambda value: sorted(value))
    return conv


_CONVERTER = _make_converter()


def unstructure_snapshot(snapshot: Snapshot) -> dict[str, Any]:
    """The snapshot as a JSON-compatible dict."""
    return SnapshotEncoder().encode(snapshot)


class SnapshotEncoder:
    """Unstructures snapshots, reusing the output for pods and containers unchanged since the
    previous call (values are immutable, so an unchanged object is the very same object).

    Between two operations almost every object is unchanged and in the same place, so the
    comparison with the previous snapshot runs position by position at C speed and only the
    objects that differ are looked up or unstructured. The returned dicts share those parts
    between calls: consumers must not modify them, and the encoder never modifies what it
    returned (a store may keep it, see :class:`~nrirp.domain.ports.state_store.StateStore`).
    """

    def __init__(self) -> None:
        self._pods: _Encoded = ((), [])
        self._containers: _Encoded = ((), [])

    def encode(self, snapshot: Snapshot) -> dict[str, Any]:
        self._pods = _reencode(snapshot.pods, self._pods)
        self._containers = _reencode(snapshot.containers, self._containers)
        return {
            "version": snapshot.version,
            "policy": snapshot.policy,
            "pods": self._pods[1],
            "containers": self._containers[1],
            "policy_data": _CONVERTER.unstructure(snapshot.policy_data),
            "config": _CONVERTER.unstructure(snapshot.config),
        }


_Encoded = tuple[Sequence[Any], list[dict[str, Any]]]
"""Objects and their unstructured forms, position by position."""


def _reencode(values: Sequence[Any], previous: _Encoded) -> _Encoded:
    """``values`` with their unstructured forms, reusing those of ``previous`` objects."""
    old_values, old_parts = previous
    same = list(map(operator.is_, values, old_values))
    parts = old_parts[: len(same)]
    changed = _positions_of_false(same)
    changed.extend(range(len(same), len(values)))
    # objects that moved (after a removal) are found by identity: the previous objects are
    # still referenced, so no other live object can have their id
    moved = dict(zip(map(id, old_values), old_parts, strict=True)) if len(changed) > 1 else {}
    for i in changed:
        value = values[i]
        part = moved.get(id(value))
        if part is None:
            part = _CONVERTER.unstructure(value, type(value))
        if i < len(parts):
            parts[i] = part
        else:
            parts.append(part)
    return values, parts


def _positions_of_false(flags: list[bool]) -> list[int]:
    positions: list[int] = []
    with suppress(ValueError):
        while True:
            positions.append(flags.index(False, positions[-1] + 1 if positions else 0))
    return positions


def structure_snapshot(data: Any) -> Snapshot:
    """Validate and build a snapshot; raise :class:`SnapshotError` naming every bad path."""
    if not isinstance(data, Mapping):
        raise SnapshotError(f"state is a {type(data).__name__}, not a mapping")
    version = data.get("version")
    if version != SNAPSHOT_VERSION:
        raise SnapshotError(
            f"unsupported state version {version!r} (this build reads version {SNAPSHOT_VERSION})"
        )
    try:
        snapshot: Snapshot = _CONVERTER.structure(dict(data), Snapshot)
    except (cattrs.BaseValidationError, ValueError, TypeError) as exc:
        if isinstance(exc, cattrs.BaseValidationError):
            problems = tuple(cattrs.transform_error(exc, path="state", format_exception=_describe))
        else:
            problems = (str(exc),)
        raise SnapshotError("invalid state", problems) from None
    _check_consistency(snapshot)
    return snapshot


def _describe(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, ForbiddenExtraKeysError):
        return "unknown field(s) " + ", ".join(sorted(exc.extra_fields))
    if isinstance(exc, KeyError):
        return "required field missing"
    text = str(exc)
    if text:
        return text
    return f"invalid value, expected {getattr(type_, '__name__', type_)}"


def _check_consistency(snapshot: Snapshot) -> None:
    problems: list[str] = []
    pod_ids = [p.id for p in snapshot.pods]
    if len(set(pod_ids)) != len(pod_ids):
        problems.append("state.pods: duplicate pod ids")
    ctr_ids = [c.id for c in snapshot.containers]
    if len(set(ctr_ids)) != len(ctr_ids):
        problems.append("state.containers: duplicate container ids")
    known = set(pod_ids)
    for i, ctr in enumerate(snapshot.containers):
        if ctr.pod_id not in known:
            problems.append(f"state.containers[{i}].pod_id: unknown pod {ctr.pod_id!r}")
    if problems:
        raise SnapshotError("inconsistent state", tuple(problems))
