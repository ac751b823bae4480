"""Hardware discovery port."""

from __future__ import annotations

from typing import Protocol

from nrirp.domain.topology import Machine


class HardwareDiscoveryError(Exception):
    """Raised when the hardware description cannot be read or makes no sense."""


class HardwareDiscovery(Protocol):
    """Discovers the machine's topology (sysfs on a real host, a spec for fakes)."""

    def discover(self) -> Machine:
        """Return the machine; raise :class:`HardwareDiscoveryError` on bad input."""
        ...
