"""The plugin's own configuration: the ``conf`` of its entry in ``/etc/nri/conf.json``.

Keys (all optional)::

    {"type": "nrirp", "conf": {
        "socket": "/run/nrirp/engine.sock",  # the daemon's engine API
        "mode": "auto",                       # auto | daemon | standalone
        "timeout": 10,                        # seconds to wait for the daemon
        "policy": "topology-aware",           # standalone: the policy (daemon: checked)
        "config": {...} | "configFile": "/etc/nrirp/config.yaml",   # standalone
        "stateDir": "/var/lib/nrirp", "sysfsRoot": "/sys", "cgroupRoot": "/sys/fs/cgroup",
        "policyModules": ["my.module"]}}

Unknown keys are refused (a typo must not silently fall back to a default).
"""

from __future__ import annotations

from nrirp.adapters.nri_v01.protocol import RequestError

DEFAULT_SOCKET = "/run/nrirp/engine.sock"
DEFAULT_STATE_DIR = "/var/lib/nrirp"
DEFAULT_SYSFS_ROOT = "/sys"
DEFAULT_CGROUP_ROOT = "/sys/fs/cgroup"
DEFAULT_TIMEOUT = 10.0
MODES = ("auto", "daemon", "standalone")

_STRINGS = {
    "socket": "socket",
    "mode": "mode",
    "policy": "policy",
    "configFile": "config_file",
    "stateDir": "state_dir",
    "sysfsRoot": "sysfs_root",
    "cgroupRoot": "cgroup_root",
}
_KNOWN = (*_STRINGS, "timeout", "config", "policyModules")


class PluginConf:
    """The parsed ``conf``; see the module docstring for the keys."""

    __slots__ = (
        "cgroup_root",
        "config",
        "config_file",
        "mode",
        "policy",
        "policy_modules",
        "socket",
        "state_dir",
        "sysfs_root",
        "timeout",
    )

    def __init__(self) -> None:
        self.socket = DEFAULT_SOCKET
        self.mode = "auto"
        self.timeout = DEFAULT_TIMEOUT
        self.policy = ""
        self.config: dict[str, object] | str | None = None
        self.config_file = ""
        self.state_dir = DEFAULT_STATE_DIR
        self.sysfs_root = DEFAULT_SYSFS_ROOT
        self.cgroup_root = DEFAULT_CGROUP_ROOT
        self.policy_modules: list[str] = []


def parse_conf(value: dict[str, object] | None) -> PluginConf:
    """The plugin configuration; raises :class:`RequestError` naming the key."""
    conf = PluginConf()
    if value is None:
        return conf
    for key, item in value.items():
        where = f"conf.{key}"
        if key in _STRINGS:
            if not isinstance(item, str) or not item:
                raise RequestError(f"{where}: expected a non-empty string")
            setattr(conf, _STRINGS[key], item)
        elif key == "timeout":
            if isinstance(item, bool) or not isinstance(item, int | float) or not 0 < item <= 600:
                raise RequestError(f"{where}: expected seconds, a number in (0, 600]")
            conf.timeout = float(item)
        elif key == "config":
            if not isinstance(item, dict | str):
                raise RequestError(f"{where}: expected the policy configuration (object or text)")
            conf.config = item
        elif key == "policyModules":
            if not isinstance(item, list) or not all(isinstance(m, str) and m for m in item):
                raise RequestError(f"{where}: expected a list of module names or .py files")
            conf.policy_modules = list(item)
        else:
            raise RequestError(f"{where}: unknown key; known: {', '.join(_KNOWN)}")
    if conf.mode not in MODES:
        raise RequestError(f"conf.mode: {conf.mode!r}; expected one of {', '.join(MODES)}")
    if conf.config is not None and conf.config_file:
        raise RequestError("conf: give config or configFile, not both")
    return conf
