"""``nrirp-nri-v01 invoke`` as the runtime runs it (a process per request, JSON on stdin), with
``nrirp run --nri-v01`` as a process, and alone (standalone): the same decisions both ways,
written into a temporary cgroup tree; bad input is an error result, never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs
from nrirp.adapters.nri_v01.protocol import Request
from nrirp.domain.model import Resources
from nrirp.domain.model.pod_spec import ContainerSpec, PodSpec
from tests.support.nri_v01 import CgroupTree, V01Pod

EXEC = shutil.which("nrirp-nri-v01", path=os.path.dirname(sys.executable))
CONFIG = "reservedResources: {cpu: 'cpuset:0'}\n"


def spec(name: str, cpu: str | None) -> PodSpec:
    if cpu is None:
        return PodSpec(name, containers=(ContainerSpec("c"),))
    res = Resources.of(
        requests={"cpu": cpu, "memory": "64Mi"}, limits={"cpu": cpu, "memory": "64Mi"}
    )
    return PodSpec(name, containers=(ContainerSpec("c", res),))


WORKLOAD = [spec("be", None), spec("g1", "2"), spec("bu", "500m"), spec("g2", "3")]


@pytest.fixture(scope="module")
def sysfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sysfs")
    write_sysfs(resolve(load_machine("box-16"), "box-16"), root)
    return root


def invoke(request: Request | bytes, *argv: str) -> tuple[int, dict[str, object], str]:
    assert EXEC is not None, "nrirp-nri-v01 is not installed next to this Python"
    data = request if isinstance(request, bytes) else request.to_json().encode()
    proc = subprocess.run(
        [EXEC, *(argv or ("invoke",))], input=data, capture_output=True, timeout=60, check=False
    )
    out = proc.stdout.decode()
    assert out.count("\n") == 1 and "Traceback" not in out, out  # exactly one JSON result
    return proc.returncode, json.loads(out), proc.stderr.decode()


class Setup:
    def __init__(self, tmp: Path, sysfs: Path, version: str = "v1") -> None:
        self.tmp = tmp
        self.sysfs = sysfs
        self.tree = CgroupTree(tmp / "cgroup", version)
        self.socket = str(tmp / "run" / "engine.sock")
        (tmp / "config.yaml").write_text(CONFIG)

    def conf(self, mode: str) -> dict[str, object]:
        return {
            "socket": self.socket,
            "mode": mode,
            "policy": "topology-aware",
            "configFile": str(self.tmp / "config.yaml"),
            "stateDir": str(self.tmp / "state"),
            "sysfsRoot": str(self.sysfs),
            "cgroupRoot": str(self.tree.root),
            "timeout": 30,
        }

    def run(self, mode: str) -> dict[str, str]:
        """Start every pod of the workload; the CPUs each container's cgroup got."""
        cpus: dict[str, str] = {}
        for serial, pod_spec in enumerate(WORKLOAD):
            pod = V01Pod.of(pod_spec, serial, conf=self.conf(mode))
            self.tree.add_pod(pod)
            for request in pod.creates():
                code, result, err = invoke(request)
                assert code == 0 and result["error"] == "", (result, err)
            cpus[pod_spec.name] = self.tree.cpus(pod.cgroups_path("c"))
        return cpus


@pytest.fixture
def daemon(tmp_path: Path, sysfs: Path) -> Iterator[Setup]:
    setup = Setup(tmp_path, sysfs)
    log = open(tmp_path / "daemon.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "nrirp", "run", "--nri-v01",
            "--policy", "topology-aware", "--config-file", str(tmp_path / "config.yaml"),
            "--engine-socket", setup.socket, "--state-dir", str(tmp_path / "state"),
            "--sysfs-root", str(sysfs), "--cgroup-root", str(setup.tree.root),
            "--config-poll-interval", "0", "--disable-agent",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not os.path.exists(setup.socket):
        assert proc.poll() is None, (tmp_path / "daemon.log").read_text()
        assert time.monotonic() < deadline, (tmp_path / "daemon.log").read_text()
        time.sleep(0.05)
    try:
        yield setup
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0, (tmp_path / "daemon.log").read_text()
        log.close()
        assert not os.path.exists(setup.socket)


def test_daemon_and_standalone_decide_the_same(daemon: Setup, tmp_path: Path, sysfs: Path) -> None:
    through_daemon = daemon.run("daemon")
    alone = Setup(tmp_path / "alone", sysfs)
    assert alone.run("standalone") == through_daemon
    assert len(through_daemon["g1"].split(",")) == 1  # exclusive CPUs of their own
    assert through_daemon["be"] != "0-15"


def test_the_result_tells_where_it_was_decided(daemon: Setup) -> None:
    pod = V01Pod.of(spec("g", "2"), 0, conf=daemon.conf("auto"))
    daemon.tree.add_pod(pod)
    invoke(pod.sandbox())
    code, result, _ = invoke(pod.container("c"))
    metadata = result["metadata"]
    assert code == 0 and isinstance(metadata, dict)
    assert metadata["engine"] == f"daemon {daemon.socket}"
    assert metadata["cpus"] == daemon.tree.cpus(pod.cgroups_path("c"))
    assert result["plugin"] == "nrirp-nri-v01" and result["version"] == "0.1"


def test_without_a_daemon_auto_decides_standalone_and_persists(tmp_path: Path, sysfs: Path) -> None:
    setup = Setup(tmp_path, sysfs)
    be = V01Pod.of(spec("be", None), 0, conf=setup.conf("auto"))
    setup.tree.add_pod(be)
    for request in be.creates():
        code, result, err = invoke(request)
        assert code == 0 and result["metadata"]["engine"] == "standalone", (result, err)  # type: ignore[index]
    shared = setup.tree.cpus(be.cgroups_path("c"))
    g = V01Pod.of(spec("g", "2"), 1, conf=setup.conf("auto"))
    setup.tree.add_pod(g)
    for request in g.creates():
        assert invoke(request)[0] == 0
    assert setup.tree.cpus(be.cgroups_path("c")) != shared  # the saved state knew about be
    for request in g.deletes():
        assert invoke(request)[0] == 0
    assert setup.tree.cpus(be.cgroups_path("c")) == shared
    state = json.loads((tmp_path / "state" / "cache").read_text())
    assert [c["id"] for c in state["containers"]] == [be.container_id("c")]


@pytest.mark.parametrize(
    ("data", "argv", "message"),
    [
        (b"{nope", (), "bad request: request is not JSON"),
        (b"", (), "bad request: empty request"),
        (b'{"version": "0.1", "state": "create", "id": "x"}', (), "bad request: spec: missing"),
        (b"{}", ("add",), "invalid arg add: usage: nrirp-nri-v01 invoke < request"),
        (b"{}", ("",), "invalid arg : usage"),
    ],
)
def test_bad_input_is_an_error_result(data: bytes, argv: tuple[str, ...], message: str) -> None:
    code, result, _ = invoke(data, *argv)
    assert code == 1 and str(result["error"]).startswith(message), result


def test_bad_conf_and_no_daemon_are_error_results(tmp_path: Path, sysfs: Path) -> None:
    setup = Setup(tmp_path, sysfs)
    pod = V01Pod.of(spec("be", None), 0, conf={**setup.conf("auto"), "polcy": "x"})
    code, result, _ = invoke(pod.sandbox())
    assert code == 1 and str(result["error"]).startswith("bad request: conf.polcy: unknown key")
    pod = V01Pod.of(spec("be", None), 0, conf=setup.conf("daemon"))
    code, result, _ = invoke(pod.sandbox())
    assert code == 1
    assert result["error"] == (
        f"no engine API at {setup.socket}: No such file or directory (conf.mode is daemon)"
    )
    pod = V01Pod.of(spec("be", None), 0, conf={"socket": setup.socket})
    code, result, _ = invoke(pod.sandbox())
    assert code == 1 and "conf.policy is not set" in str(result["error"])


def test_standalone_errors_read_as_the_daemons_on_one_line(tmp_path: Path, sysfs: Path) -> None:
    setup = Setup(tmp_path, sysfs)
    pod = V01Pod.of(spec("g", "2"), 0, conf=setup.conf("standalone"))
    setup.tree.add_pod(pod)
    assert invoke(pod.sandbox())[0] == 0
    request = json.loads(pod.container("c").to_json())
    request["spec"]["resources"]["cpu"]["cpus"] = "0,,1"  # a bad spec, not a bad conf
    code, result, _ = invoke(json.dumps(request).encode())
    assert code == 1, result
    assert result["error"] == (
        "bad request: spec.resources.cpu.cpus: invalid cpu list '0,,1': empty element"
    )
    conf = {**setup.conf("standalone"), "config": {"bogus": 1}}
    del conf["configFile"]
    pod = V01Pod.of(spec("be", None), 1, conf=conf)
    code, result, _ = invoke(pod.sandbox())
    assert code == 1 and result["error"] == (
        "conf: invalid topology-aware policy configuration (2 problems): "
        "bogus: unknown field; reservedResources: required field missing"
    ), result
