"""Running a plugin as a command: the usual options, logging (never to stdout), exit codes.

A plugin's ``main`` builds its parser on :func:`base_parser`, calls :func:`setup_logging` and
hands :func:`run` a function that makes its :class:`Stub`; the example plugins
(``examples/plugins``) do exactly that.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable

from nrirp.adapters.nri.stub.errors import RegistrationError, StubError
from nrirp.adapters.nri.stub.stub import Stub

LOG_FILE_ENV = "NRIRP_LOG_FILE"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def base_parser(description: str) -> argparse.ArgumentParser:
    """Options every example takes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--socket",
        help="NRI socket of the runtime (external plugin; default /var/run/nri/nri.sock). "
        "Ignored when the runtime started the plugin (NRI_PLUGIN_SOCKET is set).",
    )
    parser.add_argument(
        "--name", help="plugin name (default: NRI_PLUGIN_NAME, argv[0], or built in)"
    )
    parser.add_argument("--index", help="two-digit plugin index (default: NRI_PLUGIN_IDX, ...)")
    parser.add_argument(
        "--log-file",
        default=os.environ.get(LOG_FILE_ENV),
        help=f"log here instead of stderr (default: ${LOG_FILE_ENV}); pre-launched plugins "
        "have stderr on /dev/null",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    parser.add_argument(
        "--no-reconnect",
        action="store_true",
        help="exit when the runtime goes away instead of reconnecting (external plugins)",
    )
    return parser


def setup_logging(log_file: str | None, level: str) -> None:
    """Log to ``log_file`` or stderr; nothing ever goes to stdout."""
    handler: logging.Handler = (
        logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def run(make_stub: Callable[[], Stub]) -> int:
    """Run the stub until SIGTERM/SIGINT (or, pre-launched, until the runtime closes).

    Returns the process exit code: 0 after a normal end, 1 if the plugin could not start, 2 for
    a plugin definition or identity error.
    """
    log = logging.getLogger("nrirp.examples")

    async def main() -> int:
        try:
            stub = make_stub()
        except StubError as exc:
            log.error("%s", exc)
            return 2
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stub.stop)
        try:
            await stub.run()
        except RegistrationError as exc:
            log.error("%s", exc)
            return 1
        except StubError as exc:
            log.error("%s", exc)
            return 2
        return 0

    return asyncio.run(main())
