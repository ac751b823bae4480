"""Reconnect delays for external plugins: exponential, capped and jittered."""

from __future__ import annotations

import random

import attrs


def _positive(_instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise ValueError(f"backoff {attribute.name} must be > 0, got {value!r}")


def _not_negative(_instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value >= 0:
        raise ValueError(f"backoff {attribute.name} must be >= 0, got {value!r}")


def _fraction(_instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not 0 <= value < 1:
        raise ValueError(f"backoff {attribute.name} must be in [0, 1), got {value!r}")


@attrs.frozen
class Backoff:
    """Delay before reconnect attempt ``n`` (0-based): ``min(maximum, initial * factor**n)``,
    scaled by a random factor in ``[1 - jitter, 1 + jitter]`` so that plugins restarted together
    do not redial in lock step. A connection that stayed up ``reset_after`` seconds starts the
    sequence again from ``initial``.

    The delays apply only while the runtime's socket is there but refuses: the stub checks the
    socket path every ``watch_interval`` seconds and dials as soon as it appears or is replaced
    by a new one, which also starts the sequence again (:mod:`~nrirp.adapters.nri.stub.redial`).
    """

    initial: float = attrs.field(default=0.5, validator=_positive)
    maximum: float = attrs.field(default=30.0, validator=_positive)
    factor: float = attrs.field(default=2.0, validator=_positive)
    jitter: float = attrs.field(default=0.2, validator=_fraction)
    reset_after: float = attrs.field(default=10.0, validator=_positive)
    watch_interval: float = attrs.field(default=0.05, validator=_positive)
    fresh_grace: float = attrs.field(default=1.0, validator=_not_negative)
    """For this long after a socket appeared (or was replaced), a dial it refuses is tried
    again every ``watch_interval`` instead of backing off: the runtime may have created the
    socket but not listen on it yet. 0 turns it off."""

    def base_delay(self, attempt: int) -> float:
        """The delay before jitter for attempt ``attempt``."""
        if attempt < 0:
            raise ValueError(f"attempt must be >= 0, got {attempt}")
        delay = self.initial
        for _ in range(attempt):
            delay *= self.factor
            if delay >= self.maximum:
                return self.maximum
        return min(delay, self.maximum)

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """The jittered delay for attempt ``attempt``."""
        base = self.base_delay(attempt)
        if not self.jitter:
            return base
        spread = (rng or random).uniform(-self.jitter, self.jitter)
        return base * (1.0 + spread)
