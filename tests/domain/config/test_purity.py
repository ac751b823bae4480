"""The config package is domain code: no I/O, no transport or wiring imports."""

from __future__ import annotations

import ast
from pathlib import Path

import nrirp.domain.config as config_package

FORBIDDEN_MODULES = (
    "asyncio",
    "socket",
    "subprocess",
    "grpc",
    "google.protobuf",
    "dependency_injector",
    "nrirp.adapters",
    "nrirp.app",
    "os",
    "pathlib",
    "io",
    "shutil",
)
FORBIDDEN_CALLS = ("open",)


def _sources() -> list[Path]:
    return sorted(Path(config_package.__file__).parent.glob("*.py"))


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
                offences.append(f"{source.name}:{node.lineno} calls {node.func.id}()")
            for name in names:
                if any(name == m or name.startswith(m + ".") for m in FORBIDDEN_MODULES):
                    offences.append(f"{source.name}:{node.lineno} imports {name}")
    assert len(_sources()) > 10
    assert offences == []
