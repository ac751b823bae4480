"""``nrirp explain``: why a container sits where it does, or why it was refused.

Against a running daemon (its status socket ``<state-dir>/status.sock``, or ``--http``
ENDPOINT's ``/explain``), or against a simulate run: ``--workload`` replays the workload (up
to ``--step N``) as ``nrirp simulate`` does, then asks the policy. Prints the candidate pools
or balloons, each scoring item the policy compared, and why the winner won or why the
container was refused; ``--json`` prints the document (docs/explain.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.parse
from typing import Any

from nrirp.app.commands.common.hardware_source import add_hardware_arguments
from nrirp.app.commands.common.parsing import add_command_parser, add_log_level_argument

HELP = "explain why a container sits where it does (a running daemon or a simulate run)"

EXIT_OK = 0
EXIT_UNREACHABLE = 1
EXIT_INPUT = 2
EXIT_HARDWARE = 3
EXIT_START = 4
EXIT_INTERNAL = 5
EXIT_UNKNOWN = 6
EXIT_CODES = {
    EXIT_OK: "explained (the verdict may be a refusal: see the output)",
    EXIT_UNREACHABLE: "no answer from the daemon (no daemon, wrong --state-dir, no permission)",
    EXIT_INPUT: "bad command line, workload, configuration or --step",
    EXIT_HARDWARE: "hardware discovery failed or the machine is unknown (--workload)",
    EXIT_START: "the policy refused to start with its configuration (--workload)",
    EXIT_INTERNAL: "unexpected internal error (see the log)",
    EXIT_UNKNOWN: "no such container (or the name is ambiguous)",
}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = add_command_parser(subparsers, "explain", HELP, "docs/explain.md", EXIT_CODES)
    parser.add_argument(
        "container",
        metavar="CONTAINER",
        help="the container: its id, namespace/pod/name, pod/name, or a name only one has",
    )
    daemon = parser.add_argument_group("a running daemon (the default)")
    daemon.add_argument(
        "--state-dir",
        metavar="DIR",
        default="/var/lib/nrirp",
        help="the daemon's state directory, holding status.sock (default: %(default)s)",
    )
    daemon.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="ask http://HOST:PORT/explain (the daemon's instrumentation.httpEndpoint)",
    )
    sim = parser.add_argument_group("a simulate run (--workload)")
    sim.add_argument("--workload", metavar="FILE", help="replay this workload, then explain")
    sim.add_argument(
        "--step",
        type=int,
        metavar="N",
        help="explain the state after step N (1-based; default: the last step)",
    )
    sim.add_argument("--policy", metavar="NAME", help="the policy (default: a recording's)")
    sim.add_argument(
        "--config",
        "--config-file",
        dest="config",
        metavar="FILE",
        help="policy configuration (default: a recording's own, else the policy's defaults)",
    )
    sim.add_argument(
        "--policy-module",
        metavar="MODULE|FILE.py",
        action="append",
        default=None,
        help="import a module (or a Python file) that registers policies; repeatable",
    )
    sim.add_argument("--nri-version", metavar="VERSION", help="NRI release of the runtime")
    add_hardware_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the explanation as JSON")
    parser.add_argument(
        "--columns",
        type=int,
        default=4,
        metavar="N",
        help="candidates whose scoring items are shown side by side (default: %(default)s)",
    )
    add_log_level_argument(parser, "error", "log level of the components (--workload)")
    return parser


_SIMULATION_FLAGS = {
    "step": "--step",
    "policy": "--policy",
    "config": "--config",
    "policy_module": "--policy-module",
    "nri_version": "--nri-version",
    "machine": "--machine",
    "sysfs_root": "--sysfs-root",
    "procfs_root": "--procfs-root",
    "memory_type": "--memory-type",
}
"""The options of a simulate run (``dest``: flag), meaningless without ``--workload``."""


def run(args: argparse.Namespace) -> int:
    try:
        if args.workload:
            from nrirp.adapters.system import configure_logging

            configure_logging(args.log_level, "text")
            document, context = _simulated(args)
            _note_unfinished_recording(args.workload)
        else:
            _no_simulation_flags(args)
            document, context = _asked(args)
    except _Exit as exit_:
        print(f"nrirp explain: {exit_}", file=sys.stderr)
        return exit_.code
    if "error" in document:
        print(f"nrirp explain: {document['error']}", file=sys.stderr)
        return EXIT_UNKNOWN
    if args.json:
        json.dump({**document, **context}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    from nrirp.app.explain import render_explanation

    if context.get("simulation"):
        sim = context["simulation"]
        print(f"after step {sim['step']} of {sim['steps']} of {sim['workload']}")
    sys.stdout.write(render_explanation(document, columns=args.columns))
    return EXIT_OK


def _note_unfinished_recording(path: str) -> None:
    """As ``simulate`` says it: a recording without an end mark was replayed up to its last
    complete step."""
    from nrirp.app.simulator.from_recording import ending, is_recording

    if is_recording(path):
        end = ending(path)
        if end:
            print(f"nrirp explain: note: {path}: {end}", file=sys.stderr)


class _Exit(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------------------- a daemon
def _no_simulation_flags(args: argparse.Namespace) -> None:
    """Refuse the options of a simulate run given to ask a daemon (they would be ignored)."""
    given = [
        flag
        for dest, flag in _SIMULATION_FLAGS.items()
        if getattr(args, dest, None) not in (None, [])  # --step 0 is given
    ]
    if given:
        raise _Exit(
            EXIT_INPUT,
            f"{', '.join(given)} {'needs' if len(given) == 1 else 'need'} --workload "
            "(a daemon is asked about its state now)",
        )


def _asked(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    from nrirp.app.commands.common.daemon_client import fetch_http, fetch_socket, socket_path

    request = "/explain?" + urllib.parse.urlencode({"container": args.container})
    try:
        raw = fetch_http(args.http, request) if args.http else fetch_socket(args.state_dir, request)
        document = json.loads(raw)
        if not isinstance(document, dict):
            raise ValueError("the answer is not a JSON object")
    except (OSError, ValueError) as exc:
        where = f"http://{args.http}/explain" if args.http else socket_path(args.state_dir)
        raise _Exit(EXIT_UNREACHABLE, f"no answer from {where}: {exc}") from None
    if "error" not in document and "verdict" not in document:
        raise _Exit(EXIT_UNREACHABLE, "the daemon does not explain (an older nrirp?)")
    return document, {}


# ---------------------------------------------------------------------------- a simulation
def _simulated(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        return _replayed(args)
    except _Exit:
        raise
    except Exception as exc:
        import logging

        logging.getLogger("nrirp.explain").exception("nrirp explain failed")
        raise _Exit(EXIT_INTERNAL, f"internal error: {type(exc).__name__}: {exc}") from None


def _replayed(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    import asyncio

    import attrs

    from nrirp.app.commands import simulate
    from nrirp.app.explain import error_document, explanation_document
    from nrirp.app.simulator import replay
    from nrirp.app.simulator.recorded import RecordedStepFailed
    from nrirp.domain.pipeline import UnknownContainerError
    from nrirp.simruntime import SimRuntimeError

    try:
        workload = simulate._workload(args.workload)
        recording = workload.recording
        policy = args.policy or (recording.policy if recording is not None else None)
        if not policy:
            raise _Exit(EXIT_INPUT, "--policy is required (unless the workload is a recording)")
        total = len(workload.steps)
        step = total if args.step is None else args.step
        if not 0 <= step <= total:
            raise _Exit(EXIT_INPUT, f"--step {step}: the workload has steps 1 to {total}")
        hardware, _ = simulate._hardware(args, workload)
        container = simulate.started_simulator(args, workload, policy, hardware, args.config)
    except simulate._Exit as exit_:
        raise _Exit(exit_.code, str(exit_)) from None
    prefix = attrs.evolve(workload, steps=workload.steps[:step])
    try:
        asyncio.run(
            replay(container, prefix, last_state_only=True, recorded_config=args.config is None)
        )
    except (SimRuntimeError, RecordedStepFailed) as exc:
        raise _Exit(EXIT_INPUT, f"{args.workload}: {exc}") from None
    manager = container.core.container.resource_manager()
    context = {"simulation": {"workload": workload.source, "step": step, "steps": total}}
    try:
        return explanation_document(manager.explain(args.container)), context
    except UnknownContainerError as exc:
        return error_document(str(exc)), context
