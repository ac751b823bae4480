"""Converters that make mapping fields of attrs values read-only copies, and a cheap copy."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeVar

T = TypeVar("T")

EMPTY_MAP: Mapping[str, Any] = MappingProxyType({})
"""A shared read-only empty mapping (the default of mapping fields: nothing can change it)."""


def frozen_map(value: Mapping[str, str] | None) -> Mapping[str, str]:
    """Copy ``value`` into a read-only mapping."""
    if value is None:
        return MappingProxyType({})
    if isinstance(value, MappingProxyType):
        return value
    return MappingProxyType(dict(value))


def frozen_int_map(value: Mapping[str, int] | None) -> Mapping[str, int]:
    """Copy ``value`` into a read-only mapping."""
    if value is None:
        return MappingProxyType({})
    if isinstance(value, MappingProxyType):
        return value
    return MappingProxyType(dict(value))


def replaced(instance: T, changes: Mapping[str, Any]) -> T:
    """A copy of the frozen attrs ``instance`` with the fields in ``changes`` replaced.

    A fast ``attrs.evolve`` for the classes of this package that keep their fields in an
    instance ``__dict__``: one dict copy instead of ``__init__`` with every converter. No
    converter or validator runs, so the values must already be in their final form (read-only
    mappings, tuples, ...), as they are when taken from another instance of the same class.
    """
    copy: T = object.__new__(type(instance))
    state = instance.__dict__.copy()
    state.update(changes)
    object.__setattr__(copy, "__dict__", state)
    return copy


class FieldsEqual:
    """Equality of such a class by its fields, compared as one dict: identical values (most
    fields of a changed copy are the very same objects) are equal without calling their
    ``__eq__``. The class is unhashable, as attrs makes it with ``eq=True, hash=False``."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __ne__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.__dict__ != other.__dict__

    __hash__ = None  # type: ignore[assignment]
