"""Kubernetes resource quantities (``750m``, ``2``, ``1.5``, ``2Gi``, ``500M``, ``1e3``).

Parsing and canonical formatting follow ``k8s.io/apimachinery/pkg/api/resource``: values are
exact (held as a fraction), precision below one nano-unit is rounded up, and formatting keeps
the suffix family the value was written in (binary ``Ki..Ei``, decimal ``n..E``, or ``eN``).
"""

from __future__ import annotations

import enum
import math
import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

import attrs

from nrirp.domain.config.errors import InvalidValue


class QuantityError(ValueError):
    """Raised for text that is not a Kubernetes quantity (quotes the text)."""


class QuantityFormat(enum.Enum):
    BINARY_SI = "BinarySI"
    DECIMAL_SI = "DecimalSI"
    DECIMAL_EXPONENT = "DecimalExponent"


_PATTERN = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))"
    r"(?P<suffix>[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exp: suffix for suffix, exp in _DECIMAL.items()}
_MAX_EXPONENT = 64
_MAX_MAGNITUDE = Fraction(2**63 - 1)
_NANO = 10**9
_EXPECTED = "a quantity such as '750m', '2', '1.5' or '2Gi'"


def _round_to_nano(value: Fraction) -> Fraction:
    scaled = value * _NANO
    if scaled.denominator == 1:
        return value
    # round away from zero, as the reference does when precision would be lost
    nanos = math.ceil(scaled) if scaled > 0 else math.floor(scaled)
    return Fraction(nanos, _NANO)


def _decimal_parts(nanos: int, max_exponent: int | None) -> tuple[int, int]:
    """Split ``nanos`` (the value in nano-units) into ``mantissa * 10**exponent``, where the
    exponent is a multiple of 3 (at least -9, at most ``max_exponent``) and as large as possible."""
    if nanos == 0:
        return 0, 0
    exponent = -9
    while (max_exponent is None or exponent + 3 <= max_exponent) and nanos % 1000 == 0:
        nanos //= 1000
        exponent += 3
    return nanos, exponent


@attrs.frozen(order=True, repr=False)
class Quantity:
    """An exact Kubernetes quantity. Equality and ordering compare the value only."""

    value: Fraction
    format: QuantityFormat = attrs.field(default=QuantityFormat.DECIMAL_SI, eq=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Parse quantity text; raises :class:`QuantityError` naming the text."""
        match = _PATTERN.fullmatch(text)
        if match is None:
            raise QuantityError(f"invalid quantity {text!r}")
        try:
            number = Fraction(Decimal(match["number"]))
        except (InvalidOperation, ValueError):  # pragma: no cover - the pattern rules this out
            raise QuantityError(f"invalid quantity {text!r}") from None
        suffix = match["suffix"] or ""
        fmt = QuantityFormat.DECIMAL_SI
        if suffix in _BINARY:
            number *= 1024 ** _BINARY[suffix]
            fmt = QuantityFormat.BINARY_SI
        elif suffix in _DECIMAL:
            number *= Fraction(10) ** _DECIMAL[suffix]
        else:
            exponent = int(suffix[1:])
            if abs(exponent) > _MAX_EXPONENT:
                raise QuantityError(f"invalid quantity {text!r}: exponent out of range")
            number *= Fraction(10) ** exponent
            fmt = QuantityFormat.DECIMAL_EXPONENT
        if abs(number) > _MAX_MAGNITUDE:
            raise QuantityError(f"invalid quantity {text!r}: value out of range")
        return cls(_round_to_nano(number), fmt)

    @classmethod
    def of(cls, number: int | float | Fraction | Decimal) -> Quantity:
        """A decimal quantity from a number (as YAML gives for ``cpu: 2`` or ``cpu: 1.5``)."""
        if isinstance(number, float):
            if not math.isfinite(number):
                raise QuantityError(f"invalid quantity {number!r}")
            return cls.parse(repr(number))
        value = Fraction(number)
        if abs(value) > _MAX_MAGNITUDE:
            raise QuantityError(f"invalid quantity {number!r}: value out of range")
        return cls(_round_to_nano(value))

    @classmethod
    def from_milli(cls, millis: int) -> Quantity:
        return cls(Fraction(millis, 1000))

    @classmethod
    def from_config(cls, value: Any) -> Quantity:
        """Structure hook: quantity text or a plain number."""
        try:
            if isinstance(value, str):
                return cls.parse(value)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return cls.of(value)
        except QuantityError as err:
            _, _, detail = str(err).partition(": ")
            raise InvalidValue(value, detail or f"expected {_EXPECTED}") from None
        raise InvalidValue(value, f"expected {_EXPECTED}")

    def to_config(self) -> str:
        return str(self)

    # ------------------------------------------------------------------ conversion
    def milli_value(self) -> int:
        """The value in thousandths, rounded up (``750m`` -> 750, ``1.5`` -> 1500)."""
        return math.ceil(self.value * 1000)

    def int_value(self) -> int:
        """The value rounded up to an integer (``2Gi`` -> 2147483648, ``100m`` -> 1)."""
        return math.ceil(self.value)

    def is_negative(self) -> bool:
        return self.value < 0

    def is_zero(self) -> bool:
        return self.value == 0

    def __str__(self) -> str:
        value = self.value
        if value == 0:
            return "0"
        sign = "-" if value < 0 else ""
        magnitude = abs(value)
        if (
            self.format is QuantityFormat.BINARY_SI
            and magnitude.denominator == 1
            and magnitude >= 1024
        ):
            number, power = int(magnitude), 0
            while power < 6 and number % 1024 == 0:
                number //= 1024
                power += 1
            suffix = {v: k for k, v in _BINARY.items()}.get(power, "")
            return f"{sign}{number}{suffix}"
        nanos = int(magnitude * _NANO)  # exact: parse rounds to nano-units
        if self.format is QuantityFormat.DECIMAL_EXPONENT:
            mantissa, exponent = _decimal_parts(nanos, None)
            return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")
        mantissa, exponent = _decimal_parts(nanos, 18)
        return f"{sign}{mantissa}{_DECIMAL_SUFFIX[exponent]}"

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"


_BYTE_SIZE = re.compile(r"\s*(\d+)\s*(?:([KMGT])(?:i?B|i)?)?\s*", re.ASCII)


def parse_byte_size(value: Any) -> int:
    """Bytes from an integer, or text with an optional binary suffix: ``48K``, ``48Ki``,
    ``48KiB``, ``48KB``, ``16G``, ``1TiB`` (K, M, G and T always count in 1024s, as the kernel
    reports memory and caches; fake-machine specs use this). The text is read as the quantity
    with the binary suffix (``48K`` is ``48Ki``). Raises :class:`InvalidValue`."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise InvalidValue(value, "size must not be negative")
        return value
    if isinstance(value, str) and (match := _BYTE_SIZE.fullmatch(value)):
        digits, unit = match.groups()
        return Quantity.parse(digits + (f"{unit}i" if unit else "")).int_value()
    raise InvalidValue(value, "expected a size such as 4096, '48K' or '16Gi'")
