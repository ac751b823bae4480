"""The daemon driven by the runtime over NRI: our plugin, its stub and the plugin service."""

from __future__ import annotations

import logging

from nrirp.adapters.nri.resmgr.plugin import ResourceManagerPlugin
from nrirp.adapters.nri.resmgr.service import PluginService
from nrirp.adapters.nri.stub import RegistrationError, Stub
from nrirp.app.daemon.front import FrontRegistrationError
from nrirp.app.daemon.health import RuntimeConnection, ServingState

log = logging.getLogger("nrirp.daemon")


class NriFront:
    """The NRI plugin ``plugin`` behind ``stub`` run by ``service``; ``connection`` follows
    the runtime connection (a pre-launched plugin is never synchronized)."""

    def __init__(
        self,
        plugin: ResourceManagerPlugin,
        stub: Stub,
        service: PluginService,
        connection: RuntimeConnection,
    ) -> None:
        self.plugin = plugin
        self.stub = stub
        self.service = service
        self.connection = connection
        connection.prelaunched = stub.prelaunched

    @property
    def name(self) -> str:
        return self.stub.full_name

    @property
    def state(self) -> ServingState:
        return self.connection

    def start(self) -> None:
        """Nothing to bind: the stub dials (or uses fd 3) when it runs."""

    async def run(self) -> None:
        try:
            await self.service.run()
        except RegistrationError as exc:
            raise FrontRegistrationError(str(exc)) from None

    def stop(self) -> None:
        self.service.stop()

    def configuration_changed(self) -> None:
        """A reloaded configuration may need other NRI events (PostStartContainer when
        settings wait for containers' processes): register again to change them."""
        if not self.plugin.subscription_stale():
            return
        if not self.stub.resubscribe():
            log.warning(
                "the configuration needs other NRI events than those subscribed to; they "
                "change when the plugin registers with the runtime again"
            )
