"""The cattrs converter for config values: strict types, reference key names, full error paths.

Structuring is strict (``"3"`` is not an integer, ``"yes"`` text is not a boolean, a string is not
a list), rejects unknown keys, and collects every problem instead of stopping at the first.
In a mapping for a config class, a ``null`` value means "not set", and so does an empty string
for an attribute whose default is ``None``.
Classes may define ``config_problems()`` (cross-field rules, run once the object is built) and
value types may define ``from_config(value)`` / ``to_config()`` for their own text forms.
"""

from __future__ import annotations

import contextvars
import difflib
import enum
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar, cast

import attrs
import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from nrirp.domain.config.errors import (
    ConflictingKeys,
    InvalidObject,
    InvalidValue,
    Issue,
    Path,
    quote,
)
from nrirp.domain.config.keys import field_aliases, field_key, key_map, key_of
from nrirp.domain.cpuset import CPUSet, CPUSetError

T = TypeVar("T")

_MAPPING_KEY_NOTE = "Structuring mapping key"
_RULE_CHECKS = contextvars.ContextVar("nrirp_config_rule_checks", default=True)

MAX_CHECKED_PROBLEMS = 100
"""Lists and mappings stop being checked once one :func:`structure` call has found this many
bad items: the report stays small and quick however long the input."""


class _Tally:
    """Bad items found so far by one :func:`structure` call."""

    def __init__(self) -> None:
        self.count = 0
        self.stopped = False


_TALLY: contextvars.ContextVar[_Tally | None] = contextvars.ContextVar(
    "nrirp_config_tally", default=None
)


class ChecksStopped(ValueError):
    """Stands for the items of a list or mapping left unchecked after too many problems."""

    def __init__(self, unchecked: int) -> None:
        super().__init__(
            f"{unchecked} more item{'s' if unchecked != 1 else ''} not checked"
            f" (checking stops after {MAX_CHECKED_PROBLEMS} problems)"
        )


def _stop_after_problem(errors: list[Exception], unchecked: int) -> bool:
    """Count one bad item; when the budget is spent, note the unchecked rest (once per call)
    and say so."""
    tally = _TALLY.get()
    if tally is None:
        return False
    tally.count += 1
    if tally.count < MAX_CHECKED_PROBLEMS:
        return False
    if not tally.stopped and unchecked:
        errors.append(ChecksStopped(unchecked))
    tally.stopped = True
    return True


# ---------------------------------------------------------------------- primitives
def _structure_bool(value: Any, _: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise InvalidValue(value, "expected true or false")


def _structure_int(value: Any, _: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise InvalidValue(value, "expected an integer")


def _structure_float(value: Any, _: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise InvalidValue(value, "expected a number")


def _structure_str(value: Any, _: Any) -> str:
    if isinstance(value, str):
        return value
    raise InvalidValue(value, "expected a string")


def _structure_cpuset(value: Any, _: Any) -> CPUSet:
    if isinstance(value, str):
        try:
            return CPUSet.parse(value)
        except CPUSetError as err:
            raise InvalidValue(value, f"expected a cpu list such as '0-3,8' ({err})") from None
    raise InvalidValue(value, "expected a cpu list such as '0-3,8'")


def _structure_enum(value: Any, cls: type[enum.Enum]) -> enum.Enum:
    if isinstance(value, str | int) and not isinstance(value, bool):
        try:
            return cls(value)
        except ValueError:
            pass
    choices = ", ".join(quote(m.value) for m in cls)
    raise InvalidValue(value, f"expected one of {choices}")


STRICT_HOOKS: dict[type, Callable[[Any, Any], Any]] = {
    bool: _structure_bool,
    int: _structure_int,
    float: _structure_float,
    str: _structure_str,
}
"""The strict structure hooks for primitives (raising :class:`InvalidValue`), for every
converter of the project (fake-machine specs use them too)."""

structure_enum = _structure_enum
"""The strict structure hook for enumerations: a member's value, else :class:`InvalidValue`
listing the allowed values."""


def _unstructure_enum(value: enum.Enum) -> Any:
    return value.value


# ---------------------------------------------------------------------- containers
def _is_tuple_of(t: Any) -> bool:
    args = typing.get_args(t)
    return typing.get_origin(t) is tuple and len(args) == 2 and args[1] is Ellipsis


def _is_mapping(t: Any) -> bool:
    return typing.get_origin(t) in (Mapping, dict)


def _is_optional(t: Any) -> bool:
    return typing.get_origin(t) in (typing.Union, types.UnionType) and type(None) in (
        typing.get_args(t)
    )


def _note_for(error: Exception, note: str) -> Exception:
    error.add_note(note)
    return error


def _tuple_hook(conv: cattrs.Converter, t: Any) -> Callable[[Any, Any], tuple[Any, ...]]:
    element_type = typing.get_args(t)[0]
    element = conv.get_structure_hook(element_type)

    def structure(value: Any, _: Any) -> tuple[Any, ...]:
        if not isinstance(value, list | tuple):
            raise InvalidValue(value, "expected a list")
        out: list[Any] = []
        errors: list[Exception] = []
        for index, item in enumerate(value):
            try:
                out.append(element(item, element_type))
            except Exception as err:
                note = IterableValidationNote(f"Structuring item @ index {index}", index, t)
                errors.append(_note_for(err, note))
                if _stop_after_problem(errors, len(value) - index - 1):
                    break
        if errors:
            raise IterableValidationError("While structuring a list", errors, t)
        return tuple(out)

    return structure


def _mapping_hook(conv: cattrs.Converter, t: Any) -> Callable[[Any, Any], Mapping[Any, Any]]:
    key_type, value_type = typing.get_args(t)
    key_hook = conv.get_structure_hook(key_type)
    value_hook = conv.get_structure_hook(value_type)

    def structure(value: Any, _: Any) -> Mapping[Any, Any]:
        if not isinstance(value, Mapping):
            raise InvalidValue(value, "expected a mapping")
        out: dict[Any, Any] = {}
        errors: list[Exception] = []
        for position, (raw_key, item) in enumerate(value.items()):
            segment = raw_key if isinstance(raw_key, str) else str(raw_key)
            try:
                key = key_hook(raw_key, key_type)
                try:
                    out[key] = value_hook(item, value_type)
                except Exception as err:
                    text = f"Structuring mapping value @ {segment}"
                    errors.append(_note_for(err, IterableValidationNote(text, segment, t)))
                    if _stop_after_problem(errors, len(value) - position - 1):
                        break
            except Exception as err:
                note = IterableValidationNote(f"{_MAPPING_KEY_NOTE} @ {segment}", segment, t)
                errors.append(_note_for(err, note))
                if _stop_after_problem(errors, len(value) - position - 1):
                    break
        if errors:
            raise IterableValidationError("While structuring a mapping", errors, t)
        return types.MappingProxyType(out)

    return structure


def _optional_hook(conv: cattrs.Converter, t: Any) -> Callable[[Any, Any], Any]:
    rest = tuple(a for a in typing.get_args(t) if a is not type(None))
    inner: Any = rest[0] if len(rest) == 1 else typing.Union[rest]  # noqa: UP007
    inner_hook = conv.get_structure_hook(inner)

    def structure(value: Any, _: Any) -> Any:
        return None if value is None else inner_hook(value, inner)

    return structure


# ---------------------------------------------------------------------- config classes
def _has_custom_form(t: Any) -> bool:
    return isinstance(t, type) and callable(getattr(t, "from_config", None))


def _attrs_structure_hook(conv: cattrs.Converter, cls: type[T]) -> Callable[[Any, Any], T]:
    fields = attrs.fields(cast(Any, cls))
    renames = {f.name: override(rename=field_key(f)) for f in fields}
    generated = make_dict_structure_fn(
        cls,
        conv,
        _cattrs_forbid_extra_keys=True,
        _cattrs_detailed_validation=True,
        **renames,  # type: ignore[arg-type]
    )
    aliases = {alias: field_key(f) for f in fields for alias in field_aliases(f)}
    unset_when_empty = {field_key(f) for f in fields if f.default is None}

    def structure(value: Any, _: Any) -> T:
        if not isinstance(value, Mapping):
            raise InvalidValue(value, "expected a mapping")
        data: dict[Any, Any] = {}
        issues: list[Issue] = []
        for raw_key, item in value.items():
            key = aliases.get(raw_key, raw_key) if isinstance(raw_key, str) else raw_key
            if key != raw_key and key in value:
                issues.append(((raw_key,), f"conflicts with {key!r}: give only one of them"))
                continue
            if item is None or (item == "" and key in unset_when_empty):
                continue
            data[key] = item
        if issues:
            raise ConflictingKeys(issues)
        obj = generated(data, cls)
        check = getattr(obj, "config_problems", None)
        if check is not None and _RULE_CHECKS.get():
            found = list(check())
            if found:
                raise InvalidObject(found)
        return obj

    return structure


def _attrs_unstructure_hook(conv: cattrs.Converter, cls: type[Any]) -> Callable[[Any], Any]:
    fields = attrs.fields(cls)
    overrides = {
        f.name: override(rename=field_key(f), omit_if_default=f.default is None) for f in fields
    }
    generated = make_dict_unstructure_fn(cls, conv, **overrides)  # type: ignore[arg-type]
    order = [field_key(f) for f in fields]

    def unstructure(value: Any) -> dict[str, Any]:
        # cattrs emits omitted-if-unset keys last; keep the class's (the reference's) order
        out = generated(value)
        return {key: out[key] for key in order if key in out}

    return unstructure


def _build_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for primitive, hook in STRICT_HOOKS.items():
        conv.register_structure_hook(primitive, hook)
    conv.register_structure_hook(CPUSet, _structure_cpuset)
    conv.register_unstructure_hook(CPUSet, str)

    conv.register_structure_hook_factory(attrs.has, lambda t: _attrs_structure_hook(conv, t))
    conv.register_unstructure_hook_factory(attrs.has, lambda t: _attrs_unstructure_hook(conv, t))
    # singledispatch goes by the MRO, where a StrEnum is a str before it is an Enum
    for base in (enum.StrEnum, enum.IntEnum, enum.Enum):
        conv.register_structure_hook(base, _structure_enum)
        conv.register_unstructure_hook(base, _unstructure_enum)
    conv.register_structure_hook_factory(_is_tuple_of, lambda t: _tuple_hook(conv, t))
    conv.register_unstructure_hook_factory(
        _is_tuple_of, lambda t: lambda v: [conv.unstructure(i) for i in v]
    )
    conv.register_structure_hook_factory(_is_mapping, lambda t: _mapping_hook(conv, t))
    conv.register_unstructure_hook_factory(
        _is_mapping,
        lambda t: lambda v: {conv.unstructure(k): conv.unstructure(i) for k, i in v.items()},
    )
    conv.register_structure_hook_factory(_is_optional, lambda t: _optional_hook(conv, t))
    # value types with their own text form; registered last so they win over attrs.has
    conv.register_structure_hook_factory(
        _has_custom_form, lambda t: lambda value, _: t.from_config(value)
    )
    conv.register_unstructure_hook_factory(_has_custom_form, lambda t: lambda v: v.to_config())
    return conv


CONVERTER = _build_converter()


# ---------------------------------------------------------------------- errors
def _location(error: BaseException) -> AttributeValidationNote | IterableValidationNote | None:
    notes = [
        n
        for n in getattr(error, "__notes__", [])
        if isinstance(n, AttributeValidationNote | IterableValidationNote)
    ]
    return notes[-1] if notes else None


def _did_you_mean(cls: type, key: str) -> str:
    """`` (did you mean idleCPUClass?)`` for a key close to one of ``cls``'s (a case slip,
    a misspelling), else nothing."""
    try:
        known = list(key_map(cls).values())
    except (TypeError, attrs.exceptions.NotAnAttrsClassError):
        return ""
    folded = {k.lower(): k for k in known}
    close = folded.get(key.lower())
    if close is None:
        found = difflib.get_close_matches(key.lower(), list(folded), n=1, cutoff=0.8)
        close = folded[found[0]] if found else None
    return f" (did you mean {close}?)" if close is not None and close != key else ""


def issues_of(error: BaseException, path: Path = ()) -> Iterator[Issue]:
    """Flatten a structuring error into ``(path, message)`` issues with reference key names."""
    if isinstance(error, ClassValidationError):
        for sub in error.exceptions:
            where = _location(sub)
            if isinstance(sub, ForbiddenExtraKeysError):
                for key in sorted(sub.extra_fields, key=str):
                    name = key if isinstance(key, str) else str(key)
                    yield (*path, name), "unknown field" + _did_you_mean(sub.cl, name)
            elif isinstance(where, AttributeValidationNote):
                key = key_of(error.cl, where.name)
                if isinstance(sub, KeyError):
                    yield (*path, key), "required field missing"
                else:
                    yield from issues_of(sub, (*path, key))
            else:
                yield from issues_of(sub, path)
    elif isinstance(error, IterableValidationError):
        for sub in error.exceptions:
            where = _location(sub)
            if not isinstance(where, IterableValidationNote):
                yield from issues_of(sub, path)
            elif where.startswith(_MAPPING_KEY_NOTE):
                message = sub.describe("key") if isinstance(sub, InvalidValue) else str(sub)
                yield (*path, where.index), message
            else:
                yield from issues_of(sub, (*path, where.index))
    elif isinstance(error, InvalidValue):
        yield path, error.describe()
    elif isinstance(error, InvalidObject):  # rule violations and conflicting keys
        for relative, message in error.issues:
            yield (*path, *relative), message
    else:
        yield path, str(error) or type(error).__name__


def rule_issues(value: Any, path: Path = ()) -> Iterator[Issue]:
    """Every ``config_problems()`` issue in a structured value tree, with full paths."""
    if attrs.has(type(value)):
        for field in attrs.fields(type(value)):
            yield from rule_issues(getattr(value, field.name), (*path, field_key(field)))
        check = getattr(value, "config_problems", None)
        if check is not None:
            for relative, message in check():
                yield (*path, *relative), message
    elif isinstance(value, tuple):
        for index, item in enumerate(value):
            yield from rule_issues(item, (*path, index))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from rule_issues(item, (*path, str(key)))


def _only_rule_violations(error: BaseException) -> bool:
    if isinstance(error, ClassValidationError | IterableValidationError):
        return all(_only_rule_violations(sub) for sub in error.exceptions)
    return isinstance(error, InvalidObject) and not isinstance(error, ConflictingKeys)


def structure(data: Any, cls: type[T]) -> tuple[T | None, list[Issue]]:
    """Structure ``data`` into ``cls``; returns the value, or ``None`` and every issue found.

    Rules of an object are checked as soon as it is built, so they are reported together with
    type errors elsewhere; but a broken object cannot be part of its parent, which hides the
    parent's own rules. So when every problem found is a rule violation, the data is structured
    again without checks and the rules of the whole tree are collected in one walk.

    Lists and mappings stop being checked after :data:`MAX_CHECKED_PROBLEMS` bad items (an
    issue then says how many items were left unchecked)."""
    tally = _TALLY.set(_Tally())
    try:
        return CONVERTER.structure(data, cls), []
    except Exception as error:  # every failure becomes issues; nothing escapes unexplained
        first_pass = error
    finally:
        _TALLY.reset(tally)
    if not _only_rule_violations(first_pass):
        return None, list(issues_of(first_pass))
    token = _RULE_CHECKS.set(False)
    try:
        unchecked = CONVERTER.structure(data, cls)
    except Exception:  # pragma: no cover - only rule checks differ between the passes
        return None, list(issues_of(first_pass))
    finally:
        _RULE_CHECKS.reset(token)
    return None, list(rule_issues(unchecked))


def unstructure(value: Any, cls: type[Any] | None = None) -> Any:
    """Plain data (dicts, lists, strings, numbers) with the reference's key names."""
    return CONVERTER.unstructure(value, cast(Any, cls))
