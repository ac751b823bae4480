"""``nrirp run`` options of the engine-API modes (docs/daemon.md, docs/nri-v01.md)."""

from __future__ import annotations

import argparse

DEFAULT_ENGINE_SOCKET = "/run/nrirp/engine.sock"


def add_engine_api_arguments(parser: argparse.ArgumentParser) -> None:
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument(
        "--engine-api",
        action="store_true",
        help="serve the engine API (gRPC, nrirp.engine.v1) on --engine-socket instead of "
        "connecting to NRI: a node agent calls the lifecycle hooks and applies the results",
    )
    modes.add_argument(
        "--nri-v01",
        action="store_true",
        help="the engine of NRI v0.1 exec plugins (containerd 1.5/1.6): serve the engine API "
        "and the nrirp-nri-v01 client's requests on --engine-socket, write every decision "
        "into the containers' cgroups; no NRI socket",
    )
    parser.add_argument(
        "--engine-socket",
        metavar="PATH",
        default=DEFAULT_ENGINE_SOCKET,
        help="unix socket of the engine API, mode 0600 (default: %(default)s)",
    )
