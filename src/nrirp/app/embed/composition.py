"""The embedded composition: the engine of a host agent that handles the runtime itself."""

from __future__ import annotations

from dependency_injector import containers, providers

from nrirp.app.composition import Adapters, core_over


class EmbeddedContainer(containers.DeclarativeContainer):
    """The base set of adapters (no NRI) feeding the core, for :class:`~nrirp.app.embed.Engine`.

    The host must provide ``adapters.runtime_updates``
    (``container.adapters.runtime_updates.override(providers.Object(queue))``); state is
    kept in memory unless ``adapters.state_store`` is overridden; no host control unless
    ``adapters.host_control`` is; hardware is read from ``config.sysfs_root`` (``/sys``)
    unless ``adapters.hardware`` or ``core.machine`` is overridden. Configuration keys: those
    of :class:`~nrirp.app.composition.CoreContainer` and
    :class:`~nrirp.app.composition.Adapters`.
    """

    config = providers.Configuration()
    adapters = providers.Container(Adapters, config=config)
    core = core_over(adapters, config)
