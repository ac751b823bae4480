"""Go durations (``30s``, ``1m30s``, ``1.5h``, ``500ms``), exact to the nanosecond.

Parsing follows Go's ``time.ParseDuration`` and formatting its ``Duration.String`` so that a
value written back out reads the way the reference prints it.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

import attrs

from nrirp.domain.config.errors import InvalidValue


class DurationError(ValueError):
    """Raised for text that is not a Go duration (quotes the text)."""


_UNITS_NS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC greek small letter mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_COMPONENT = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_MAX_NS = 2**63 - 1
_SECOND = 1_000_000_000


def _fixed(value: int, scale: int) -> str:
    """``value / scale`` in decimal with trailing fractional zeros dropped."""
    whole, rest = divmod(value, scale)
    if not rest:
        return str(whole)
    width = len(str(scale)) - 1
    return f"{whole}.{str(rest).rjust(width, '0').rstrip('0')}"


@attrs.frozen(order=True, repr=False)
class Duration:
    """A signed time span in nanoseconds."""

    nanoseconds: int

    @classmethod
    def parse(cls, text: str) -> Duration:
        """Parse Go duration text; raises :class:`DurationError` naming the text."""
        body = text
        sign = 1
        if body[:1] in ("+", "-"):
            sign = -1 if body[0] == "-" else 1
            body = body[1:]
        if body == "0":
            return cls(0)
        if not body:
            raise DurationError(f"invalid duration {text!r}")
        total = Fraction(0)
        pos = 0
        while pos < len(body):
            match = _COMPONENT.match(body, pos)
            number = match.group(1) if match else ""
            if match is None or not any(c.isdigit() for c in number):
                raise DurationError(f"invalid duration {text!r}")
            whole, _, fraction = number.partition(".")
            amount = Fraction(int(whole or "0"))
            if fraction:
                amount += Fraction(int(fraction), 10 ** len(fraction))
            # Go truncates each component to whole nanoseconds
            total += int(amount * _UNITS_NS[match.group(2)])
            if total > _MAX_NS + (sign < 0):
                raise DurationError(f"invalid duration {text!r}: out of range")
            pos = match.end()
        return cls(sign * int(total))

    @classmethod
    def from_config(cls, value: Any) -> Duration:
        """Structure hook: Go duration text."""
        if isinstance(value, str):
            try:
                return cls.parse(value)
            except DurationError:
                pass
        raise InvalidValue(value, "expected a duration such as '30s', '1m30s' or '500ms'")

    def to_config(self) -> str:
        return str(self)

    def total_seconds(self) -> float:
        return self.nanoseconds / _SECOND

    def __str__(self) -> str:
        ns = self.nanoseconds
        if ns == 0:
            return "0s"
        sign = "-" if ns < 0 else ""
        u = abs(ns)
        if u < _SECOND:
            if u < 1_000:
                return f"{sign}{u}ns"
            if u < 1_000_000:
                return f"{sign}{_fixed(u, 1_000)}µs"
            return f"{sign}{_fixed(u, 1_000_000)}ms"
        seconds = _fixed(u % (60 * _SECOND), _SECOND) + "s"
        minutes = u // (60 * _SECOND)
        if not minutes:
            return sign + seconds
        hours, minutes = divmod(minutes, 60)
        return f"{sign}{f'{hours}h' if hours else ''}{minutes}m{seconds}"

    def __repr__(self) -> str:
        return f"Duration({str(self)!r})"
