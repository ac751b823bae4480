"""``nrirp run``'s recording options (``--record``; the recorder: ``app/daemon/recording.py``)."""

from __future__ import annotations

import argparse

DEFAULT_MAX_BYTES = 4 << 20
DEFAULT_FILES = 4


def _size(text: str) -> int:
    from nrirp.domain.config.errors import InvalidValue
    from nrirp.domain.config.quantity import parse_byte_size

    try:
        return parse_byte_size(int(text) if text.isdigit() else text)
    except InvalidValue as exc:
        raise argparse.ArgumentTypeError(exc.describe()) from None


def add_record_arguments(parser: argparse.ArgumentParser) -> None:
    """``--record FILE``, ``--record-max-bytes SIZE``, ``--record-files N``."""
    group = parser.add_argument_group("recording (docs/daemon.md, Record and replay)")
    group.add_argument(
        "--record",
        metavar="FILE",
        help="write every NRI event the daemon handles, with the machine, configuration and "
        "state, to FILE as a workload 'nrirp simulate' replays; rotated (FILE.1, ...)",
    )
    group.add_argument(
        "--record-max-bytes",
        metavar="SIZE",
        type=_size,
        help="size of one recording file, 64K to 4M (default: 4M, the simulator's limit)",
    )
    group.add_argument(
        "--record-files",
        metavar="N",
        type=int,
        help=f"recording files kept, the current one included (default: {DEFAULT_FILES})",
    )


def record_usage_problem(args: argparse.Namespace) -> str | None:
    """The recording's limits given without ``--record`` would be ignored: say so."""
    if args.record:
        return None
    given = [
        flag
        for flag, value in (
            ("--record-max-bytes", args.record_max_bytes),
            ("--record-files", args.record_files),
        )
        if value is not None
    ]
    if not given:
        return None
    verb = "limit" if len(given) > 1 else "limits"
    return f"{' and '.join(given)} {verb} a recording, and there is none: give --record FILE"


def record_limits(args: argparse.Namespace) -> tuple[int, int]:
    """The size of one recording file and how many are kept (the defaults where not given)."""
    max_bytes = DEFAULT_MAX_BYTES if args.record_max_bytes is None else args.record_max_bytes
    files = DEFAULT_FILES if args.record_files is None else args.record_files
    return max_bytes, files
