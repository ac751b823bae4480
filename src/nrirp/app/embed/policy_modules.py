"""Policy modules given by name or by file path (``my_policies.py``)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from collections.abc import Sequence

from nrirp.app.containers import PolicyModuleError

_PREFIX = "nrirp_policy_file_"


def is_module_file(entry: str) -> bool:
    return entry.endswith(".py") or os.sep in entry


def import_module_file(path: str) -> str:
    """Import the Python file at ``path`` (once) and return the module name it is known by."""
    absolute = os.path.abspath(path)
    digest = hashlib.sha256(absolute.encode()).hexdigest()[:12]
    stem = os.path.splitext(os.path.basename(absolute))[0].replace("-", "_").replace(".", "_")
    name = f"{_PREFIX}{stem}_{digest}"
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


def resolve_policy_modules(entries: Sequence[str] | None) -> list[str] | None:
    """Module names for ``entries`` (module names, or ``.py`` files which are imported);
    ``None`` stays ``None`` (the ``NRIRP_POLICY_MODULES`` default applies)."""
    if entries is None:
        return None
    return [import_module_file(e) if is_module_file(e) else e for e in entries]
