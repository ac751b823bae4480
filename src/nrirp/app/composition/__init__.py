"""What every composition is built from (dependency-injector containers).

- :class:`Ports`: the core's dependencies, one per domain port, typed by the port.
- :class:`CoreContainer`: machine, policy registry, policy, config and the resource manager.
- :class:`Adapters`: the base set of adapters; each environment subclasses it.
- :func:`core_over`: the core fed by an adapters container.
- :func:`make_policy_registry`: the built-in policies plus those of policy modules.

The compositions sit next to their entry points: ``nrirp.app.embed.composition``
(``EmbeddedContainer``), ``nrirp.app.daemon.composition`` (``DaemonContainer``, ``nrirp run``)
and ``nrirp.app.simulator.composition`` (``SimulatorContainer``, ``nrirp simulate``).
"""

from nrirp.app.composition.adapters import DEFAULT_SYSFS_ROOT, Adapters
from nrirp.app.composition.core import CoreContainer, Ports, core_over
from nrirp.app.composition.policies import (
    POLICY_MODULES_ENV,
    PolicyModuleError,
    make_policy_registry,
    policy_modules_from_env,
)

__all__ = [
    "DEFAULT_SYSFS_ROOT",
    "POLICY_MODULES_ENV",
    "Adapters",
    "CoreContainer",
    "PolicyModuleError",
    "Ports",
    "core_over",
    "make_policy_registry",
    "policy_modules_from_env",
]
