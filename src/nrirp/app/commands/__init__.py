"""Subcommands of ``nrirp``: one module per command.

Every module in this package whose name does not start with an underscore is a command and
defines ``add_parser(subparsers) -> argparse.ArgumentParser`` (adding its subparser) and
``run(args) -> int``. Keep heavy imports inside ``run`` so ``nrirp --help`` stays fast.
Helpers shared by commands live in the :mod:`nrirp.app.commands.common` subpackage.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from typing import Any, Protocol, cast


class CommandModule(Protocol):
    """What a command module provides."""

    def add_parser(self, subparsers: Any) -> argparse.ArgumentParser: ...

    def run(self, args: argparse.Namespace) -> int: ...


def command_modules() -> list[CommandModule]:
    """The command modules, sorted by name."""
    modules = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.ispkg or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if not (
            callable(getattr(module, "add_parser", None)) and callable(getattr(module, "run", None))
        ):
            raise TypeError(f"command module {module.__name__} lacks add_parser() or run()")
        modules.append(cast(CommandModule, module))
    return modules
