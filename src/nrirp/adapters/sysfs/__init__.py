"""Hardware discovery from a Linux sysfs tree (the real ``/sys`` or a fake one)."""

from nrirp.adapters.sysfs.discovery import SysfsDiscovery

__all__ = ["SysfsDiscovery"]
