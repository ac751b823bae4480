"""``availableResources`` / ``reservedResources``: CPUs as a cpuset or an amount, and memory."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from nrirp.domain.config.errors import InvalidValue, Issue, quote
from nrirp.domain.config.keys import ref
from nrirp.domain.config.quantity import Quantity
from nrirp.domain.cpuset import CPUSet, CPUSetError

CPUSET_PREFIX = "cpuset:"
EXCLUDE_CPUSET_PREFIX = "exclude-cpuset:"
_EXPECTED = "expected 'cpuset:<cpu list>', 'exclude-cpuset:<cpu list>' or a quantity like '750m'"


@attrs.frozen
class CPUResource:
    """The ``cpu`` entry: exactly one of an explicit ``cpuset`` (possibly to be excluded from
    the online CPUs) or an ``amount`` of CPU that the policy picks CPUs for."""

    cpuset: CPUSet | None = None
    exclude: bool = False
    amount: Quantity | None = None

    @classmethod
    def of_cpuset(cls, cpus: CPUSet, *, exclude: bool = False) -> CPUResource:
        return cls(cpuset=cpus, exclude=exclude)

    @classmethod
    def of_amount(cls, amount: Quantity) -> CPUResource:
        return cls(amount=amount)

    @classmethod
    def from_config(cls, value: Any) -> CPUResource:
        """Structure hook: ``cpuset:0-3``, ``exclude-cpuset:0,1``, ``750m``, ``2`` or ``1.5``."""
        if isinstance(value, str):
            text = value.strip()
            for prefix, exclude in ((CPUSET_PREFIX, False), (EXCLUDE_CPUSET_PREFIX, True)):
                if text.startswith(prefix):
                    try:
                        cpus = CPUSet.parse(text[len(prefix) :])
                    except CPUSetError as err:
                        raise InvalidValue(
                            value, f"expected a cpu list after {prefix!r} ({err})"
                        ) from None
                    return cls(cpuset=cpus, exclude=exclude)
        try:
            return cls(amount=Quantity.from_config(value))
        except InvalidValue:
            raise InvalidValue(value, _EXPECTED) from None

    def to_config(self) -> str:
        if self.cpuset is None:
            return str(self.amount)
        return (EXCLUDE_CPUSET_PREFIX if self.exclude else CPUSET_PREFIX) + str(self.cpuset)

    def __attrs_post_init__(self) -> None:
        if (self.cpuset is None) == (self.amount is None):
            raise ValueError("CPUResource needs exactly one of a cpuset or an amount")

    def __str__(self) -> str:
        return self.to_config()


@attrs.frozen(kw_only=True)
class ResourceConstraints:
    """Resources given to (or reserved from) the policy; unset entries mean 'everything'."""

    cpu: CPUResource | None = attrs.field(default=None, metadata=ref("cpu"))
    memory: Quantity | None = attrs.field(default=None, metadata=ref("memory"))

    def config_problems(self) -> Iterator[Issue]:
        cpu = self.cpu
        if cpu is not None and cpu.amount is not None and cpu.amount.is_negative():
            yield ("cpu",), f"invalid value {quote(str(cpu))}: must not be negative"
        if cpu is not None and cpu.cpuset is not None and not cpu.exclude and not cpu.cpuset:
            yield ("cpu",), f"invalid value {quote(str(cpu))}: the cpuset is empty"
        if self.memory is not None and self.memory.is_negative():
            yield ("memory",), f"invalid value {quote(str(self.memory))}: must not be negative"

    def is_empty(self) -> bool:
        return self.cpu is None and self.memory is None
