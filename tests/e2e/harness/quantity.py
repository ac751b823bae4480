"""Kubernetes resource quantities ("500m", "2", "64Mi") as plain integers."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_QUANTITY = re.compile(r"^(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?P<suffix>[a-zA-Z]*)$")


class QuantityError(ValueError):
    """A resource quantity that Kubernetes would not accept."""


def _split(text: str) -> tuple[Decimal, str]:
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(f"invalid quantity {text!r}")
    try:
        return Decimal(match["number"]), match["suffix"]
    except InvalidOperation as exc:  # pragma: no cover - the regex already guards this
        raise QuantityError(f"invalid quantity {text!r}") from exc


def _ceil(value: Decimal) -> int:
    whole = int(value)
    return whole + 1 if value > whole else whole


def parse_milli_cpu(value: str | int | float) -> int:
    """CPU quantity in millicores, rounded up like Kubernetes' ``MilliValue()`` ("1.5" -> 1500)."""
    if isinstance(value, bool):
        raise QuantityError(f"invalid cpu quantity {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise QuantityError(f"negative cpu quantity {value!r}")
        return _ceil(Decimal(str(value)) * 1000)
    number, suffix = _split(value)
    if suffix == "m":
        return _ceil(number)
    if suffix == "":
        return _ceil(number * 1000)
    if suffix in _DECIMAL:
        return _ceil(number * _DECIMAL[suffix] * 1000)
    raise QuantityError(f"invalid cpu quantity {value!r} (unknown suffix {suffix!r})")


def parse_bytes(value: str | int) -> int:
    """Memory quantity in bytes, rounded up ("64Mi" -> 67108864, "1G" -> 10**9)."""
    if isinstance(value, bool):
        raise QuantityError(f"invalid memory quantity {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise QuantityError(f"negative memory quantity {value!r}")
        return value
    number, suffix = _split(value)
    if suffix == "":
        return _ceil(number)
    if suffix == "m":
        return _ceil(number / 1000)
    if suffix in _BINARY:
        return _ceil(number * _BINARY[suffix])
    if suffix in _DECIMAL:
        return _ceil(number * _DECIMAL[suffix])
    raise QuantityError(f"invalid memory quantity {value!r} (unknown suffix {suffix!r})")
