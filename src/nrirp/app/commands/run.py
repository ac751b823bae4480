"""``nrirp run``: the reference daemon, an NRI plugin that applies a resource policy.

It discovers the hardware, restores the saved state, starts the policy, connects to the
runtime's NRI socket (or uses the socket of a pre-launched plugin), and then serves: every
decision is one structured log line, state is saved to ``<state-dir>/cache`` after every
change, policy-initiated updates are sent asynchronously, and the config file is reloaded on
SIGHUP or when it changes (an invalid new config is logged and the old one stays). SIGTERM or
SIGINT flush the state and stop it. The exit codes are listed in ``EXIT_CODES``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from typing import TYPE_CHECKING, Any

import attrs

from nrirp.app.commands.common.agent import add_agent_arguments
from nrirp.app.commands.common.engine_api import add_engine_api_arguments
from nrirp.app.commands.common.hardware_source import add_memory_type_argument
from nrirp.app.commands.common.parsing import (
    add_command_parser,
    add_log_level_argument,
    add_policy_argument,
    non_negative_seconds,
)
from nrirp.app.commands.common.recording import add_record_arguments, record_usage_problem

if TYPE_CHECKING:
    from nrirp.adapters.storage import FileStateStore
    from nrirp.app.daemon import DaemonContainer
    from nrirp.app.daemon.config_events import ConfigEvents
    from nrirp.app.daemon.reload import ConfigReloader

HELP = "run the resource-manager daemon (an NRI plugin applying a policy)"

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_CONFIG = 2
EXIT_HARDWARE = 3
EXIT_STATE = 4
EXIT_REGISTRATION = 5
EXIT_STATE_IN_USE = 6
EXIT_CODES = {
    EXIT_OK: "stopped by SIGTERM/SIGINT, or the runtime closed a pre-launched plugin's connection",
    EXIT_FAILURE: "unexpected error (see the log)",
    EXIT_CONFIG: "bad command line, unknown policy, policy module or invalid config file",
    EXIT_HARDWARE: "hardware discovery failed",
    EXIT_STATE: "saved state refused or unusable, or the policy refused to start",
    EXIT_REGISTRATION: "a pre-launched plugin could not register with the runtime",
    EXIT_STATE_IN_USE: "the state directory is in use by another process (another daemon)",
}

log = logging.getLogger("nrirp.daemon")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = add_command_parser(subparsers, "run", HELP, "docs/daemon.md", EXIT_CODES)
    add_policy_argument(parser)
    parser.add_argument(
        "--config-file",
        metavar="FILE",
        help="policy configuration (YAML/JSON spec or custom resource); reloaded on SIGHUP "
        "and when it changes. Without it: the saved configuration, else the defaults",
    )
    parser.add_argument(
        "--nri-socket",
        metavar="PATH",
        default="/var/run/nri/nri.sock",
        help="runtime's NRI socket (default: %(default)s); ignored for a pre-launched plugin",
    )
    add_engine_api_arguments(parser)
    parser.add_argument(
        "--plugin-name",
        metavar="NAME",
        help="plugin name (default: $NRI_PLUGIN_NAME, else resource-manager)",
    )
    parser.add_argument(
        "--plugin-index",
        metavar="NN",
        help="two-digit plugin index (default: $NRI_PLUGIN_IDX, else 90)",
    )
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        default="/var/lib/nrirp",
        help="directory of the state file 'cache' (default: %(default)s)",
    )
    parser.add_argument(
        "--sysfs-root",
        metavar="DIR",
        default="/sys",
        help="sysfs tree to read the hardware from (default: %(default)s); a fake machine's "
        "tree from 'nrirp hardware --write-sysfs' works too",
    )
    add_memory_type_argument(parser)
    parser.add_argument(
        "--cgroup-root",
        metavar="DIR",
        default="/sys/fs/cgroup",
        help="cgroup root for settings NRI cannot carry (default: %(default)s)",
    )
    parser.add_argument(
        "--host-control",
        metavar="LIST",
        type=_host_controls,
        default=None,
        help="host controls to use, comma-separated, of cpu (CPU classes: cpufreq, cpuidle, "
        "uncore), irq (interrupt affinity), rdt (resctrl groups), sched (scheduling classes on "
        "tasks when NRI cannot carry them), export (resources.sh); 'none' for none "
        "(default: all)",
    )
    parser.add_argument(
        "--config-poll-interval",
        metavar="SECONDS",
        type=non_negative_seconds,
        default=1.0,
        help="how often to check the config file for changes; 0 disables (default: 1)",
    )
    parser.add_argument(
        "--http-endpoint",
        metavar="[HOST]:PORT",
        type=_http_endpoint,
        default="",
        help="serve /healthz, /readyz, /status and /explain (and /metrics when the "
        "configuration exports them) here from the start, e.g. ':8891', whatever the "
        "configuration; its instrumentation.httpEndpoint, when set, takes over (default: only "
        "that)",
    )
    add_agent_arguments(parser)
    add_record_arguments(parser)
    add_log_level_argument(parser, "info", "level of the daemon's log, on stderr")
    parser.add_argument(
        "--log-format",
        default="text",
        choices=["text", "json"],
        help="text (key=value) or json (one object per line) (default: %(default)s)",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    from nrirp.adapters.system import configure_logging

    configure_logging(args.log_level, args.log_format)
    problem = record_usage_problem(args)
    if problem is not None:
        log.error("%s", problem)
        return EXIT_CONFIG
    try:
        return _run(args)
    except Exception:
        log.exception("nrirp run failed")
        return EXIT_FAILURE


def _http_endpoint(text: str) -> str:
    """``[HOST]:PORT`` checked as the HTTP server will read it ('': none; the server's module
    is imported only for an endpoint)."""
    if not text:
        return text
    from nrirp.adapters.http.server import parse_endpoint

    try:
        parse_endpoint(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _host_controls(text: str) -> list[str]:
    from nrirp.app.daemon.host import HOST_CONTROLS

    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["none"]:
        return []
    unknown = [n for n in names if n not in HOST_CONTROLS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown host control {', '.join(unknown)} (known: {', '.join(HOST_CONTROLS)}, none)"
        )
    return names


def _run(args: argparse.Namespace) -> int:
    from nrirp import __version__
    from nrirp.adapters.kubernetes.errors import ClusterError
    from nrirp.adapters.storage import StateDirectoryInUseError
    from nrirp.adapters.system import ConfigFileError
    from nrirp.app.commands.common.agent import AgentSettingsError, agent_settings
    from nrirp.app.composition import PolicyModuleError
    from nrirp.app.composition.node_agent import follow_pod_resources
    from nrirp.app.daemon import DaemonContainer
    from nrirp.domain.config import ConfigError
    from nrirp.domain.pipeline import OperationFailedError, StateRestoreError
    from nrirp.domain.policy import UnknownPolicyError
    from nrirp.domain.ports.hardware import HardwareDiscoveryError
    from nrirp.domain.ports.state_store import StateStoreError

    container = DaemonContainer()
    container.config.from_dict(
        {
            "policy": args.policy,
            "config_file": args.config_file,
            "nri_socket": args.nri_socket,
            "plugin_name": args.plugin_name,
            "plugin_index": args.plugin_index,
            "state_dir": args.state_dir,
            "sysfs_root": args.sysfs_root,
            "memory_types": dict(args.memory_type),
            "cgroup_root": args.cgroup_root,
            "host_controls": args.host_control,
            "pod_resources_socket": args.pod_resources_socket,
        }
    )
    if args.engine_api or args.nri_v01:
        from nrirp.app.daemon.engine_api import use_engine_api

        use_engine_api(container, args.engine_socket, nri_v01=args.nri_v01)
    log.info(
        "nrirp %s starting: policy %s, state dir %s, sysfs %s",
        __version__,
        args.policy,
        args.state_dir,
        args.sysfs_root,
    )
    core = container.core.container
    try:
        core.policy()
        config = core.policy_config()
    except (UnknownPolicyError, PolicyModuleError, ConfigFileError) as exc:
        log.error("%s", exc)
        return EXIT_CONFIG
    except ConfigError as exc:
        from nrirp.app.daemon.reload import log_config_error

        log_config_error(f"configuration {args.config_file} is invalid", exc)
        return EXIT_CONFIG
    try:
        container.config.agent.from_value(agent_settings(args, core.policy_registry()))
        container.adapters.container.kubernetes()  # lightkube only when the agent runs
    except AgentSettingsError as exc:
        log.error("%s", exc)
        return EXIT_CONFIG
    except ClusterError as exc:
        log.error("node agent: %s", exc)
        return EXIT_CONFIG
    try:
        machine = core.machine()
    except HardwareDiscoveryError as exc:
        log.error("hardware discovery failed: %s", exc)
        return EXIT_HARDWARE
    log.info(
        "hardware: %d CPUs (%s), %d NUMA nodes",
        len(machine.online),
        machine.online,
        len(machine.nodes),
    )
    from nrirp.app.daemon.recording import start_recording

    problem = start_recording(container, args, machine)  # before the manager: it observes it
    if problem is not None:
        log.error("%s", problem)
        return EXIT_CONFIG
    manager = core.resource_manager()
    follow_pod_resources(container.adapters.container.topology_hints(), manager)
    store = _state_file(container)
    try:
        store.lock()  # one daemon per state directory, before anything in it is read
    except StateDirectoryInUseError as exc:
        log.error("%s", exc)
        return EXIT_STATE_IN_USE
    except StateStoreError as exc:
        log.error("%s", exc)
        return EXIT_STATE
    from nrirp.app.daemon.recording import open_recording

    problem = open_recording(container)
    if problem is not None:
        log.error("%s", problem)
        return EXIT_CONFIG
    try:
        outcome = manager.start(config)
    except StateRestoreError as exc:
        _log_state_error(exc, store.path)
        return EXIT_STATE
    except OperationFailedError as exc:
        log.error("policy %s refused to start: %s", args.policy, exc.reason)
        return EXIT_STATE
    if outcome.restored:
        log.info(
            "restored state from %s: %d pods, %d containers%s",
            store.path,
            outcome.pods,
            outcome.containers,
            " (written by another policy: containers are allocated anew)"
            if outcome.policy_changed
            else "",
        )
    else:
        log.info("no saved state in %s: starting empty", store.path)
    from nrirp.app.daemon.front import FrontStartError

    try:
        container.front().start()  # the engine API binds its socket; NRI dials when it runs
    except FrontStartError as exc:
        log.error("%s", exc)
        return EXIT_CONFIG
    daemon = Daemon(container, args)
    daemon.config_source = _config_source(args, outcome.restored, manager.config is not None)
    from nrirp.adapters.system.latency import settle, tune_switch_interval

    tune_switch_interval()  # the state writer's thread hands the GIL back within 0.5 ms
    settle()  # start-up is done: later garbage collections scan only what serving makes
    from nrirp.adapters.nri.stub.scope import HANDLERS
    from nrirp.adapters.system.logs import log_in_background

    log_in_background(HANDLERS)  # log lines formatted and written between NRI requests
    return asyncio.run(daemon.serve())


def _state_file(container: DaemonContainer) -> FileStateStore:
    """The daemon's state store: the file store (it is locked, flushed and has a path)."""
    from nrirp.adapters.storage import FileStateStore

    store = container.adapters.container.state_store()
    if not isinstance(store, FileStateStore):
        raise TypeError(f"the daemon's state store must be a FileStateStore, not {store!r}")
    return store


def _config_source(args: argparse.Namespace, restored: bool, saved_config: bool) -> str:
    """Where the configuration in force at start came from (``nrirp status``)."""
    if args.config_file:
        return f"file {args.config_file}"
    return "saved state" if restored and saved_config else "defaults"


_SHOWN_PROBLEMS = 10
_PROBLEM_CHARS = 200


def _log_state_error(exc: Exception, path: str) -> None:
    """One line: the reason, then at most a few problems (each cut short) and how many more,
    naming the state file unless the reason does; the problems also as the ``errors`` field."""
    headline, *rest = str(exc).splitlines() or [""]
    problems = [_cut(line.strip()) for line in rest if line.strip()]
    shown = problems[:_SHOWN_PROBLEMS]
    more = len(problems) - len(shown)
    text = "; ".join([_cut(headline), *shown]) + (f"; ... and {more} more" if more else "")
    if path not in text:
        text += f" (state file {path})"
    log.error("%s", text, extra={"fields": {"errors": shown}} if shown else None)


def _cut(text: str) -> str:
    return text if len(text) <= _PROBLEM_CHARS else text[:_PROBLEM_CHARS] + "..."


class Daemon:
    """The serving phase: the front (the NRI plugin service, or the engine API), signals,
    config reloading, final flush."""

    def __init__(self, container: DaemonContainer, args: argparse.Namespace) -> None:
        self.container = container
        self.args = args
        self.manager = container.core.container.resource_manager()
        self.front = container.front()
        self.reloader: ConfigReloader | None = None
        self.stop_signal: str | None = None
        self.config_source = "defaults"
        self.observability = container.observability()
        self.config_events: ConfigEvents | None = None
        from nrirp.app.commands.common.agent import DaemonAgent
        from nrirp.app.composition.reloads import ConfigReloads, config_preparer

        core = container.core.container
        # the one reload path: the config file's and the custom resources' (the agent's)
        self.reloads = ConfigReloads(
            self.manager, prepare=config_preparer(core.policy_registry(), core.config_codec())
        )
        self.agent = DaemonAgent.of(container, self.reloads)

    async def serve(self) -> int:
        from nrirp.app.daemon.front import FrontRegistrationError
        from nrirp.app.daemon.recording import attach_recording
        from nrirp.app.daemon.reload import ConfigReloader

        attach_recording(self.container, nri=not (self.args.engine_api or self.args.nri_v01))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stop, sig.name)
        loop.add_signal_handler(signal.SIGHUP, self.reload, "SIGHUP")
        self.config_events = events = await self._observe()
        self.reloads.listen(events)
        poller: asyncio.Task[None] | None = None
        if self.args.config_file:
            self.reloader = ConfigReloader(
                self.reloads,
                self.args.policy,
                self.args.config_file,
                self.container.core.container.policy_registry(),
            )
            if self.args.config_poll_interval > 0:
                poller = asyncio.create_task(self.reloader.watch(self.args.config_poll_interval))
        code = EXIT_OK
        if self.agent is not None:
            await self.agent.start()
        try:
            await self.front.run()
        except FrontRegistrationError as exc:
            log.error("%s", exc)
            code = EXIT_REGISTRATION
        finally:
            if poller is not None:
                poller.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await poller
            if self.reloader is not None:  # a reload in progress is not applied any more
                await self.reloader.close()
            if self.agent is not None:
                await self.agent.stop()
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                loop.remove_signal_handler(sig)
            await self.observability.close()
        if code == EXIT_OK and self.stop_signal is None:
            log.info("the runtime closed the connection")
        return self._flush(code)

    async def _observe(self) -> ConfigEvents:
        """Start the health, metrics and status endpoints and follow the configuration in
        force (``app/daemon/observability.py``, ``config_events.py``)."""
        from nrirp.adapters.system.log_settings import LogSettings
        from nrirp.app.daemon.config_events import ConfigEvents
        from nrirp.domain.config.unapplied import DAEMON

        container = self.container
        self.observability.default_endpoint = self.args.http_endpoint
        await self.observability.start()
        events = ConfigEvents(
            state=container.config_state(),
            recorder=container.adapters.container.recorder(),
            observability=self.observability,
            log_settings=LogSettings(),
            environment=attrs.evolve(
                DAEMON,
                kubernetes_agent=self.agent is not None,
                default_http_endpoint=bool(self.args.http_endpoint),
            ),
            on_reloaded=self.front.configuration_changed,
        )
        if self.agent is not None:
            events.followers.append(self.agent.follow)
        events.started(self.config_source, self.manager.config)
        return events

    def _stop(self, name: str) -> None:
        log.info("%s received: stopping", name)
        self.stop_signal = name
        self.front.stop()

    def _flush(self, code: int) -> int:
        from nrirp.domain.ports.state_store import StateStoreError

        self.manager.shutdown()  # the host gets back what was changed (CPU classes, IRQs, ...)

        close_timers = getattr(self.container.adapters.container.timers(), "close", None)
        if callable(close_timers):  # no policy timer may fire after the final save
            close_timers()
        from nrirp.app.daemon.recording import stop_recording

        stop_recording(self.container)
        store = _state_file(self.container)
        try:
            store.close()
        except StateStoreError as exc:
            log.error("state not saved: %s", exc)
            return code or EXIT_FAILURE
        log.info("state saved to %s; stopped", store.path)
        return code

    def reload(self, trigger: str) -> None:
        """Load the config file again (off the loop) and apply it; a bad one leaves the old
        config in force."""
        if self.reloader is None:
            if self.agent is not None and self.agent.reapply(trigger):
                return
            log.warning("%s: no --config-file or custom resource to reload", trigger)
            return
        self.reloader.request(trigger)
