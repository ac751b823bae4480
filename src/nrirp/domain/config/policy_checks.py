"""Checks shared by the policy specs (reserved CPUs, class name references)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from nrirp.domain.config.control import ControlConfig
from nrirp.domain.config.cpu_class import CPUClass
from nrirp.domain.config.errors import Issue, quote
from nrirp.domain.config.resources import ResourceConstraints
from nrirp.domain.config.validation import at


def check_reserved_cpu(spec: Any, attribute: str = "reserved_resources") -> Iterator[Issue]:
    """The reference refuses to start without CPUs reserved for system containers."""
    reserved: ResourceConstraints = getattr(spec, attribute)
    cpu = reserved.cpu
    if cpu is None:
        yield at(spec, attribute, "required field missing", "cpu")
    elif cpu.amount is not None and cpu.amount.is_zero():
        yield at(spec, attribute, f"invalid value {quote(str(cpu))}: must be positive", "cpu")


def check_names_listed(
    spec: Any, attribute: str, names: Iterable[str], *rest: str | int
) -> Iterator[Issue]:
    """Every entry of a list of strings is non-empty."""
    for index, name in enumerate(names):
        if not name.strip():
            yield at(spec, attribute, "invalid value '': must not be empty", *rest, index)


def cpu_class_names(cpu_classes: Iterable[CPUClass], control: ControlConfig) -> set[str]:
    """Classes defined by the policy's ``cpuClasses`` and by ``control.cpu.classes``."""
    return {c.name for c in cpu_classes} | set(control.cpu.classes)
