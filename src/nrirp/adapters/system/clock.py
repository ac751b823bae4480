"""The process clock (the domain's default, re-exported for composition)."""

from nrirp.domain.ports.clock import SystemClock

__all__ = ["SystemClock"]
