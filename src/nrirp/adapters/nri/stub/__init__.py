"""NRI plugin stub: serve a Python plugin to containerd / CRI-O over NRI.

The Python counterpart of the Go ``pkg/stub``. Subclass :class:`Plugin`, override the
``async def`` handlers of the events you care about, and run it::

    class MyPlugin(Plugin):
        async def create_container(self, pod, container):
            return api.container_adjustment(cpus="0-3")

    stub = Stub(MyPlugin(), name="my-plugin", index="10", socket_path="/var/run/nri/nri.sock")
    await stub.run()

- The subscription is the set of overridden event handlers, narrowed by ``configure`` and
  trimmed to what the runtime's NRI level accepts (see :mod:`nrirp.adapters.nri.versions`).
- Both the dedicated per-event RPCs (NRI >= 0.12) and ``StateChange`` are served; sync chunks are
  merged; missing handlers answer empty responses; ``validate_container_adjustment`` errors
  become rejections; a handler raising :class:`RequestRefused` fails the request with its
  message, logged as one line (other exceptions are logged with their traceback).
- :meth:`Stub.update_containers` (outside handlers) and :meth:`Stub.schedule_update_containers`
  (anywhere; after the reply when inside a handler) can never deadlock the runtime.
- External plugins reconnect as soon as the runtime's socket is back (:class:`Redialer`), with
  :class:`Backoff` only while it refuses; pre-launched ones use ``NRI_PLUGIN_SOCKET``.

See ``docs/nri-plugins.md``.
"""

from nrirp.adapters.nri.stub.backoff import Backoff
from nrirp.adapters.nri.stub.errors import (
    IdentityError,
    NotConnectedError,
    PluginDefinitionError,
    RegistrationError,
    StubError,
    UpdateFromHandlerError,
)
from nrirp.adapters.nri.stub.identity import PluginIdentity, resolve_identity
from nrirp.adapters.nri.stub.plugin import CreateResult, Plugin, Updates, discover_handlers
from nrirp.adapters.nri.stub.redial import Redial, Redialer, Wake
from nrirp.adapters.nri.stub.stub import (
    DEFAULT_REGISTRATION_TIMEOUT,
    DEFAULT_REQUEST_TIMEOUT,
    CloseHook,
    Stub,
)
from nrirp.adapters.nri.transport import RequestRefused

__all__ = [
    "DEFAULT_REGISTRATION_TIMEOUT",
    "DEFAULT_REQUEST_TIMEOUT",
    "Backoff",
    "CloseHook",
    "CreateResult",
    "IdentityError",
    "NotConnectedError",
    "Plugin",
    "PluginDefinitionError",
    "PluginIdentity",
    "Redial",
    "Redialer",
    "RegistrationError",
    "RequestRefused",
    "Stub",
    "StubError",
    "UpdateFromHandlerError",
    "Updates",
    "Wake",
    "discover_handlers",
    "resolve_identity",
]
