"""Helpers for cross-field checks (``config_problems``) that report reference key paths."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from nrirp.domain.config.errors import Issue, Path, quote
from nrirp.domain.config.keys import key_of


def at(obj: Any, attribute: str, message: str, *rest: str | int) -> Issue:
    """An issue at ``obj.attribute`` (plus optional deeper segments), by reference key."""
    path: Path = (key_of(type(obj), attribute), *rest)
    return path, message


def check_range(
    obj: Any, attribute: str, low: int | None = None, high: int | None = None
) -> Iterator[Issue]:
    """``low <= obj.attribute <= high`` for an int attribute (``None`` values are not checked)."""
    value = getattr(obj, attribute)
    if value is None:
        return
    if low is not None and high is not None and not low <= value <= high:
        yield at(obj, attribute, f"invalid value {quote(value)}: must be between {low} and {high}")
    elif low is not None and value < low:
        yield at(obj, attribute, f"invalid value {quote(value)}: must be at least {low}")
    elif high is not None and value > high:
        yield at(obj, attribute, f"invalid value {quote(value)}: must be at most {high}")


def check_unique_names(obj: Any, attribute: str, items: Iterable[Any]) -> Iterator[Issue]:
    """Every item's ``name`` is non-empty and unique within ``obj.attribute``."""
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        name = item.name
        if not name:
            yield at(obj, attribute, "invalid value '': a name is required", index, "name")
        elif name in seen:
            yield at(
                obj,
                attribute,
                f"invalid value {quote(name)}: duplicate name (also used by item {seen[name]})",
                index,
                "name",
            )
        else:
            seen[name] = index


def check_reference(
    obj: Any, attribute: str, name: str | None, known: Iterable[str], what: str, *rest: str | int
) -> Iterator[Issue]:
    """``name`` (when set) is one of ``known``; the message lists what is defined."""
    if name is None:
        return
    names = sorted(set(known))
    if name not in names:
        defined = ", ".join(quote(n) for n in names) if names else "none are defined"
        yield at(obj, attribute, f"invalid value {quote(name)}: unknown {what} ({defined})", *rest)
