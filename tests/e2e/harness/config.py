"""containerd's private directory layout and its config file (version 2 schema)."""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from .image import IMAGE_REF


@attrs.frozen
class ContainerdOptions:
    """Tunables of a test containerd; the defaults are containerd's own NRI defaults."""

    registration_timeout: str = "5s"
    request_timeout: str = "2s"
    log_level: str = "debug"
    nri_enabled: bool = True
    sandbox_image: str = IMAGE_REF


@attrs.frozen
class Layout:
    """Every path of one containerd instance, all below ``root``."""

    root: Path

    @property
    def config(self) -> Path:
        return self.root / "config.toml"

    @property
    def log(self) -> Path:
        return self.root / "containerd.log"

    @property
    def data_root(self) -> Path:
        return self.root / "root"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def address(self) -> Path:
        """containerd's gRPC socket (CRI and the containerd API)."""
        return self.run / "containerd.sock"

    @property
    def ttrpc_address(self) -> Path:
        return self.run / "containerd.sock.ttrpc"

    @property
    def debug_address(self) -> Path:
        return self.run / "debug.sock"

    @property
    def nri_socket(self) -> Path:
        return self.run / "nri.sock"

    @property
    def plugin_dir(self) -> Path:
        """NRI ``plugin_path``: pre-launched plugins (``NN-name`` executables)."""
        return self.root / "nri" / "plugins"

    @property
    def plugin_config_dir(self) -> Path:
        """NRI ``plugin_config_path``: ``NN-name.conf`` / ``name.conf`` for pre-launched plugins."""
        return self.root / "nri" / "conf.d"

    @property
    def runc_root(self) -> Path:
        """runc's state root; the shim appends the namespace (``.../k8s.io``)."""
        return self.state / "runc"

    @property
    def pod_logs(self) -> Path:
        return self.root / "pods"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    def directories(self) -> list[Path]:
        """Directories to create before the first start."""
        return [
            self.data_root,
            self.state,
            self.run,
            self.plugin_dir,
            self.plugin_config_dir,
            self.pod_logs,
            self.tmp,
            self.root / "opt",
            self.root / "cni" / "bin",
            self.root / "cni" / "conf",
        ]


def _q(value: str | Path) -> str:
    """A TOML basic string (JSON string escaping is valid TOML for these values)."""
    return json.dumps(str(value))


def common_sections(layout: Layout, options: ContainerdOptions, version: int) -> str:
    """What every schema version has alike: the paths, the sockets, the log level, NRI."""
    return f"""\
# written by the nrirp e2e harness
version = {version}
root = {_q(layout.data_root)}
state = {_q(layout.state)}

[grpc]
  address = {_q(layout.address)}

[ttrpc]
  address = {_q(layout.ttrpc_address)}

[debug]
  address = {_q(layout.debug_address)}
  level = {_q(options.log_level)}

[plugins."io.containerd.nri.v1.nri"]
  disable = {str(not options.nri_enabled).lower()}
  disable_connections = false
  socket_path = {_q(layout.nri_socket)}
  plugin_path = {_q(layout.plugin_dir)}
  plugin_config_path = {_q(layout.plugin_config_dir)}
  plugin_registration_timeout = {_q(options.registration_timeout)}
  plugin_request_timeout = {_q(options.request_timeout)}
"""


def render_config(layout: Layout, runc: Path, options: ContainerdOptions) -> str:
    """The containerd config: private paths everywhere, NRI as asked, CRI for cgroupfs + runc."""
    cri = '[plugins."io.containerd.grpc.v1.cri"'
    r = layout.root
    return (
        common_sections(layout, options, 2)
        + f"""
{cri}]
  sandbox_image = {_q(options.sandbox_image)}
  disable_apparmor = true
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

{cri}.cni]
  bin_dir = {_q(r / "cni" / "bin")}
  conf_dir = {_q(r / "cni" / "conf")}

{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

{cri}.containerd.runtimes.runc.options]
  BinaryName = {_q(runc)}
  Root = {_q(layout.runc_root)}
  SystemdCgroup = false

[plugins."io.containerd.internal.v1.opt"]
  path = {_q(r / "opt")}
"""
    )
