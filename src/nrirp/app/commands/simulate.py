"""``nrirp simulate``: replay a workload through the real pipeline and a simulated runtime.

The policy runs inside our NRI plugin, connected to the simulated runtime exactly as it would
be to containerd; the workload's steps drive the runtime like a kubelet. After every step each
container's cpus and mems (and CPU/memory settings) are printed as the runtime holds them: a
table, or one JSON document with ``--json``. See ``docs/simulator.md``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from nrirp.app.commands.common.hardware_source import (
    add_hardware_arguments,
    hardware_usage_problem,
)
from nrirp.app.commands.common.parsing import add_command_parser, add_log_level_argument

HELP = "replay a workload through a policy on real or fake hardware and show the results"

EXIT_OK = 0
EXIT_STEPS = 1
EXIT_INPUT = 2
EXIT_HARDWARE = 3
EXIT_START = 4
EXIT_INTERNAL = 5
EXIT_CODES = {
    EXIT_OK: "every step went as expected (with --compare: nothing would move)",
    EXIT_STEPS: "the replay ran, but some steps did not go as expected: one failed "
    "unexpectedly or an expect check did not hold (see the output); with --compare: some "
    "container would move or some step would go otherwise",
    EXIT_INPUT: "bad command line, unknown policy, policy module, workload or config file",
    EXIT_HARDWARE: "hardware discovery failed or the machine is unknown",
    EXIT_START: "the policy refused to start with its configuration",
    EXIT_INTERNAL: "unexpected internal error (see the log)",
}

log = logging.getLogger("nrirp.simulate")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = add_command_parser(subparsers, "simulate", HELP, "docs/simulator.md", EXIT_CODES)
    add_hardware_arguments(parser)
    parser.add_argument(
        "--policy",
        metavar="NAME",
        help="policy to run (required, unless the workload is a recording: then its policy)",
    )
    parser.add_argument(
        "--config",
        "--config-file",
        dest="config",
        metavar="FILE",
        help="policy configuration (YAML/JSON spec or custom resource); default: a "
        "recording's own, else the policy's defaults. Given for a recording, the recorded "
        "reconfigurations are skipped",
    )
    parser.add_argument(
        "--compare",
        metavar="OLD.yaml",
        help="replay twice, with this configuration and with --config's (or a recording's "
        "own), and print what would move, container by container",
    )
    parser.add_argument(
        "--every-step",
        action="store_true",
        help="for a recording: show the state after every step, not only after the last",
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


class _Exit(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _run(args: argparse.Namespace) -> int:
    try:
        return _simulate(args)
    except _Exit as exit_:
        return _fail(exit_.code, str(exit_))


def _simulate(args: argparse.Namespace) -> int:
    import json

    from nrirp.app.simulator.from_recording import ending

    if args.compare and (args.svg or args.html):
        raise _Exit(EXIT_INPUT, "--svg and --html draw one replay: not with --compare")
    problem = hardware_usage_problem(args)
    if problem is not None:
        raise _Exit(EXIT_INPUT, problem)
    _check_picture_paths(args)
    workload = _workload(args.workload)
    recording = workload.recording
    if args.every_step and recording is None:
        print(
            f"nrirp simulate: note: --every-step changes nothing: {args.workload} is not a "
            "recording, every step is shown",
            file=sys.stderr,
        )
    policy = args.policy or (recording.policy if recording is not None else None)
    if not policy:
        raise _Exit(EXIT_INPUT, "--policy is required (unless the workload is a recording)")
    hardware, source = _hardware(args, workload)
    if recording is not None:
        end = ending(args.workload)
        if end:
            print(f"nrirp simulate: note: {args.workload}: {end}", file=sys.stderr)
    if args.compare:
        from nrirp.app.simulator.compare import compare, comparison_document, comparison_table

        old = _replay(args, workload, policy, hardware, source, args.compare)
        new = _replay(args, workload, policy, hardware, source, args.config)
        comparison = compare(old, new)
        if args.json:
            print(json.dumps(comparison_document(comparison), indent=2))
        else:
            print(comparison_table(comparison))
        return EXIT_STEPS if comparison.differs else EXIT_OK
    result = _replay(args, workload, policy, hardware, source, args.config)
    from nrirp.app.simulator import replay_document, replay_table

    if args.json:
        print(json.dumps(replay_document(result), indent=2))
    else:
        print(replay_table(result))
    if args.svg or args.html:
        try:
            _draw(args, result, hardware.discover())
        except OSError as exc:
            return _fail(EXIT_INPUT, f"{_PICTURES}: {exc}")
    return EXIT_STEPS if result.unexpected else EXIT_OK


_PICTURES = "cannot write the pictures"


def _check_picture_paths(args: argparse.Namespace) -> None:
    """Refuse a ``--svg`` directory or an ``--html`` file that cannot be written, before the
    replay. Nothing is created: a directory to be created is tried in its nearest existing
    parent, with a temporary file (``os.access`` would pass root on a read-only file system)."""
    import os

    if args.svg:
        existing = os.path.abspath(args.svg)
        while not os.path.lexists(existing):  # the directory and its parents to be created
            existing = os.path.dirname(existing)
        if not os.path.isdir(existing):
            raise _Exit(EXIT_INPUT, f"{_PICTURES}: --svg {args.svg}: {existing} is not a directory")
        _try_writing(f"--svg {args.svg}", existing)
    if args.html:
        parent = os.path.dirname(os.path.abspath(args.html))
        if os.path.isdir(args.html):
            raise _Exit(EXIT_INPUT, f"{_PICTURES}: --html {args.html}: is a directory")
        if not os.path.isdir(parent):
            raise _Exit(EXIT_INPUT, f"{_PICTURES}: --html {args.html}: no directory {parent}")
        if not os.path.lexists(args.html):
            _try_writing(f"--html {args.html}", parent)
            return
        try:
            with open(args.html, "a", encoding="utf-8"):
                pass  # opened for writing, not changed
        except OSError as exc:
            raise _Exit(
                EXIT_INPUT, f"{_PICTURES}: --html {args.html}: {exc.strerror or exc}"
            ) from None


def _try_writing(flag: str, directory: str) -> None:
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".nrirp-probe-"):
            pass
    except OSError as exc:
        raise _Exit(
            EXIT_INPUT, f"{_PICTURES}: {flag}: cannot write in {directory}: {exc.strerror or exc}"
        ) from None


def _workload(path: str) -> Any:
    import re

    from nrirp.app.simulator import WorkloadError, load_workload
    from nrirp.app.simulator.from_recording import damage_hint, is_recording

    try:
        if os.path.isfile(path) and os.path.getsize(path) == 0:
            raise _Exit(
                EXIT_INPUT,
                f"workload {path} is empty (a recording of a daemon stopped before it wrote "
                "anything?)",
            )
        return load_workload(path)
    except OSError as exc:
        raise _Exit(EXIT_INPUT, f"cannot read workload {path}: {exc.strerror or exc}") from None
    except WorkloadError as exc:
        message = str(exc)
        if is_recording(path) and "<document>: invalid YAML" in message:
            # with the parser's line when it says one (not for a NUL byte or bad UTF-8)
            found = re.search(r"<document>: invalid YAML at line (\d+)", message)
            message += "\n" + damage_hint(path, int(found.group(1)) if found else None)
        raise _Exit(EXIT_INPUT, message) from None


def _hardware(args: argparse.Namespace, workload: Any) -> tuple[Any, str]:
    """The hardware: ``--machine``/``--sysfs-root``, a recording given as ``--machine``, else
    a recording's own machine, else this machine."""
    from nrirp.adapters.fakehw import MachineSpecError, UnknownMachineError
    from nrirp.app.commands.common.hardware_source import hardware_from_args
    from nrirp.app.simulator.from_recording import is_recording, recorded_machine
    from nrirp.domain.ports.hardware import HardwareDiscoveryError

    overrides = dict(args.memory_type)
    try:
        if args.machine and is_recording(args.machine):
            recording = _workload(args.machine).recording
            if recording is None:
                raise _Exit(EXIT_INPUT, f"{args.machine}: not a recording (no 'recording' key)")
            machine = recorded_machine(recording, args.machine, overrides)
            return machine, f"the machine recorded in {args.machine}"
        if workload.recording is not None and not args.machine and not args.sysfs_root:
            machine = recorded_machine(workload.recording, args.workload, overrides)
            return machine, "the recorded machine"
        discovery: tuple[Any, str] = hardware_from_args(args)
        return discovery
    except (MachineSpecError, UnknownMachineError) as exc:
        raise _Exit(EXIT_HARDWARE, str(exc)) from None
    except HardwareDiscoveryError as exc:
        raise _Exit(EXIT_HARDWARE, f"hardware discovery failed: {exc}") from None


def _replay(
    args: argparse.Namespace,
    workload: Any,
    policy: str,
    hardware: Any,
    source: str,
    config_file: str | None,
) -> Any:
    """One replay of ``workload`` with ``config_file`` (``None``: a recording's own, else
    the defaults); raises :class:`_Exit` when it cannot run."""
    import asyncio

    from nrirp.app.simulator import replay, replay_result
    from nrirp.app.simulator.recorded import RecordedStepFailed
    from nrirp.simruntime import SimRuntimeError

    recording = workload.recording
    container = started_simulator(args, workload, policy, hardware, config_file)
    lean = recording is not None and not (args.every_step or args.svg or args.html)
    try:
        steps = asyncio.run(
            replay(
                container,
                workload,
                last_state_only=lean,
                recorded_config=config_file is None,
            )
        )
    except (SimRuntimeError, RecordedStepFailed) as exc:  # a recording whose start is refused
        raise _Exit(EXIT_INPUT, f"{args.workload}: {exc}") from None
    shown = config_file
    if shown is None and recording is not None and recording.config is not None:
        shown = "the recording's configuration"
    return replay_result(container, workload, steps, hardware=source, config_file=shown)


def started_simulator(
    args: argparse.Namespace,
    workload: Any,
    policy: str,
    hardware: Any,
    config_file: str | None,
) -> Any:
    """A simulator for ``workload`` (``args``: ``policy_module``, ``nri_version``,
    ``workload``) with its policy started with ``config_file`` (``None``: a recording's own,
    else the defaults), ready for ``replay``; raises :class:`_Exit` when it cannot start."""
    from nrirp.adapters.system import ConfigFileError
    from nrirp.app.composition import PolicyModuleError
    from nrirp.app.simulator import build_simulator
    from nrirp.app.simulator.from_recording import use_recording_state
    from nrirp.domain.config import ConfigError
    from nrirp.domain.pipeline import OperationFailedError, StateRestoreError
    from nrirp.domain.policy import UnknownPolicyError
    from nrirp.domain.ports.hardware import HardwareDiscoveryError
    from nrirp.simruntime import SimRuntimeError

    recording = workload.recording
    try:
        container = build_simulator(
            policy,
            hardware=hardware,
            config_file=config_file,
            policy_modules=args.policy_module,
            nri_version=args.nri_version,
        )
        container.core.policy()
        if recording is not None:
            try:
                use_recording_state(container, recording, keep_config=config_file is None)
            except ConfigError as exc:
                raise _Exit(EXIT_INPUT, f"{args.workload}: recording.config: {exc}") from None
        config = container.core.policy_config()
        container.runtime()
    except (UnknownPolicyError, PolicyModuleError, ConfigFileError) as exc:
        raise _Exit(EXIT_INPUT, str(exc)) from None
    except ConfigError as exc:
        raise _Exit(EXIT_INPUT, f"configuration {config_file}: {exc}") from None
    except SimRuntimeError as exc:
        raise _Exit(EXIT_INPUT, str(exc)) from None
    except HardwareDiscoveryError as exc:
        raise _Exit(EXIT_HARDWARE, f"hardware discovery failed: {exc}") from None
    try:
        container.core.resource_manager().start(config)
    except OperationFailedError as exc:
        raise _Exit(EXIT_START, f"policy {policy} refused to start: {exc.reason}") from None
    except StateRestoreError as exc:
        raise _Exit(EXIT_INPUT, f"{args.workload}: recording.state: {exc}") from None
    return container


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
