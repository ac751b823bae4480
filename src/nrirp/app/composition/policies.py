"""The policy registry of a composition: the built-in policies plus those of policy modules.

A policy module is a module name or a ``.py`` file defining ``register_policies(registry)``,
which calls ``registry.register(PolicyClass)`` for each of its policies.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType

from nrirp.domain.policies import builtin_registry
from nrirp.domain.policy import Policy, PolicyRegistry

POLICY_MODULES_ENV = "NRIRP_POLICY_MODULES"
"""Environment variable: comma-separated modules that register extra policies."""

_FILE_PREFIX = "nrirp_policy_file_"


class PolicyModuleError(Exception):
    """A policy module named in the configuration could not be loaded."""


def policy_modules_from_env(environ: Mapping[str, str] | None = None) -> list[str]:
    """The modules listed in ``NRIRP_POLICY_MODULES`` (comma-separated, blanks ignored)."""
    value = (os.environ if environ is None else environ).get(POLICY_MODULES_ENV, "")
    return [name.strip() for name in value.split(",") if name.strip()]


def make_policy_registry(modules: Sequence[str] | None = None) -> PolicyRegistry:
    """The built-in policies plus those of ``modules`` (module names or ``.py`` files;
    default: ``NRIRP_POLICY_MODULES``). Raises :class:`PolicyModuleError` naming the module."""
    registry = builtin_registry()
    for entry in policy_modules_from_env() if modules is None else modules:
        module = import_policy_module(entry)
        register = getattr(module, "register_policies", None)
        if not callable(register):
            raise PolicyModuleError(
                f"policy module {entry!r} has no register_policies(registry) function"
            )
        try:
            register(registry)
        except Exception as exc:
            raise PolicyModuleError(
                f"policy module {entry!r}: register_policies failed: {exc}"
            ) from exc
    return registry


def create_policy(registry: PolicyRegistry, name: str | None) -> Policy:
    """A fresh instance of the policy called ``name`` (``UnknownPolicyError`` lists the known)."""
    if not name:
        raise ValueError("no policy selected (config key 'policy')")
    return registry.create(name)


def is_module_file(entry: str) -> bool:
    return entry.endswith(".py") or os.sep in entry


def import_policy_module(entry: str) -> ModuleType:
    """The module ``entry`` names: imported by name, or a ``.py`` file imported once."""
    if is_module_file(entry):
        return sys.modules[import_module_file(entry)]
    try:
        return importlib.import_module(entry)
    except Exception as exc:
        raise PolicyModuleError(f"cannot import policy module {entry!r}: {exc}") from exc


def import_module_file(path: str) -> str:
    """Import the Python file at ``path`` (once) and return the module name it is known by."""
    absolute = os.path.abspath(path)
    digest = hashlib.sha256(absolute.encode()).hexdigest()[:12]
    stem = os.path.splitext(os.path.basename(absolute))[0].replace("-", "_").replace(".", "_")
    name = f"{_FILE_PREFIX}{stem}_{digest}"
    if name in sys.modules:
        return name
    spec = importlib.util.spec_from_file_location(name, absolute)
    if spec is None or spec.loader is None or not os.path.isfile(absolute):
        raise PolicyModuleError(f"cannot import policy module file {path!r}: no such file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise PolicyModuleError(f"cannot import policy module file {path!r}: {exc}") from exc
    return name
