"""The ``nrirp`` command line: a dispatcher over the modules of :mod:`nrirp.app.commands`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from nrirp import __version__
from nrirp.app.commands import command_modules


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one subcommand per command module."""
    parser = argparse.ArgumentParser(
        prog="nrirp", description="NRI resource policies for Kubernetes nodes."
    )
    parser.add_argument("--version", action="version", version=f"nrirp {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in command_modules():
        sub = module.add_parser(subparsers)
        sub.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    run: Callable[[argparse.Namespace], int] = args._run
    try:
        return run(args)
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): stop quietly, without a traceback at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
