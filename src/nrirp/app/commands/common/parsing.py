"""Argument-parser pieces that several commands share."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

LOG_LEVELS = ("debug", "info", "warning", "error")


def add_command_parser(
    subparsers: Any, name: str, help_text: str, doc: str, exit_codes: Mapping[int, str]
) -> argparse.ArgumentParser:
    """The subparser of a command whose ``--help`` points at ``doc`` and lists its exit codes."""
    codes = "\n".join(f"  {code}  {text}" for code, text in exit_codes.items())
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=help_text,
        description=f"{help_text}. See {doc}.",
        epilog="exit codes:\n" + codes,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def add_policy_argument(parser: argparse.ArgumentParser) -> None:
    """``--policy NAME`` (required)."""
    parser.add_argument("--policy", required=True, metavar="NAME", help="policy to run")


def add_log_level_argument(parser: argparse.ArgumentParser, default: str, where: str) -> None:
    """``--log-level`` with ``default``; ``where`` says what is logged where."""
    parser.add_argument(
        "--log-level",
        default=default,
        choices=LOG_LEVELS,
        help=f"{where} (default: %(default)s)",
    )


def non_negative_seconds(text: str) -> float:
    """An argparse ``type``: a finite number of seconds, ``0`` or more."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more seconds, got {text!r}")
    return value
