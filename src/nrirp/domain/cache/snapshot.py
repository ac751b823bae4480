"""The persisted state: a versioned snapshot of the cache, with strict (de)serialization.

Structuring is strict: unknown keys, missing keys and values of the wrong type are refused
with every offending path listed, so a corrupt or foreign state file is never half-loaded.
"""

from __future__ import annotations

import gc
import operator
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import suppress
from types import MappingProxyType
from typing import Any

import attrs
import cattrs
from cattrs.errors import ForbiddenExtraKeysError
from cattrs.gen import make_dict_unstructure_fn, override

from nrirp.domain.cpuset import CPUSet, CPUSetError, structure_cpuset, unstructure_cpuset
from nrirp.domain.model import Container, LinuxResources, Mount, PendingChanges, Pod

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


def _shown(view: MappingProxyType[Any, Any]) -> Any:
    """The dict a read-only view (labels, annotations, tags) shows, not a copy of it: nothing
    modifies the one or the other (values are immutable, and forms are never modified), and a
    snapshot of a thousand containers holds a few thousand of them. The view refers to its
    mapping only (``gc.get_referents``), so that is the dict; any other mapping is copied."""
    inner = gc.get_referents(view)
    if len(inner) == 1 and type(inner[0]) is dict:
        return inner[0]
    return dict(view)


def _is_string_map(type_: Any) -> bool:
    """``Mapping[str, str]`` (labels, annotations, tags)."""
    return getattr(type_, "__origin__", None) in (Mapping, dict) and getattr(
        type_, "__args__", ()
    ) == (str, str)


def _shown_strings(value: Mapping[str, str]) -> Any:
    if type(value) is MappingProxyType:
        return _shown(value)
    return dict(value)


def _make_converter() -> cattrs.Converter:
    # fields at their default are left out: smaller state, and structuring fills them back in
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True, omit_if_default=True)
    conv.register_structure_hook(int, _strict(int))
    conv.register_structure_hook(str, _strict(str))
    conv.register_structure_hook(bool, _strict(bool))
    conv.register_structure_hook(float, _strict(float, accept=(int, float)))
    conv.register_structure_hook(CPUSet, _structure_cpuset)
    conv.register_unstructure_hook(CPUSet, unstructure_cpuset)
    conv.register_unstructure_hook(MappingProxyType, _shown)
    conv.register_unstructure_hook_func(_is_string_map, _shown_strings)
    conv.register_unstructure_hook_func(_is_set_type, lambda value: sorted(value))
    return conv


_CONVERTER = _make_converter()

_MOUNTS: dict[Mount, dict[str, Any]] = {}
_MOUNTS_KEPT = 4096
_unstructure_mount_fields: Callable[[Mount], dict[str, Any]] = make_dict_unstructure_fn(
    Mount, _CONVERTER, _cattrs_omit_if_default=True
)


def _unstructure_mount(mount: Mount) -> dict[str, Any]:
    """One form per distinct mount, shared by every container that has it (``/proc``,
    ``/sys`` ... in each of hundreds; the forms are never modified)."""
    form = _MOUNTS.get(mount)
    if form is None:
        if len(_MOUNTS) >= _MOUNTS_KEPT:
            _MOUNTS.clear()
        form = _unstructure_mount_fields(mount)
        if "options" in form:
            form["options"] = mount.options  # the mount's own tuple: JSON writes it as a list
        _MOUNTS[mount] = form
    return form


_CONVERTER.register_unstructure_hook(Mount, _unstructure_mount)


def unstructure_snapshot(snapshot: Snapshot) -> dict[str, Any]:
    """The snapshot as a JSON-compatible dict."""
    return SnapshotEncoder().encode(snapshot)


class SnapshotEncoder:
    """Unstructures snapshots, reusing the output for pods and containers unchanged since the
    previous call (values are immutable, so an unchanged object is the very same object).

    Between two operations almost every object is unchanged and in the same place, so the
    comparison with the previous snapshot runs position by position at C speed and only the
    objects that differ are looked up or unstructured. A container that changed is
    unstructured from its previous version's form, field by field (:class:`_Fieldwise`); an
    unchanged configuration or policy data keeps its form. The returned dicts share those
    parts between calls: consumers must not modify them, and the encoder never modifies what
    it returned (a store may keep it, see :class:`~nrirp.domain.ports.state_store.StateStore`).
    """

    def __init__(self) -> None:
        self._pods: _Encoded = ((), [])
        self._containers: _Encoded = ((), [])
        self._policy_data: tuple[Any, Any] = (_NOTHING, None)
        self._config: tuple[Any, Any] = (_NOTHING, None)
        self._lock = threading.Lock()

    def encode(self, snapshot: Snapshot) -> dict[str, Any]:
        """The JSON-compatible form of ``snapshot`` (thread-safe)."""
        with self._lock:
            return self._encode_locked(snapshot)

    def _encode_locked(
        self, snapshot: Snapshot, pause: Callable[[], None] | None = None
    ) -> dict[str, Any]:
        self._pods = _reencode(snapshot.pods, self._pods, pause)
        self._containers = _reencode(snapshot.containers, self._containers, pause)
        # the same configuration (and policy data) as last time: the same unstructured form
        data_from, data = self._policy_data
        if snapshot.policy_data is not data_from and snapshot.policy_data != data_from:
            data = _CONVERTER.unstructure(snapshot.policy_data)
            self._policy_data = (snapshot.policy_data, data)
        config_from, config = self._config
        if snapshot.config is not config_from:
            config = _CONVERTER.unstructure(snapshot.config)
            self._config = (snapshot.config, config)
        return {
            "version": snapshot.version,
            "policy": snapshot.policy,
            "pods": self._pods[1],
            "containers": self._containers[1],
            "policy_data": data,
            "config": config,
        }

    def later(self, snapshot: Snapshot | Callable[[], Snapshot]) -> EncodedLater:
        """``snapshot`` as a mapping that is encoded when it is first read (given as a
        function, the snapshot is made then too)."""
        return EncodedLater(self, snapshot)


class EncodedLater(Mapping[str, Any]):
    """A snapshot in its JSON-compatible form, built by a :class:`SnapshotEncoder` on first read.

    The resource manager saves after every operation that changed something; unstructuring
    costs time for every container that changed (an exclusive container moves every shared
    container of its pool). Handing the store this mapping moves that work to where the store
    reads it: its background writer, or a flush. Snapshot values are immutable, so the result
    is what encoding at once would have given; a store that keeps only the latest snapshot
    never encodes the others.
    """

    __slots__ = ("_data", "_encoder", "_snapshot")

    def __init__(
        self, encoder: SnapshotEncoder, snapshot: Snapshot | Callable[[], Snapshot]
    ) -> None:
        self._encoder = encoder
        self._snapshot: Snapshot | Callable[[], Snapshot] | None = snapshot
        self._data: dict[str, Any] | None = None

    def prepare(self, pause: Callable[[], None] | None = None) -> None:
        """Encode now, calling ``pause`` between every :data:`PAUSE_EVERY` objects
        unstructured (a store's writer thread steps aside there for the event loop: a first
        save after a Synchronize unstructures every container)."""
        self._encoded(pause)

    def _encoded(self, pause: Callable[[], None] | None = None) -> dict[str, Any]:
        data = self._data
        if data is None:
            with self._encoder._lock:  # one encoding, even when two threads read at once
                data = self._data
                if data is None:
                    source = self._snapshot
                    assert source is not None
                    snapshot = source if isinstance(source, Snapshot) else source()
                    if pause is None:
                        data = self._encoder._encode_locked(snapshot)
                    else:
                        data = self._encoder._encode_locked(snapshot, pause)
                    self._data = data
                    self._snapshot = None
        return data

    def __getitem__(self, key: str) -> Any:
        return self._encoded()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._encoded())

    def __len__(self) -> int:
        return len(self._encoded())


_NOTHING = object()

_Encoded = tuple[Sequence[Any], list[dict[str, Any]]]
"""Objects and their unstructured forms, position by position."""


_FACTORY: Any = type(attrs.Factory(dict))


class _Fieldwise:
    """Unstructures a new version of a value from the unstructured form of its previous
    version: a field that holds the very same object keeps its form (or stays left out at
    its default), a changed one is unstructured alone by a hook cattrs generates for that
    field only. The result equals the whole-class hook's, keys in the same order.

    A changed cpuset is the usual change of a container: the labels, annotations, tags and
    requirements keep their forms, and so do the other fields of its resources (``nested``).
    """

    def __init__(self, cls: type, nested: Mapping[str, _Fieldwise] | None = None) -> None:
        fields = attrs.fields(cls)
        names = [a.name for a in fields]
        self._values_of = operator.attrgetter(*names)
        self._fields: list[tuple[str, Any, _Fieldwise | None, Any]] = []
        for a in fields:
            omitted: dict[str, Any] = {other: override(omit=True) for other in names}
            del omitted[a.name]
            alone: Any = make_dict_unstructure_fn(
                cls, _CONVERTER, _cattrs_omit_if_default=True, **omitted
            )
            inner = (nested or {}).get(a.name)
            default: Any = a.default
            if inner is not None and isinstance(default, _FACTORY):  # as cattrs: a product
                default = default.factory()
            self._fields.append((a.name, alone, inner, default))

    def unstructure(self, new: Any, old: Any, old_part: Mapping[str, Any]) -> dict[str, Any]:
        part: dict[str, Any] = {}
        for (name, alone, nested, default), value, previous in zip(
            self._fields, self._values_of(new), self._values_of(old), strict=True
        ):
            if value is previous:
                if name in old_part:
                    part[name] = old_part[name]
            elif nested is not None and name in old_part and value != default:
                part[name] = nested.unstructure(value, previous, old_part[name])
            else:
                part.update(alone(new))
        return part


_BY_TYPE: dict[type, _Fieldwise] = {}
_BY_TYPE_LOCK = threading.Lock()


def _fieldwise_hooks() -> dict[type, _Fieldwise]:
    """The per-field hooks, generated on first use (a few dozen cattrs functions: generating
    them at import would slow the daemon's start for what only the first save needs)."""
    if not _BY_TYPE:
        with _BY_TYPE_LOCK:
            if not _BY_TYPE:
                resources = _Fieldwise(LinuxResources)
                pending = _Fieldwise(PendingChanges, {"resources": resources})
                container = _Fieldwise(Container, {"resources": resources, "pending": pending})
                _BY_TYPE[Container] = container
    return _BY_TYPE


def _unstructure(value: Any, old: Any, old_part: Mapping[str, Any] | None) -> Any:
    """``value`` unstructured, from ``old``'s form when ``old`` is its previous version."""
    kind = type(value)
    fieldwise = _fieldwise_hooks().get(kind)
    if fieldwise is not None and old_part is not None and type(old) is kind and old.id == value.id:
        return fieldwise.unstructure(value, old, old_part)
    return _CONVERTER.unstructure(value, kind)


PAUSE_EVERY = 4
"""Objects unstructured between two calls of a ``pause`` given to :meth:`EncodedLater.prepare`."""


def _reencode(
    values: Sequence[Any], previous: _Encoded, pause: Callable[[], None] | None = None
) -> _Encoded:
    """``values`` with their unstructured forms, reusing those of ``previous`` objects."""
    old_values, old_parts = previous
    same = list(map(operator.is_, values, old_values))
    parts = old_parts[: len(same)]
    changed = _positions_of_false(same)
    changed.extend(range(len(same), len(values)))
    # objects that moved (after a removal) are found by identity: the previous objects are
    # still referenced, so no other live object can have their id
    moved = dict(zip(map(id, old_values), old_parts, strict=True)) if len(changed) > 1 else {}
    for count, i in enumerate(changed, 1):
        if pause is not None and count % PAUSE_EVERY == 0:
            pause()
        value = values[i]
        part = moved.get(id(value))
        if part is None:
            # most often a new version of the object that was in its place before
            if i < len(parts):
                part = _unstructure(value, old_values[i], old_parts[i])
            else:
                part = _unstructure(value, None, None)
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
