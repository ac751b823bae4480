"""``nrirp simulate``: replay a workload through the real pipeline and a simulated runtime.

The policy runs inside our NRI plugin, connected to the simulated runtime exactly as it would
be to containerd; the workload's steps drive the runtime like a kubelet. After every step each
container's cpus and mems (and CPU/memory settings) are printed as the runtime holds them: a
table, or one JSON document with ``--json``. See ``docs/simulator.md``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from nrirp.app.commands.common.hardware_source import add_hardware_arguments
from nrirp.app.commands.common.parsing import (
    add_command_parser,
    add_log_level_argument,
    add_policy_argument,
)

HELP = "replay a workload through a policy on real or fake hardware and show the results"

EXIT_OK = 0
EXIT_STEPS = 1
EXIT_INPUT = 2
EXIT_HARDWARE = 3
EXIT_START = 4
EXIT_INTERNAL = 5
EXIT_CODES = {
    EXIT_OK: "every step went as expected",
    EXIT_STEPS: "the replay ran, but some steps did not go as expected: one failed "
    "unexpectedly or an expect check did not hold (see the output)",
    EXIT_INPUT: "bad command line, unknown policy, policy module, workload or config file",
    EXIT_HARDWARE: "hardware discovery failed or the machine is unknown",
    EXIT_START: "the policy refused to start with its configuration",
    EXIT_INTERNAL: "unexpected internal error (see the log)",
}

log = logging.getLogger("nrirp.simulate")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = add_command_parser(subparsers, "simulate", HELP, "docs/simulator.md", EXIT_CODES)
    add_hardware_arguments(parser)
    add_policy_argument(parser)
    parser.add_argument(
        "--config",
        "--config-file",
        dest="config",
        metavar="FILE",
        help="policy configuration (YAML/JSON spec or custom resource); default: the "
        "policy's defaults",
    )
    parser.add_argument(
        "--workload", required=True, metavar="FILE", help="the workload to replay (YAML)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument(
        "--svg",
        metavar="DIR",
        help="also draw the machine after every step, one SVG file per step in DIR "
        "(step-001.svg, ...; docs/pictures.md)",
    )
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="also write one self-contained HTML page with the pictures of all steps",
    )
    parser.add_argument(
        "--policy-module",
        metavar="MODULE|FILE.py",
        action="append",
        default=None,
        help="import a module (or a Python file) that registers policies; repeatable "
        "(default: $NRIRP_POLICY_MODULES)",
    )
    parser.add_argument(
        "--nri-version",
        metavar="VERSION",
        help="NRI release the simulated runtime behaves like, e.g. v0.6.1 (containerd "
        "1.7.24); default v0.12.2",
    )
    add_log_level_argument(parser, "error", "log level of the components, on stderr")
    return parser


def run(args: argparse.Namespace) -> int:
    from nrirp.adapters.system import configure_logging

    configure_logging(args.log_level, "text")
    try:
        return _run(args)
    except BrokenPipeError:
        raise  # the reader went away: the CLI ends quietly
    except Exception:
        log.exception("nrirp simulate failed")
        return EXIT_INTERNAL


def _fail(code: int, message: str) -> int:
    print(f"nrirp simulate: {message}", file=sys.stderr)
    return code


def _run(args: argparse.Namespace) -> int:
    import asyncio
    import json

    from nrirp.adapters.fakehw import MachineSpecError, UnknownMachineError
    from nrirp.adapters.system import ConfigFileError
    from nrirp.app.commands.common.hardware_source import hardware_from_args
    from nrirp.app.composition import PolicyModuleError
    from nrirp.app.simulator import (
        WorkloadError,
        build_simulator,
        load_workload,
        replay,
        replay_document,
        replay_result,
        replay_table,
    )
    from nrirp.domain.config import ConfigError
    from nrirp.domain.pipeline import OperationFailedError
    from nrirp.domain.policy import UnknownPolicyError
    from nrirp.domain.ports.hardware import HardwareDiscoveryError
    from nrirp.simruntime import SimRuntimeError

    try:
        workload = load_workload(args.workload)
    except OSError as exc:
        return _fail(EXIT_INPUT, f"cannot read workload {args.workload}: {exc.strerror or exc}")
    except WorkloadError as exc:
        return _fail(EXIT_INPUT, str(exc))
    try:
        hardware, source = hardware_from_args(args)
    except (MachineSpecError, UnknownMachineError) as exc:
        return _fail(EXIT_HARDWARE, str(exc))
    try:
        container = build_simulator(
            args.policy,
            hardware=hardware,
            config_file=args.config,
            policy_modules=args.policy_module,
            nri_version=args.nri_version,
        )
        container.core.policy()
        config = container.core.policy_config()
        container.runtime()
    except (UnknownPolicyError, PolicyModuleError, ConfigFileError) as exc:
        return _fail(EXIT_INPUT, str(exc))
    except ConfigError as exc:
        return _fail(EXIT_INPUT, f"configuration {args.config}: {exc}")
    except SimRuntimeError as exc:
        return _fail(EXIT_INPUT, str(exc))
    except HardwareDiscoveryError as exc:
        return _fail(EXIT_HARDWARE, f"hardware discovery failed: {exc}")
    try:
        container.core.resource_manager().start(config)
    except OperationFailedError as exc:
        return _fail(EXIT_START, f"policy {args.policy} refused to start: {exc.reason}")
    steps = asyncio.run(replay(container, workload))
    result = replay_result(container, workload, steps, hardware=source, config_file=args.config)
    if args.json:
        print(json.dumps(replay_document(result), indent=2))
    else:
        print(replay_table(result))
    if args.svg or args.html:
        try:
            _draw(args, result, container.core.machine())
        except OSError as exc:
            return _fail(EXIT_INPUT, f"cannot write the pictures: {exc}")
    return EXIT_STEPS if result.unexpected else EXIT_OK


def _draw(args: argparse.Namespace, result: Any, machine: Any) -> None:
    """The pictures of every step: SVG files in ``--svg``, one page in ``--html``."""
    from nrirp.app.pictures import render_html, write_svg_files
    from nrirp.app.pictures.replay import replay_frames

    frames = replay_frames(result, machine)
    if args.svg:
        write_svg_files(frames, args.svg)
    if args.html:
        page = render_html(frames, f"{result.policy} on {result.hardware}: {result.workload}")
        with open(args.html, "w", encoding="utf-8") as out:
            out.write(page)
