"""Converters that make mapping fields of attrs values read-only copies."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType


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
