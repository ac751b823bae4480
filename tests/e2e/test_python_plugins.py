"""Our example NRI plugins (``logger``, ``pin_cpus``) on a real containerd 1.7.24 (NRI 0.6.1);
``test_containerd2.py`` runs them on containerd 2.x too.

The six scenarios of a plugin's life on a real runtime:

1. registration, then the events of a two-container pod from run to removal, in order;
2. a cpuset adjustment at creation really applies (cgroup ``cpuset.cpus``/``cpuset.mems`` and the
   container's ``Cpus_allowed_list``/``Mems_allowed_list``);
3. an unsolicited UpdateContainers re-pins a running container;
4. a plugin started while pods run gets them in Synchronize (and pins them from there);
5. containerd stopped and started again: the same plugin processes reconnect by themselves,
   resynchronize with the pods still running, and keep serving new pods;
6. pre-launched plugins started by containerd from its plugin directory register and work.

Facts of containerd these tests pin down (``harness/facts.py`` where releases differ): 1.7.24's
pre-launched plugins get no Synchronize (2.x's get one); after a restart, pods that survived it
get no StopPodSandbox/RemovePodSandbox events (their containers' events still come; 1.7.24 and
2.1.9 alike). A failing test gets containerd's log tail and every plugin's log tail in its
report.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from tests.support.gomockrt import REPO_ROOT

from .harness import Containerd, ContainerSpec, CriError, Kubelet, PodSpec
from .harness.facts import runtime_facts
from .harness.fixtures import PluginProcesses
from .harness.plugins import PluginProcess
from .harness.processes import cmdline
from .helpers import require_cpus

pytestmark = pytest.mark.e2e

# the example plugins (examples/plugins), run as modules of the checkout
LOGGER = "examples.plugins.logger"
PIN_CPUS = "examples.plugins.pin_cpus"
CHECKOUT = {"PYTHONPATH": str(REPO_ROOT)}
CPUS_KEY = "cpus.pin-cpus.nrirp.io"
MEMS_KEY = "mems.pin-cpus.nrirp.io"

# What a plugin subscribing to everything gets from NRI 0.6.1, in the Go event order.
NRI_0_6_EVENTS = [
    "RunPodSandbox",
    "StopPodSandbox",
    "RemovePodSandbox",
    "CreateContainer",
    "PostCreateContainer",
    "StartContainer",
    "PostStartContainer",
    "UpdateContainer",
    "PostUpdateContainer",
    "StopContainer",
    "RemoveContainer",
]
CONTAINER_LIFECYCLE = [
    "CreateContainer",
    "PostCreateContainer",
    "StartContainer",
    "PostStartContainer",
    "StopContainer",
    "RemoveContainer",
]


# --- reading the logger's log --------------------------------------------------------------


@attrs.frozen
class Event:
    """One lifecycle event line of the logger: ``name pod=ns/pod [container=c id=i]``."""

    name: str
    pod: str
    container: str | None = None
    id: str | None = None


@attrs.frozen
class Synced:
    """One container the runtime listed in Synchronize."""

    name: str
    id: str
    pod_id: str


@attrs.define
class Session:
    """What the logger saw on one connection: Configure, Synchronize, then events."""

    configure: str
    sync_pods: int | None = None
    sync_containers: int | None = None
    synced: list[Synced] = attrs.field(factory=list)
    events: list[Event] = attrs.field(factory=list)

    @property
    def synchronized(self) -> bool:
        """Synchronize arrived and all its container lines are logged."""
        return self.sync_containers is not None and len(self.synced) == self.sync_containers

    def of_pod(self, pod: str) -> list[Event]:
        """The events of pod ``namespace/name``, in order."""
        return [e for e in self.events if e.pod == pod]


_MESSAGE = re.compile(r" nrirp\.examples\.logger: (.*)$")
_SYNC = re.compile(r"Synchronize pods=(\d+) containers=(\d+)$")
_SYNCED = re.compile(r"Synchronize container=(\S*) id=(\S+) pod=(\S+)$")
_EVENT = re.compile(r"(\w+) pod=(\S+)(?: container=(\S*) id=(\S+))?$")


def logger_sessions(text: str) -> list[Session]:
    """Split the logger's log into one :class:`Session` per connection (each starts with
    Configure). A last line still being written (no newline yet) is left out."""
    sessions: list[Session] = []
    for line in text[: text.rfind("\n") + 1].splitlines():
        found = _MESSAGE.search(line)
        if found is None:
            continue
        message = found.group(1)
        if message.startswith("Configure "):
            sessions.append(Session(message))
            continue
        assert sessions, f"logger line before any Configure: {line}"
        current = sessions[-1]
        if sync := _SYNC.match(message):
            current.sync_pods, current.sync_containers = map(int, sync.groups())
        elif synced := _SYNCED.match(message):
            current.synced.append(Synced(*synced.groups()))
        elif event := _EVENT.match(message):
            current.events.append(Event(*event.groups()))
    return sessions


def test_logger_sessions_parses_configure_sync_and_events() -> None:
    prefix = "2026-01-01 00:00:00,000 INFO nrirp.examples.logger: "
    text = "\n".join(
        [
            "2026-01-01 00:00:00,000 INFO nrirp.nri.stub: 50-logger: registered with containerd",
            prefix + "Configure runtime=containerd version=1.7.24 nri=- config=0 bytes",
            prefix + "Synchronize pods=1 containers=1",
            prefix + "Synchronize container=c id=c1 pod=p1",
            prefix + "StopContainer pod=ns/p container=c id=c1",
            prefix + "Configure runtime=containerd version=1.7.24 nri=- config=0 bytes",
            prefix + "Synchronize pods=0 containers=0",
            prefix + "RunPodSandbox pod=ns/q",
        ]
    )
    first, second = logger_sessions(text + "\n" + prefix + "RemovePodSandbox pod=ns/q")
    assert first.synchronized and first.sync_pods == 1
    assert first.synced == [Synced("c", "c1", "p1")]
    assert first.events == [Event("StopContainer", "ns/p", "c", "c1")]
    assert second.synchronized and second.sync_pods == 0 and second.synced == []
    assert second.of_pod("ns/q") == [Event("RunPodSandbox", "ns/q")]  # the unfinished line: out
    (partial,) = logger_sessions(text.split("Synchronize container=")[0] + "\n")
    assert partial.sync_containers == 1 and not partial.synchronized


# --- helpers -------------------------------------------------------------------------------


def wait_in_file(path: Path, pattern: str, timeout: float = 10.0) -> str:
    """Wait until a line of ``path`` matches ``pattern``; returns the whole file then."""
    regex = re.compile(pattern)
    deadline = time.monotonic() + timeout
    while True:
        text = path.read_text(errors="replace") if path.exists() else ""
        if any(regex.search(line) for line in text.splitlines()):
            return text
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"{path} has no line matching {pattern!r} after {timeout}s:\n{text}"
            )
        time.sleep(0.02)


def wait_count(plugin: PluginProcess, pattern: str, count: int, timeout: float = 15.0) -> str:
    """Wait until ``count`` lines of the plugin's log match ``pattern``; returns the log."""
    regex = re.compile(pattern)
    deadline = time.monotonic() + timeout
    while True:
        text = plugin.log_text()
        if sum(1 for line in text.splitlines() if regex.search(line)) >= count:
            return text
        if not plugin.running or time.monotonic() >= deadline:
            state = "still running" if plugin.running else f"exited {plugin.returncode}"
            raise AssertionError(
                f"wanted {count} lines matching {pattern!r} from {plugin.argv} ({state}):\n{text}"
            )
        time.sleep(0.02)


def wait_sessions(
    read: Callable[[], str], ready: Callable[[list[Session]], bool], timeout: float = 15.0
) -> list[Session]:
    """Wait until the logger's sessions (parsed from ``read()``) satisfy ``ready``."""
    deadline = time.monotonic() + timeout
    while True:
        text = read()
        sessions = logger_sessions(text)
        if ready(sessions):
            return sessions
        if time.monotonic() >= deadline:
            raise AssertionError(f"the logger's log never got there in {timeout}s:\n{text}")
        time.sleep(0.02)


def logged(event: str, pod: str) -> Callable[[list[Session]], bool]:
    """``ready`` for :func:`wait_sessions`: the last connection saw ``event`` of ``pod``."""
    return lambda sessions: (
        bool(sessions) and any(e.name == event and e.pod == pod for e in sessions[-1].events)
    )


def synchronized(count: int) -> Callable[[list[Session]], bool]:
    """``ready`` for :func:`wait_sessions`: the ``count``-th connection is synchronized."""
    return lambda sessions: len(sessions) >= count and sessions[count - 1].synchronized


def start_logger(
    plugin_processes: PluginProcesses, containerd: Containerd, *args: str
) -> PluginProcess:
    """The logger as an external plugin of ``containerd``, once it is synchronized."""
    plugin = plugin_processes.python(
        LOGGER, ["--socket", str(containerd.nri_socket), *args], env=CHECKOUT
    )
    wait_sessions(plugin.log_text, synchronized(1))
    return plugin


def start_pin_cpus(
    plugin_processes: PluginProcesses, containerd: Containerd, *args: str
) -> PluginProcess:
    """pin_cpus as an external plugin of ``containerd``, once it is synchronized."""
    plugin = plugin_processes.python(
        PIN_CPUS, ["--socket", str(containerd.nri_socket), *args], env=CHECKOUT
    )
    plugin.wait_for_line(r"synchronized \d+ containers")
    return plugin


def assert_pinned(kubelet: Kubelet, cid: str, cpus: str, mems: str | None = None) -> None:
    """The container's cgroup and its PID 1 both have these CPUs (and memory nodes)."""
    assert kubelet.container_cgroup_cpuset(cid) == cpus, "cgroup cpuset.cpus"
    assert kubelet.container_cpus_allowed(cid) == cpus, "Cpus_allowed_list in the container"
    if mems is not None:
        assert kubelet.container_cgroup_mems(cid) == mems, "cgroup cpuset.mems"
        assert kubelet.container_mems_allowed(cid) == mems, "Mems_allowed_list in the container"


def repin(plugin: PluginProcess, control: Path, pins: dict[str, object], count: int) -> None:
    """Have pin_cpus re-pin running containers: write the control file, SIGUSR1, wait for the
    ``count``-th "re-pinned" line (it comes after UpdateContainers was answered)."""
    control.write_text(json.dumps(pins))
    os.kill(plugin.pid, signal.SIGUSR1)
    text = wait_count(plugin, r"re-pinned \d+ container\(s\)", count)
    last = [line for line in text.splitlines() if "re-pinned" in line][-1]
    assert last.endswith(f"re-pinned {len(pins)} container(s), 0 failed"), last


def online_nodes() -> list[int]:
    """The host's online NUMA node ids."""
    nodes: list[int] = []
    for part in Path("/sys/devices/system/node/online").read_text().strip().split(","):
        lo, _, hi = part.partition("-")
        nodes += range(int(lo), int(hi or lo) + 1)
    return nodes


# --- 1. registration and the event sequence -------------------------------------------------


def test_logger_registers_and_sees_a_two_container_pod_in_order(
    containerd: Containerd, kubelet: Kubelet, plugin_processes: PluginProcesses
) -> None:
    plugin = start_logger(plugin_processes, containerd, "--name", "pylogger", "--index", "20")
    configured = plugin.wait_for_line(r"Configure runtime=containerd version=\S+")
    assert "nri=-" in configured  # NRI 0.6.1 and 0.8.0 do not send their version
    registered = plugin.wait_for_line(r"20-pylogger: registered with containerd")
    nri = runtime_facts(containerd).nri
    assert f"NRI v{nri} (inferred from the runtime version)" in registered
    assert "ValidateContainerAdjustment" not in registered  # trimmed for NRI <= 0.9
    assert registered.endswith("subscribed to " + ",".join(NRI_0_6_EVENTS))

    pod = kubelet.run_pod(PodSpec("duo", (ContainerSpec("a"), ContainerSpec("b"))))
    ids = dict(pod.containers)
    # kubelet order, one call at a time so the expected order is exact
    for cid in ids.values():
        kubelet.stop_container(cid)
    kubelet.stop_pod_sandbox(pod.id)
    for cid in ids.values():
        kubelet.remove_container(cid)
    kubelet.remove_pod_sandbox(pod.id)

    (session,) = wait_sessions(plugin.log_text, logged("RemovePodSandbox", "default/duo"))
    assert session.sync_pods == 0 and session.synced == []
    events = session.of_pod("default/duo")
    for name, cid in ids.items():
        mine = [e.name for e in events if e.container == name]
        assert mine == CONTAINER_LIFECYCLE, f"events of container {name}"
        assert {e.id for e in events if e.container == name} == {cid}
    names = [e.name for e in events]
    assert names[0] == "RunPodSandbox" and names[-1] == "RemovePodSandbox"
    stops = [i for i, e in enumerate(events) if e.name == "StopContainer"]
    removes = [i for i, e in enumerate(events) if e.name == "RemoveContainer"]
    assert max(stops) < names.index("StopPodSandbox") < min(removes), names
    # each container created and started in turn; then stop all, the sandbox, remove all
    assert [(e.name, e.container) for e in events] == [
        ("RunPodSandbox", None),
        *[(n, "a") for n in CONTAINER_LIFECYCLE[:4]],
        *[(n, "b") for n in CONTAINER_LIFECYCLE[:4]],
        ("StopContainer", "a"),
        ("StopContainer", "b"),
        ("StopPodSandbox", None),
        ("RemoveContainer", "a"),
        ("RemoveContainer", "b"),
        ("RemovePodSandbox", None),
    ]


# --- 2. cpuset adjustments at creation -------------------------------------------------------


def test_pin_cpus_annotations_set_cpus_and_mems_of_new_containers(
    containerd: Containerd, kubelet: Kubelet, plugin_processes: PluginProcesses
) -> None:
    require_cpus(2)
    node = str(online_nodes()[0])
    plugin = start_pin_cpus(plugin_processes, containerd, "--index", "21")
    spec = PodSpec(
        "pinned",
        # CRI asks for the other CPU each time: the plugin's adjustment must win
        (ContainerSpec("a", cpuset_cpus="0"), ContainerSpec("b", cpuset_cpus="1")),
        annotations={
            f"{CPUS_KEY}/container.a": "1",
            f"{MEMS_KEY}/container.a": node,
            f"{CPUS_KEY}/pod": "0",
        },
    )
    pod = kubelet.run_pod(spec)
    assert_pinned(kubelet, pod.container_id("a"), "1", node)
    assert_pinned(kubelet, pod.container_id("b"), "0")
    plugin.wait_for_line(re.escape(f"pinning default/pinned/a to cpus=1 mems={node}"))
    plugin.wait_for_line(re.escape("pinning default/pinned/b to cpus=0 mems=-"))


def test_pin_cpus_mems_reach_the_container_cgroup(
    containerd: Containerd, kubelet: Kubelet, plugin_processes: PluginProcesses
) -> None:
    """With one memory node, pinning to it changes nothing visible; pinning to a node that does
    not exist shows the adjustment's mems really are written to the cgroup: runc fails."""
    start_pin_cpus(plugin_processes, containerd, "--index", "21")
    missing = str(max(online_nodes()) + 1)
    pod = kubelet.run_pod_sandbox(
        PodSpec("nowhere", annotations={f"{MEMS_KEY}/container.c": missing})
    )
    cid = kubelet.create_container(pod, ContainerSpec("c"))  # the adjustment is in the spec
    with pytest.raises(CriError) as failed:
        kubelet.start_container(cid)  # runc creates the cgroup from it
    details = failed.value.details
    assert f'failed to write "{missing}"' in details and "cpuset.mems: invalid argument" in details


def test_pin_cpus_refuses_a_container_with_an_invalid_annotation(
    containerd: Containerd, kubelet: Kubelet, plugin_processes: PluginProcesses
) -> None:
    start_pin_cpus(plugin_processes, containerd, "--index", "21")
    pod = kubelet.run_pod_sandbox(PodSpec("bad", annotations={f"{CPUS_KEY}/pod": "1-x"}))
    with pytest.raises(CriError) as refused:
        kubelet.create_container(pod, ContainerSpec("c"))
    assert f"annotation {CPUS_KEY}/pod: invalid CPU list '1-x'" in refused.value.details
    assert kubelet.list_containers(pod_id=pod.id) == []  # nothing was created


# --- 3. unsolicited UpdateContainers ----------------------------------------------------------


def test_pin_cpus_repins_running_containers_by_unsolicited_update(
    containerd: Containerd, kubelet: Kubelet, plugin_processes: PluginProcesses, tmp_path: Path
) -> None:
    require_cpus(2)
    node = str(online_nodes()[0])
    control = tmp_path / "pins.json"
    plugin = start_pin_cpus(
        plugin_processes, containerd, "--index", "21", "--control-file", str(control)
    )
    spec = PodSpec(
        "moving",
        (ContainerSpec("a", cpuset_cpus="0"), ContainerSpec("b", cpuset_cpus="0")),
        annotations={f"{CPUS_KEY}/pod": "1"},
    )
    pod = kubelet.run_pod(spec)
    a, b = pod.container_id("a"), pod.container_id("b")
    pids = {cid: kubelet.container_pid(cid) for cid in (a, b)}
    assert_pinned(kubelet, a, "1")
    assert_pinned(kubelet, b, "1")

    repin(plugin, control, {a: {"cpus": "0", "mems": node}}, count=1)  # by id
    assert_pinned(kubelet, a, "0", node)
    assert_pinned(kubelet, b, "1")  # the other container was left alone

    repin(plugin, control, {"default/moving/b": "0-1"}, count=2)  # by namespace/pod/container
    assert_pinned(kubelet, b, "0-1")
    assert_pinned(kubelet, a, "0")
    assert {cid: kubelet.container_pid(cid) for cid in (a, b)} == pids  # moved, not restarted


# --- 4. Synchronize -------------------------------------------------------------------------


def test_plugins_started_while_pods_run_get_them_in_synchronize(
    containerd: Containerd, kubelet: Kubelet, plugin_processes: PluginProcesses
) -> None:
    require_cpus(2)
    gone = kubelet.run_pod(PodSpec("gone", (ContainerSpec("x"),)))
    kubelet.remove_pod(gone, grace=0)
    one = kubelet.run_pod(
        PodSpec(
            "one",
            (ContainerSpec("a", cpuset_cpus="0"), ContainerSpec("b", cpuset_cpus="0")),
            annotations={f"{CPUS_KEY}/container.b": "1"},
        )
    )
    two = kubelet.run_pod(PodSpec("two", (ContainerSpec("c"),)))
    assert_pinned(kubelet, one.container_id("b"), "0")  # no plugin yet: CRI's cpuset

    logger = start_logger(plugin_processes, containerd)
    (session,) = logger_sessions(logger.log_text())
    assert session.sync_pods == 2
    assert sorted(session.synced, key=lambda s: s.name) == [
        Synced("a", one.container_id("a"), one.id),
        Synced("b", one.container_id("b"), one.id),
        Synced("c", two.container_id("c"), two.id),
    ]
    assert session.events == []

    # pin_cpus pins what already runs through the updates it returns from Synchronize
    pinner = start_pin_cpus(plugin_processes, containerd, "--index", "21")
    assert pinner.wait_for_line("synchronized").endswith("synchronized 3 containers, pinning 1")
    # the line is logged before the reply: containerd applies the update a moment later
    b = one.container_id("b")
    deadline = time.monotonic() + 10
    while kubelet.container_cgroup_cpuset(b) != "1" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert_pinned(kubelet, b, "1")
    assert_pinned(kubelet, one.container_id("a"), "0")


# --- 5. containerd restart ------------------------------------------------------------------


def test_plugins_reconnect_and_resync_after_containerd_restart(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
) -> None:
    require_cpus(2)
    survivor = fresh_kubelet.run_pod(PodSpec("survivor", (ContainerSpec("c"),)))
    logger = start_logger(plugin_processes, fresh_containerd)
    pinner = start_pin_cpus(plugin_processes, fresh_containerd, "--index", "21")
    pids = (logger.pid, pinner.pid)

    fresh_containerd.stop()
    for plugin in (logger, pinner):
        plugin.wait_for_line(r"connection to the runtime lost .*; reconnecting")
    fresh_containerd.start()
    first, second = wait_sessions(logger.log_text, synchronized(2))
    wait_count(pinner, r"synchronized \d+ containers", 2)
    assert (logger.pid, pinner.pid) == pids and logger.running and pinner.running
    assert fresh_containerd.starts == 2

    cid = survivor.container_id("c")
    for session in (first, second):
        assert session.sync_pods == 1
        assert session.synced == [Synced("c", cid, survivor.id)]

    # the reconnected plugins serve new pods: pin_cpus adjusts, the logger sees every event
    newcomer = fresh_kubelet.run_pod(
        PodSpec(
            "newcomer",
            (ContainerSpec("n", cpuset_cpus="0"),),
            annotations={f"{CPUS_KEY}/pod": "1"},
        )
    )
    new_id = newcomer.container_id("n")
    assert_pinned(fresh_kubelet, new_id, "1")
    for pod in (survivor, newcomer):  # survivor: a container known only from Synchronize
        fresh_kubelet.remove_pod(pod)
    assert fresh_kubelet.list_pods() == []
    # the last event expected: every event before it is logged by then
    *_, last = wait_sessions(logger.log_text, logged("RemovePodSandbox", "default/newcomer"))
    assert [(e.name, e.id) for e in last.of_pod("default/newcomer")] == [
        ("RunPodSandbox", None),
        *[(n, new_id) for n in CONTAINER_LIFECYCLE[:4]],
        ("StopContainer", new_id),
        ("StopPodSandbox", None),
        ("RemoveContainer", new_id),
        ("RemovePodSandbox", None),
    ]
    # containerd (1.7.24, 2.1.9) delivers StopPodSandbox/RemovePodSandbox only for pods it ran
    # itself since it started: it tracks NRI state per id in memory, and Synchronize refills
    # it for containers only. A surviving pod's removal therefore reaches plugins as its
    # containers' events alone.
    assert [(e.name, e.id) for e in last.of_pod("default/survivor")] == [
        ("StopContainer", cid),
        ("RemoveContainer", cid),
    ]


# --- 6. pre-launched plugins ----------------------------------------------------------------


def test_prelaunched_logger_gets_its_config_and_sees_events(
    make_containerd: Callable[..., Containerd],
) -> None:
    runtime = make_containerd(start=False)
    events = runtime.root / "plugin-logs" / "events.log"  # kept and attached by the harness
    plugin = runtime.install_python_plugin(
        8,
        "pylogger",
        LOGGER,
        ["--log-file", str(events)],
        config="some: config\n",
        pythonpath=[REPO_ROOT],
    )
    runtime.start()  # containerd waits for pre-launched plugins to register
    text = wait_in_file(events, r"08-pylogger: registered with containerd")  # NRI_PLUGIN_* names
    assert "config=13 bytes" in text  # 08-pylogger.conf arrived in Configure

    kubelet = Kubelet(runtime)
    pod = kubelet.run_pod(PodSpec("pre", (ContainerSpec("c"),)))
    cid = pod.container_id("c")
    (session,) = wait_sessions(events.read_text, logged("PostStartContainer", "default/pre"))
    assert [(e.name, e.id) for e in session.of_pod("default/pre")] == [
        ("RunPodSandbox", None),
        *[(n, cid) for n in CONTAINER_LIFECYCLE[:4]],
    ]
    if runtime_facts(runtime).synchronizes_prelaunched:
        assert session.sync_pods == 0 and session.synced == []
    else:  # NRI 0.6.1 synchronizes only plugins that connect to its socket
        assert session.sync_pods is None and session.synced == []
    assert plugin.log_path.read_text() == ""  # nothing on stdout or stderr


def _child_running(parent: int, module: str) -> int:
    """The PID of ``parent``'s child process running ``python -m module``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and module in cmdline(int(entry.name)):
            return int(entry.name)
    raise AssertionError(f"no child of {parent} runs {module}")


def test_prelaunched_pin_cpus_pins_and_repins_containers(
    make_containerd: Callable[..., Containerd], tmp_path: Path
) -> None:
    require_cpus(2)
    control = tmp_path / "pins.json"
    runtime = make_containerd(start=False)
    log = runtime.root / "plugin-logs" / "pin_cpus.log"  # kept and attached by the harness
    plugin = runtime.install_python_plugin(
        9,
        "pinner",
        PIN_CPUS,
        ["--log-file", str(log), "--control-file", str(control)],
        pythonpath=[REPO_ROOT],
    )
    runtime.start()
    wait_in_file(log, r"09-pinner: registered with containerd")
    assert runtime.pid is not None
    pid = _child_running(runtime.pid, PIN_CPUS)

    kubelet = Kubelet(runtime)
    pod = kubelet.run_pod(
        PodSpec(
            "pre",
            (ContainerSpec("c", cpuset_cpus="0"),),
            annotations={f"{CPUS_KEY}/container.c": "1"},
        )
    )
    cid = pod.container_id("c")
    assert_pinned(kubelet, cid, "1")

    # unsolicited UpdateContainers over the connection containerd handed over as fd 3
    control.write_text(json.dumps({"c": "0"}))
    os.kill(pid, signal.SIGUSR1)
    wait_in_file(log, re.escape("re-pinned 1 container(s), 0 failed"))
    assert_pinned(kubelet, cid, "0")
    assert plugin.log_path.read_text() == ""  # nothing on stdout or stderr
