"""Fixtures of the e2e suite: a real containerd 1.7.24 with NRI, driven like a kubelet.

Session: packages (cached Debian downloads), the compiled CRI API, the busybox image archive, the
Go reference plugin. Module: one shared containerd (``containerd``), cleaned of pods after every
test by the ``kubelet`` fixture. Test: ``fresh_containerd`` / ``make_containerd`` for tests that
restart the runtime or install pre-launched plugins. Nothing here skips: a host that cannot run
the suite fails it with the reason.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest

from tests.support.debian import DebianFetchError
from tests.support.gomockrt import GomockrtBuildError

from .harness import (
    Containerd,
    CriApi,
    HarnessSetupError,
    ImageArchive,
    Kubelet,
    RuntimeBinaries,
    build_gomockrt,
    build_oci_archive,
    compile_cri_api,
    fetch_runtime_binaries,
    load_cri_api,
)
from .harness.cgroups import host_hierarchies
from .harness.config import ContainerdOptions
from .harness.fixtures import ContainerdFactory, PluginProcesses

SETUP_TIMES: dict[str, float] = {}


@pytest.fixture(scope="session")
def e2e_host() -> None:
    """The host can run the suite: root, cgroups mounted. Fails (never skips) otherwise."""
    if os.geteuid() != 0:
        pytest.fail(
            "e2e tests need root (they run containerd and runc); run as root", pytrace=False
        )
    if not host_hierarchies():
        pytest.fail(
            "e2e tests need cgroups mounted (no cgroup hierarchy in mountinfo)", pytrace=False
        )


@pytest.fixture(scope="session")
def runtime_binaries(e2e_host: None) -> RuntimeBinaries:
    """containerd 1.7.24 (trixie), runc (bookworm), busybox and the CRI proto, unpacked."""
    started = time.monotonic()
    try:
        binaries = fetch_runtime_binaries()
    except (DebianFetchError, HarnessSetupError) as exc:
        pytest.fail(
            f"e2e harness: fetching the runtime packages from Debian failed: {exc}", pytrace=False
        )
    SETUP_TIMES["packages"] = time.monotonic() - started
    return binaries


@pytest.fixture(scope="session")
def cri_api(runtime_binaries: RuntimeBinaries) -> CriApi:
    """The CRI v1 API compiled from Debian's api.proto."""
    started = time.monotonic()
    try:
        api = load_cri_api(compile_cri_api(runtime_binaries.cri_proto))
    except HarnessSetupError as exc:
        pytest.fail(f"e2e harness: compiling the CRI proto failed: {exc}", pytrace=False)
    SETUP_TIMES["cri_proto"] = time.monotonic() - started
    return api


@pytest.fixture(scope="session")
def busybox_image(
    runtime_binaries: RuntimeBinaries, tmp_path_factory: pytest.TempPathFactory
) -> ImageArchive:
    """The busybox OCI image archive (also the sandbox image)."""
    started = time.monotonic()
    archive = build_oci_archive(
        runtime_binaries.busybox, tmp_path_factory.mktemp("image") / "busybox.oci.tar"
    )
    SETUP_TIMES["image"] = time.monotonic() - started
    return archive


@pytest.fixture(scope="session")
def e2e_logs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where every instance's containerd and plugin logs are kept after teardown."""
    return tmp_path_factory.getbasetemp() / "e2e-logs"


@pytest.fixture(scope="session")
def containerd_factory(
    runtime_binaries: RuntimeBinaries,
    cri_api: CriApi,
    busybox_image: ImageArchive,
    e2e_logs_dir: Path,
) -> Iterator[ContainerdFactory]:
    """Makes started containerd instances; destroys any still alive at the end of the session."""
    factory = ContainerdFactory(runtime_binaries, cri_api, busybox_image, e2e_logs_dir)
    yield factory
    problems = factory.destroy_all()
    assert not problems, f"e2e session teardown left: {problems}"


def _destroy(factory: ContainerdFactory, instance: Containerd) -> None:
    problems = factory.destroy(instance)
    assert not problems, f"containerd teardown left: {problems}"


@pytest.fixture(scope="module")
def containerd(
    containerd_factory: ContainerdFactory, request: pytest.FixtureRequest
) -> Iterator[Containerd]:
    """One containerd shared by the tests of a module (use ``kubelet`` to get pods cleaned)."""
    started = time.monotonic()
    instance = containerd_factory.create(request.node.name)
    SETUP_TIMES.setdefault("containerd_start", time.monotonic() - started)
    yield instance
    _destroy(containerd_factory, instance)


@pytest.fixture
def fresh_containerd(
    containerd_factory: ContainerdFactory, request: pytest.FixtureRequest
) -> Iterator[Containerd]:
    """A containerd of this test's own (restart tests, pre-launched plugins)."""
    instance = containerd_factory.create(request.node.nodeid)
    yield instance
    _destroy(containerd_factory, instance)


@pytest.fixture
def make_containerd(
    containerd_factory: ContainerdFactory, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Containerd]]:
    """``make_containerd(options=None, start=True)``: instances owned by this test."""
    made: list[Containerd] = []

    def make(options: ContainerdOptions | None = None, *, start: bool = True) -> Containerd:
        instance = containerd_factory.create(request.node.nodeid, options, start=start)
        made.append(instance)
        return instance

    yield make
    problems = []
    for instance in made:
        if instance in containerd_factory.instances:
            problems += containerd_factory.destroy(instance)
    assert not problems, f"containerd teardown left: {problems}"


def _clean_kubelet(kubelet: Kubelet) -> None:
    if not kubelet.containerd.running:
        kubelet.containerd.start()  # a test stopped the shared runtime: bring it back, then clean
    kubelet.remove_all()
    assert kubelet.list_pods() == [], "pods survived the test's cleanup"
    assert kubelet.containerd.leftover_shims() == [], "shims survived the test's cleanup"


@pytest.fixture
def kubelet(containerd: Containerd) -> Iterator[Kubelet]:
    """A kubelet on the module's containerd; every pod is removed when the test ends."""
    client = Kubelet(containerd)
    yield client
    _clean_kubelet(client)


@pytest.fixture
def fresh_kubelet(fresh_containerd: Containerd) -> Kubelet:
    """A kubelet on this test's own containerd (torn down with it)."""
    return Kubelet(fresh_containerd)


@pytest.fixture
def plugin_processes(tmp_path: Path) -> Iterator[PluginProcesses]:
    """Start plugin processes (logs in the test's tmp dir); all are stopped after the test."""
    processes = PluginProcesses(tmp_path / "plugin-logs")
    yield processes
    processes.stop_all()


@pytest.fixture(scope="session")
def go_tools(e2e_host: None) -> Path:
    """The Go reference tools (``bin/nristub``), built from tools/gomockrt."""
    started = time.monotonic()
    try:
        directory = build_gomockrt()
    except GomockrtBuildError as exc:
        pytest.fail(f"e2e harness: building the Go NRI tools failed: {exc}", pytrace=False)
    SETUP_TIMES["go_tools"] = time.monotonic() - started
    return directory


@pytest.fixture(scope="session")
def nristub(go_tools: Path) -> Path:
    """The Go NRI stub plugin binary (``-socket``, ``-cpus``, ``-mems``, ``-name``, ``-idx``)."""
    return go_tools / "bin" / "nristub"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    """On failure, attach containerd's and the plugins' log tails to the report."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    funcargs = getattr(item, "funcargs", {})
    instances: dict[int, Containerd] = {}
    for value in funcargs.values():
        found = value.containerd if isinstance(value, Kubelet) else value
        if isinstance(found, Containerd):
            instances.setdefault(id(found), found)
        if isinstance(value, ContainerdFactory):  # e.g. the instances of make_containerd
            for instance in value.instances:
                instances.setdefault(id(instance), instance)
    for instance in instances.values():
        report.sections.append(
            (f"containerd log tail ({instance.log_path})", instance.log_tail(80))
        )
        for log in sorted((instance.root / "plugin-logs").glob("*.log")):
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
            report.sections.append((f"pre-launched plugin log tail ({log})", tail))
    for value in funcargs.values():
        if isinstance(value, PluginProcesses):
            for proc in value.started:
                tail = "\n".join(proc.log_text().splitlines()[-40:])
                report.sections.append((f"plugin log tail ({proc.log_path})", tail))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the harness setup costs measured in this run."""
    if SETUP_TIMES:
        parts = ", ".join(f"{k} {v:.2f}s" for k, v in SETUP_TIMES.items())
        terminalreporter.write_line(f"e2e harness setup: {parts}")
