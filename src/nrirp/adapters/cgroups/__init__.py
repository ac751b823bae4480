"""cgroupfs host control: settings the runtime cannot carry, written to cgroup v1 or v2 files."""

from nrirp.adapters.cgroups.host_control import CgroupfsHostControl
from nrirp.adapters.cgroups.layout import CgroupLayout, CgroupVersion, detect_layout
from nrirp.adapters.cgroups.mapping import v1_writes
from nrirp.adapters.cgroups.paths import container_cgroup_path, expand_systemd_path

__all__ = [
    "CgroupLayout",
    "CgroupVersion",
    "CgroupfsHostControl",
    "container_cgroup_path",
    "detect_layout",
    "expand_systemd_path",
    "v1_writes",
]
