"""Hardware discovery and topology hints from a Linux sysfs tree (the real ``/sys`` or a fake
one)."""

from nrirp.adapters.sysfs.discovery import SysfsDiscovery
from nrirp.adapters.sysfs.hints import SysfsTopologyHints

__all__ = ["SysfsDiscovery", "SysfsTopologyHints"]
