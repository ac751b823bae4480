"""The daemon's composition (``nrirp run``): real adapters and our NRI plugin."""

from __future__ import annotations

from dependency_injector import containers, providers

from nrirp.adapters.cgroups import CgroupfsHostControl
from nrirp.adapters.nri.resmgr.plugin import ResourceManagerPlugin
from nrirp.adapters.nri.resmgr.service import PluginService
from nrirp.adapters.nri.resmgr.updates import NriRuntimeUpdates
from nrirp.adapters.nri.stub import Stub
from nrirp.adapters.storage import FileStateStore
from nrirp.app.composition import Adapters, core_over

DEFAULT_STATE_DIR = "/var/lib/nrirp"
DEFAULT_CGROUP_ROOT = "/sys/fs/cgroup"
DEFAULT_PLUGIN_NAME = "resource-manager"
DEFAULT_PLUGIN_INDEX = "90"


def file_state_store(state_dir: str | None) -> FileStateStore:
    return FileStateStore(state_dir or DEFAULT_STATE_DIR)


def cgroupfs_host_control(root: str | None) -> CgroupfsHostControl:
    return CgroupfsHostControl(root or DEFAULT_CGROUP_ROOT)


def nri_stub(
    plugin: ResourceManagerPlugin,
    name: str | None,
    index: str | None,
    socket_path: str | None,
) -> Stub:
    """The plugin's stub: external (``socket_path``, reconnecting) unless the runtime started
    the process (``NRI_PLUGIN_SOCKET``); name and index default like the reference's."""
    return Stub(
        plugin,
        name=name,
        index=index,
        socket_path=socket_path,
        default_name=DEFAULT_PLUGIN_NAME,
        default_index=DEFAULT_PLUGIN_INDEX,
    )


class DaemonAdapters(Adapters):
    """The base set, with the state file under ``state_dir`` (``/var/lib/nrirp``), cgroupfs
    under ``cgroup_root`` (``/sys/fs/cgroup``) for what NRI cannot carry, and updates sent
    over NRI."""

    state_store = providers.Singleton(file_state_store, Adapters.config.state_dir)
    host_control = providers.Singleton(cgroupfs_host_control, Adapters.config.cgroup_root)
    runtime_updates = providers.Singleton(NriRuntimeUpdates)


class DaemonContainer(containers.DeclarativeContainer):
    """``nrirp run``: :class:`DaemonAdapters` feeding the core, and the NRI ``plugin``, its
    ``stub`` and the ``service`` running both.

    Configuration keys: those of the core and the adapters, plus ``nri_socket``
    (``/var/run/nri/nri.sock``), ``plugin_name`` (``resource-manager``) and ``plugin_index``
    (``90``)."""

    config = providers.Configuration()
    adapters = providers.Container(DaemonAdapters, config=config)
    core = core_over(adapters, config)

    plugin = providers.Singleton(
        ResourceManagerPlugin, core.resource_manager, adapters.runtime_updates
    )
    stub = providers.Singleton(
        nri_stub, plugin, config.plugin_name, config.plugin_index, config.nri_socket
    )
    service = providers.Singleton(PluginService, stub, adapters.runtime_updates)
