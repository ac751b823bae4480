"""Reference key names for config attributes.

Every config attribute carries the key the reference's CRD uses (``pinCPU``, ``minCPUs``,
``skip_headers``...) in its attrs metadata; structuring and unstructuring both use it.
Attributes without one get the lowerCamelCase form of their Python name.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import attrs

_KEY = "nrirp.config.key"
_ALIASES = "nrirp.config.aliases"


def ref(key: str, *aliases: str) -> dict[str, Any]:
    """attrs field metadata naming the reference key (and any accepted spelling aliases)."""
    return {_KEY: key, _ALIASES: tuple(aliases)}


def camel_case(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def field_key(field: attrs.Attribute[Any]) -> str:
    key = field.metadata.get(_KEY)
    return key if isinstance(key, str) else camel_case(field.name)


def field_aliases(field: attrs.Attribute[Any]) -> tuple[str, ...]:
    aliases = field.metadata.get(_ALIASES, ())
    return tuple(aliases)


@cache
def key_map(cls: type) -> Mapping[str, str]:
    """Attribute name -> reference key for an attrs class."""
    return {f.name: field_key(f) for f in attrs.fields(cls)}


def key_of(cls: type, attribute: str) -> str:
    """The reference key of ``cls.attribute``; KeyError for an unknown attribute."""
    return key_map(cls)[attribute]
