"""The domain is pure: no I/O, no transport or wiring imports, in any of its modules."""

from __future__ import annotations

import ast
from pathlib import Path

import nrirp.domain as domain_package

FORBIDDEN_MODULES = (
    "asyncio",
    "socket",
    "subprocess",
    "grpc",
    "google.protobuf",
    "dependency_injector",
    "nrirp.adapters",
    "nrirp.app",
    "nrirp.simruntime",
    "os",
    "pathlib",
    "io",
    "shutil",
    "yaml",  # text is parsed by nrirp.adapters.documents; the domain gets data or a port
    "time",  # the Clock port (adapters.system.SystemClock) tells the time
)
FORBIDDEN_CALLS = ("open",)


def _sources() -> list[Path]:
    return sorted(Path(domain_package.__file__).parent.rglob("*.py"))


def test_no_forbidden_imports_or_calls() -> None:
    offences = []
    for source in _sources():
        tree = ast.parse(source.read_text(), filename=str(source))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in FORBIDDEN_CALLS
            ):
                offences.append(f"{source}:{node.lineno} calls {node.func.id}()")
            for name in names:
                if any(name == m or name.startswith(m + ".") for m in FORBIDDEN_MODULES):
                    offences.append(f"{source}:{node.lineno} imports {name}")
    assert len(_sources()) > 60
    assert offences == []
