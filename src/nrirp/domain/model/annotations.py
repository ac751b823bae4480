"""Effective annotations with the reference's precedence, and typed readers for them.

A policy annotation ``KEY`` (for example ``prefer-isolated-cpus.resource-policy.nri.io``) is
looked up on the pod as ``KEY/container.NAME``, then ``KEY/pod``, then ``KEY``: the first present
wins. Typed readers never raise: an unparsable value yields the default and is remembered as an
:class:`AnnotationProblem` so the caller can report it without failing the request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

import attrs

from nrirp.domain.config.duration import Duration, DurationError
from nrirp.domain.cpuset import CPUSet, CPUSetError
from nrirp.domain.ports.documents import clip

RESOURCE_POLICY_DOMAIN = "resource-policy.nri.io"

T = TypeVar("T")

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def policy_key(name: str, domain: str = RESOURCE_POLICY_DOMAIN) -> str:
    """Full annotation key for a short policy key: ``policy_key("cpu.preserve")``."""
    return f"{name}.{domain}"


def effective_annotation(
    annotations: Mapping[str, str], key: str, container_name: str
) -> tuple[str, str] | None:
    """``(matched_key, value)`` for ``key`` with container > pod > plain precedence."""
    for candidate in (f"{key}/container.{container_name}", f"{key}/pod", key):
        value = annotations.get(candidate)
        if value is not None:
            return candidate, value
    return None


def parse_bool(text: str) -> bool:
    """Go ``strconv.ParseBool``: 1/t/T/TRUE/true/True and 0/f/F/FALSE/false/False."""
    value = text.strip()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"invalid boolean {text!r}: expected true or false")


def parse_int(text: str) -> int:
    value = text.strip()
    try:
        return int(value, 10)
    except ValueError:
        raise ValueError(f"invalid integer {text!r}") from None


@attrs.frozen
class AnnotationProblem:
    """An annotation whose value could not be used."""

    key: str
    value: str
    reason: str

    def __str__(self) -> str:
        return f"annotation {self.key}={clip(repr(self.value))} ignored: {self.reason}"


@attrs.define
class AnnotationReader:
    """Typed access to one container's effective policy annotations.

    ``annotations`` are the pod's; keys passed to the readers are full keys (see
    :func:`policy_key`). Problems accumulate in :attr:`problems`.
    """

    annotations: Mapping[str, str]
    container_name: str
    problems: list[AnnotationProblem] = attrs.field(factory=list)

    def raw(self, key: str) -> str | None:
        found = effective_annotation(self.annotations, key, self.container_name)
        return None if found is None else found[1]

    def _typed(self, key: str, parse: Callable[[str], T], default: T) -> T:
        found = effective_annotation(self.annotations, key, self.container_name)
        if found is None:
            return default
        matched, value = found
        try:
            return parse(value)
        except (ValueError, CPUSetError, DurationError) as exc:
            self.problems.append(AnnotationProblem(matched, value, str(exc)))
            return default

    def get_string(self, key: str, default: str | None = None) -> str | None:
        value = self.raw(key)
        return default if value is None else value

    def get_bool(self, key: str, default: bool = False) -> bool:
        return self._typed(key, parse_bool, default)

    def get_optional_bool(self, key: str) -> bool | None:
        return self._typed(key, parse_bool, None)

    def get_int(self, key: str, default: int | None = None) -> int | None:
        return self._typed(key, parse_int, default)

    def get_cpuset(self, key: str, default: CPUSet | None = None) -> CPUSet | None:
        return self._typed(key, CPUSet.parse, default)

    def get_duration(self, key: str, default: Duration | None = None) -> Duration | None:
        return self._typed(key, Duration.parse, default)
