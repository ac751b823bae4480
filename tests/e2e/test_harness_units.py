"""Fast unit tests of the e2e harness's pure helpers (no root, no containerd; not marked e2e)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tarfile
import time
import tomllib
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrirp.domain.model.kubelet import oom_score_adj
from nrirp.simruntime import kubelet as sim_kubelet

from .harness.cgroups import (
    CgroupError,
    CgroupView,
    Hierarchy,
    ProcCgroups,
    cgroup_hierarchies,
    parse_mountinfo,
    remove_cgroup_tree,
    shares_to_weight,
)
from .harness.config import ContainerdOptions, Layout, render_config
from .harness.containerd import Containerd, shim_socket
from .harness.containerd2 import render_config_v3
from .harness.cri_proto import CriApi, strip_gogoproto
from .harness.facts import RuntimeFacts, runtime_facts
from .harness.image import IDLE_CMD, IMAGE_REF, build_oci_archive, oci_architecture
from .harness.kubelet import _catches_sigterm
from .harness.mounts import mounts_under
from .harness.packages import HarnessSetupError, RuntimeBinaries, parse_containerd_version
from .harness.plugins import PluginProcess, PluginProcessError, python_plugin_wrapper
from .harness.processes import parse_shim
from .harness.resources import QOSClass, Resources, linux_resources

GiB = 2**30

# --- CRI resource numbers ------------------------------------------------------------------
# The kubelet arithmetic is nrirp.domain.model.kubelet (tests/domain/test_kubelet.py); here: that
# the harness packs it into CRI exactly as the simulated runtime packs it into NRI.

resources_strategy = st.builds(
    Resources,
    cpu_request=st.none() | st.integers(0, 64_000),
    cpu_limit=st.none() | st.integers(1, 64_000),
    memory_request=st.none() | st.integers(0, 64 * GiB),
    memory_limit=st.none() | st.integers(1, 64 * GiB),
)


@given(resources_strategy, st.sampled_from(QOSClass))
def test_cri_numbers_are_what_the_simulated_runtime_delivers_through_nri(
    res: Resources, qos: QOSClass
) -> None:
    cri = linux_resources(res, qos, 8 * GiB, cpuset_cpus="0-1", cpuset_mems="0")
    nri = sim_kubelet.linux_resources(res, cpuset_cpus="0-1", cpuset_mems="0")
    assert cri.cpu_shares == nri.cpu.shares.value
    assert cri.cpu_period == nri.cpu.period.value
    assert cri.cpu_quota == (nri.cpu.quota.value if nri.cpu.HasField("quota") else 0)
    assert cri.memory_limit_in_bytes == (
        nri.memory.limit.value if nri.memory.HasField("limit") else 0
    )
    assert (cri.cpuset_cpus, cri.cpuset_mems) == (nri.cpu.cpus, nri.cpu.mems)
    assert cri.oom_score_adj == oom_score_adj(qos, res.memory_request, 8 * GiB)


def test_cri_numbers_of_a_burstable_container() -> None:
    res = Resources.of(requests={"cpu": "250m"}, limits={"cpu": "500m", "memory": "64Mi"})
    values = linux_resources(res, QOSClass.BURSTABLE, 8 * GiB, cpuset_cpus="0-1")
    assert (values.cpu_shares, values.cpu_quota, values.cpu_period) == (256, 50_000, 100_000)
    assert (values.memory_limit_in_bytes, values.oom_score_adj) == (64 * 2**20, 993)
    assert values.cpuset_cpus == "0-1" and values.cpuset_mems == ""
    unlimited = linux_resources(Resources(), QOSClass.BESTEFFORT, 8 * GiB)
    assert (unlimited.cpu_shares, unlimited.cpu_quota, unlimited.memory_limit_in_bytes) == (2, 0, 0)
    assert unlimited.oom_score_adj == 1000


def test_cri_numbers_refuse_hugepages() -> None:
    res = Resources.of(limits={"cpu": "1", "hugepages-2Mi": "4Mi"})
    with pytest.raises(ValueError, match="does not send hugepage limits"):
        linux_resources(res, QOSClass.BURSTABLE, 8 * GiB)


# --- cgroups, mounts, processes -------------------------------------------------------------

HYBRID_MOUNTINFO = """\
25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
32 25 0:27 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
33 32 0:28 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw
34 32 0:29 / /sys/fs/cgroup/systemd rw,nosuid shared:11 - cgroup cgroup rw,xattr,name=systemd
36 32 0:31 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:13 - cgroup cgroup rw,cpu,cpuacct
37 32 0:32 / /sys/fs/cgroup/cpuset rw,nosuid shared:14 - cgroup cgroup rw,cpuset
38 32 0:33 / /sys/fs/cgroup/memory rw,nosuid shared:15 - cgroup cgroup rw,memory
"""
V2_MOUNTINFO = "30 25 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"


def test_parse_mountinfo_unescapes_paths() -> None:
    (m,) = parse_mountinfo(
        r"40 30 0:50 /a\040b /mnt/x\040y rw - overlay overlay rw,lowerdir=/l" "\n"
    )
    assert (m.root, m.mountpoint, m.fstype) == ("/a b", "/mnt/x y", "overlay")
    with pytest.raises(ValueError, match="malformed"):
        parse_mountinfo("garbage line\n")


def test_cgroup_hierarchies_of_a_hybrid_host() -> None:
    found = {h.mountpoint.name: h for h in cgroup_hierarchies(parse_mountinfo(HYBRID_MOUNTINFO))}
    assert set(found) == {"unified", "systemd", "cpu,cpuacct", "cpuset", "memory"}
    assert found["cpu,cpuacct"].controllers == {"cpu", "cpuacct"}
    assert found["systemd"].controllers == {"name=systemd"}
    assert found["unified"].version == 2


def _fake_tree(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = tmp_path / name.lstrip("/")
        assert path.is_relative_to(tmp_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")


def test_cgroup_view_reads_v1_files(tmp_path: Path) -> None:
    c = "/kubepods/burstable/podX/cid"
    _fake_tree(
        tmp_path,
        {
            f"cpuset{c}/cpuset.cpus": "1",
            f"cpuset{c}/cpuset.mems": "0",
            f"cpu{c}/cpu.shares": "256",
            f"cpu{c}/cpu.cfs_quota_us": "50000",
            f"cpu{c}/cpu.cfs_period_us": "100000",
            f"memory{c}/memory.limit_in_bytes": str(2**63 - 4096),
        },
    )
    hierarchies = tuple(
        Hierarchy(tmp_path / name, "/", 1, frozenset({name}))
        for name in ("cpuset", "cpu", "memory")
    )
    membership = ProcCgroups.parse(f"5:cpuset:{c}\n4:cpu,cpuacct:{c}\n3:memory:{c}\n0::/\n")
    view = CgroupView(membership, hierarchies)
    assert not view.is_v2
    assert (view.cpuset_cpus(), view.cpuset_mems()) == ("1", "0")
    cpu = view.cpu()
    assert (cpu.shares, cpu.weight, cpu.quota, cpu.period) == (256, None, 50000, 100000)
    assert view.memory_limit() is None
    with pytest.raises(CgroupError, match="blkio"):
        view.directory("blkio")


def test_cgroup_view_reads_v2_files(tmp_path: Path) -> None:
    c = "/kubepods/podX/cid"
    _fake_tree(
        tmp_path,
        {
            f"{c}/cpuset.cpus": "0-1",
            f"{c}/cpu.weight": str(shares_to_weight(1024)),
            f"{c}/cpu.max": "max 100000",
            f"{c}/memory.max": str(64 * 2**20),
        },
    )
    view = CgroupView(ProcCgroups.parse(f"0::{c}\n"), (Hierarchy(tmp_path, "/", 2, frozenset()),))
    assert view.is_v2
    assert view.cpuset_cpus() == "0-1"
    cpu = view.cpu()
    assert (cpu.shares, cpu.weight, cpu.quota, cpu.period) == (None, 39, -1, 100000)
    assert view.memory_limit() == 64 * 2**20


def test_hierarchy_maps_paths_below_its_root() -> None:
    h = Hierarchy(Path("/sys/fs/cgroup/cpuset"), "/kubepods", 1, frozenset({"cpuset"}))
    assert h.directory("/kubepods/pod1/c") == Path("/sys/fs/cgroup/cpuset/pod1/c")
    with pytest.raises(CgroupError, match="outside"):
        h.directory("/system.slice/x")


def test_remove_cgroup_tree_deepest_first(tmp_path: Path) -> None:
    (tmp_path / "cpu/kubepods/podA/c1").mkdir(parents=True)
    (tmp_path / "cpu/kubepods/podA/c2").mkdir(parents=True)
    (tmp_path / "cpu/kubepods/podB").mkdir(parents=True)
    hierarchies = [Hierarchy(tmp_path / "cpu", "/", 1, frozenset({"cpu"}))]
    assert remove_cgroup_tree("/kubepods/podA", hierarchies) == []
    assert not (tmp_path / "cpu/kubepods/podA").exists()
    assert (tmp_path / "cpu/kubepods/podB").is_dir()
    assert remove_cgroup_tree("/kubepods/gone", hierarchies) == []
    with pytest.raises(ValueError, match="refusing"):
        remove_cgroup_tree("/", hierarchies)


def test_mounts_under_lists_deepest_first() -> None:
    text = (
        "1 0 0:1 / /tmp/r/state/x/rootfs rw - overlay overlay rw\n"
        "2 0 0:2 / /tmp/r/state/s/shm rw - tmpfs shm rw\n"
        "3 0 0:3 / /tmp/r rw - tmpfs t rw\n"
        "4 0 0:4 / /tmp/rr rw - tmpfs t rw\n"
        "5 0 0:5 / /tmp/r/state/x/rootfs/proc rw - proc proc rw\n"
    )
    assert mounts_under(Path("/tmp/r"), text) == [
        "/tmp/r/state/x/rootfs/proc",
        "/tmp/r/state/x/rootfs",
        "/tmp/r/state/s/shm",
        "/tmp/r",
    ]


def test_shims_are_recognised_by_their_address() -> None:
    argv = ["/x/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", "abc", "-address", "/r/s"]
    shim = parse_shim(42, argv)
    assert shim is not None and (shim.pid, shim.namespace, shim.id, shim.address) == (
        42,
        "k8s.io",
        "abc",
        "/r/s",
    )
    assert parse_shim(1, ["/usr/bin/containerd", "-address", "/r/s"]) is None
    expected = hashlib.sha256(b"/r/s/k8s.io/abc").hexdigest()
    assert shim_socket("/r/s", "k8s.io", "abc") == Path("/run/containerd/s") / expected


# --- packages, proto, config, image ---------------------------------------------------------


def test_containerd_version_parsing() -> None:
    out = "containerd github.com/containerd/containerd 1.7.24~ds1 1.7.24~ds1-6+deb13u1\n"
    assert parse_containerd_version(out) == "1.7.24"
    with pytest.raises(HarnessSetupError, match="cannot find a version"):
        parse_containerd_version("containerd unknown")


def test_strip_gogoproto_keeps_everything_else() -> None:
    proto = (
        'syntax = "proto3";\npackage runtime.v1;\n'
        'import "github.com/gogo/protobuf/gogoproto/gogo.proto";\n'
        "option (gogoproto.marshaler_all) = true;\n"
        "message A { string b = 1 [(gogoproto.nullable) = false]; }\n"
    )
    out = strip_gogoproto(proto)
    assert "gogo" not in out
    assert out.splitlines()[4] == "message A { string b = 1; }"
    assert len(out.splitlines()) == len(proto.splitlines())
    with pytest.raises(HarnessSetupError, match="unhandled gogoproto"):
        strip_gogoproto("extend gogoproto.X {}\n")


def _binaries(tmp_path: Path) -> RuntimeBinaries:
    return RuntimeBinaries(
        containerd=tmp_path / "containerd",
        ctr=tmp_path / "ctr",
        runc=tmp_path / "runc",
        busybox=tmp_path / "busybox",
        cri_proto=tmp_path / "api.proto",
        containerd_version="1.7.24",
    )


def test_config_puts_everything_in_the_private_dir(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "r")
    options = ContainerdOptions(registration_timeout="3s", request_timeout="7s")
    config = tomllib.loads(render_config(layout, tmp_path / "runc", options))
    assert config["version"] == 2
    assert config["grpc"]["address"] == str(layout.address)
    nri = config["plugins"]["io.containerd.nri.v1.nri"]
    assert nri["disable"] is False and nri["disable_connections"] is False
    assert (nri["plugin_registration_timeout"], nri["plugin_request_timeout"]) == ("3s", "7s")
    assert nri["socket_path"] == str(layout.nri_socket)
    cri = config["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["restrict_oom_score_adj"] is True and cri["sandbox_image"] == IMAGE_REF
    runc = cri["containerd"]["runtimes"]["runc"]["options"]
    assert runc == {
        "BinaryName": str(tmp_path / "runc"),
        "Root": str(layout.runc_root),
        "SystemdCgroup": False,
    }

    def paths(value: object) -> list[str]:
        if isinstance(value, dict):
            return [p for v in value.values() for p in paths(v)]
        return [value] if isinstance(value, str) and value.startswith("/") else []

    outside = [p for p in paths(config) if not p.startswith(str(tmp_path))]
    assert outside == []
    disabled = ContainerdOptions(nri_enabled=False)
    assert tomllib.loads(render_config(layout, tmp_path / "runc", disabled))["plugins"][
        "io.containerd.nri.v1.nri"
    ]["disable"]


def test_containerd2_config_is_the_version_3_schema_in_the_private_dir(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "r")
    options = ContainerdOptions(registration_timeout="3s", request_timeout="7s")
    config = tomllib.loads(render_config_v3(layout, tmp_path / "runc", options))
    assert config["version"] == 3
    assert config["grpc"]["address"] == str(layout.address)
    plugins = config["plugins"]
    nri = plugins["io.containerd.nri.v1.nri"]
    assert nri["disable"] is False and nri["disable_connections"] is False
    assert (nri["plugin_registration_timeout"], nri["plugin_request_timeout"]) == ("3s", "7s")
    assert nri["socket_path"] == str(layout.nri_socket)
    images = plugins["io.containerd.cri.v1.images"]
    assert images["pinned_images"] == {"sandbox": IMAGE_REF}
    runtime = plugins["io.containerd.cri.v1.runtime"]
    assert runtime["restrict_oom_score_adj"] is True
    assert runtime["cni"]["bin_dirs"] == [str(layout.root / "cni" / "bin")]
    runc = runtime["containerd"]["runtimes"]["runc"]
    assert runc["runtime_type"] == "io.containerd.runc.v2"
    assert runc["options"] == {
        "BinaryName": str(tmp_path / "runc"),
        "Root": str(layout.runc_root),
        "SystemdCgroup": False,
    }
    assert "sandbox_image" not in plugins["io.containerd.grpc.v1.cri"]  # a version 2 key

    def paths(value: object) -> list[str]:
        if isinstance(value, dict):
            return [p for v in value.values() for p in paths(v)]
        if isinstance(value, list):
            return [p for v in value for p in paths(v)]
        return [value] if isinstance(value, str) and value.startswith("/") else []

    assert [p for p in paths(config) if not p.startswith(str(tmp_path))] == []
    disabled = ContainerdOptions(nri_enabled=False)
    assert tomllib.loads(render_config_v3(layout, tmp_path / "runc", disabled))["plugins"][
        "io.containerd.nri.v1.nri"
    ]["disable"]


def test_runtime_facts_by_release_series(tmp_path: Path) -> None:
    def facts(version: str) -> RuntimeFacts:
        binaries = attrs.evolve(_binaries(tmp_path), containerd_version=version)
        return runtime_facts(Containerd(binaries, CriApi(sys, sys, tmp_path), None, tmp_path))  # type: ignore[arg-type]

    assert facts("1.7.24").nri == "0.6.1" and not facts("1.7.24").synchronizes_prelaunched
    assert facts("1.7.24").prelaunched_timeout_is_fatal
    assert facts("2.1.9").nri == "0.8.0" and facts("2.1.9").synchronizes_prelaunched
    assert not facts("2.1.9").prelaunched_timeout_is_fatal
    with pytest.raises(HarnessSetupError, match=r"know no facts of containerd 2\.9"):
        facts("2.9.0")


def test_install_plugin_validates_names(tmp_path: Path) -> None:
    runtime = Containerd(_binaries(tmp_path), CriApi(sys, sys, tmp_path), None, tmp_path / "r")  # type: ignore[arg-type]
    path = runtime.install_plugin(5, "topology-aware", "#!/bin/sh\n", config="a: 1\n")
    assert path == runtime.plugin_dir / "05-topology-aware" and os.access(path, os.X_OK)
    assert (runtime.plugin_config_dir / "05-topology-aware.conf").read_text() == "a: 1\n"
    for index, name in ((100, "x"), ("5", "x"), (1, ""), (1, "a/b"), (1, "a b")):
        with pytest.raises(ValueError):
            runtime.install_plugin(index, name, "#!/bin/sh\n")


def _fake_busybox(tmp_path: Path) -> Path:
    script = tmp_path / "busybox"
    script.write_text(
        "#!/bin/sh\n"
        '[ "$1" = --list-full ] || exit 1\n'
        "printf 'bin/sh\\nbin/busybox\\nusr/bin/awk\\nsbin/init\\nlinuxrc\\n'\n"
    )
    script.chmod(0o755)
    return script


def test_oci_archive_layout(tmp_path: Path) -> None:
    busybox = _fake_busybox(tmp_path)
    archive = build_oci_archive(busybox, tmp_path / "a.tar", architecture="amd64")
    with tarfile.open(archive.path) as outer:
        blobs = {
            m.name: outer.extractfile(m).read()  # type: ignore[union-attr]
            for m in outer.getmembers()
            if m.isfile()
        }
    for name, data in blobs.items():
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == name.rsplit("/", 1)[1]
    index = json.loads(blobs["index.json"])
    (entry,) = index["manifests"]
    assert entry["annotations"]["io.containerd.image.name"] == IMAGE_REF
    assert entry["digest"] == archive.manifest_digest
    manifest = json.loads(blobs["blobs/sha256/" + entry["digest"].split(":")[1]])
    config = json.loads(blobs["blobs/sha256/" + manifest["config"]["digest"].split(":")[1]])
    assert config["config"]["Cmd"] == list(IDLE_CMD) and config["architecture"] == "amd64"
    layer_digest = manifest["layers"][0]["digest"]
    assert config["rootfs"]["diff_ids"] == [layer_digest]
    with tarfile.open(fileobj=io.BytesIO(blobs["blobs/sha256/" + layer_digest.split(":")[1]])) as t:
        members = {m.name: m for m in t.getmembers()}
        assert members["bin/busybox"].mode == 0o755
        assert members["bin/busybox"].size == busybox.stat().st_size
        assert members["usr/bin/awk"].issym() and members["usr/bin/awk"].linkname == "/bin/busybox"
        assert members["tmp"].mode == 0o1777
        assert "linuxrc" not in members
        passwd = t.extractfile("etc/passwd").read().decode()  # type: ignore[union-attr]
        assert passwd.startswith("root:x:0:0:")
    again = build_oci_archive(busybox, tmp_path / "b.tar", architecture="amd64")
    assert (tmp_path / "b.tar").read_bytes() == archive.path.read_bytes()
    assert again.manifest_digest == archive.manifest_digest


def test_oci_architecture_names() -> None:
    assert oci_architecture("x86_64") == "amd64"
    assert oci_architecture("aarch64") == "arm64"
    with pytest.raises(RuntimeError, match="no OCI architecture"):
        oci_architecture("pdp11")


# --- plugin processes and the pre-launched wrapper ------------------------------------------

REPO_ROOT = Path(__file__).resolve().parents[2]
LAUNCH_WITH_FD3 = (
    "import os, sys; os.dup2(int(sys.argv[1]), 3); "
    "os.execve(sys.argv[2], sys.argv[2:], "
    "{k: v for k, v in os.environ.items() if k.startswith('NRI_PLUGIN_')})"
)


def test_python_wrapper_runs_in_containerds_exact_env(tmp_path: Path) -> None:
    log = tmp_path / "plugin.log"
    wrapper = tmp_path / "05-probe"
    wrapper.write_text(
        python_plugin_wrapper(
            "tests.e2e.harness.probe_plugin", ["a b", "--x"], log, pythonpath=[REPO_ROOT]
        )
    )
    wrapper.chmod(0o755)
    assert wrapper.read_text().startswith("#!/bin/sh\n")
    env = {"NRI_PLUGIN_NAME": "probe", "NRI_PLUGIN_IDX": "05", "NRI_PLUGIN_SOCKET": "3"}
    ours, theirs = socket.socketpair()
    with ours, theirs:
        # like containerd: one socketpair end as fd 3, and exactly the NRI_PLUGIN_* environment
        proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCH_WITH_FD3, str(theirs.fileno()), str(wrapper)],
            env=env,
            pass_fds=(theirs.fileno(),),
        )
        theirs.close()
        ours.close()  # EOF for the probe: it exits
        assert proc.wait(timeout=30) == 0
    report = json.loads(log.read_text().splitlines()[0].removeprefix("probe "))
    assert report["argv"] == ["a b", "--x"]
    assert report["fd3_is_socket"] is True
    assert report["python"] == sys.executable
    assert {k: v for k, v in report["env"].items() if k.startswith("NRI_")} == env
    assert "PATH" not in report["env"]
    assert "probe: fd 3 closed" in log.read_text()


def test_plugin_process_waits_for_lines_and_stops(tmp_path: Path) -> None:
    script = "import time; print('ready', flush=True); time.sleep(60)"
    proc = PluginProcess([sys.executable, "-c", script], tmp_path / "p.log").start()
    try:
        assert proc.wait_for_line(r"^rea") == "ready"
        with pytest.raises(PluginProcessError, match="did not log"):
            proc.wait_for_line("never", timeout=0.2)
        assert proc.running
    finally:
        assert proc.stop() == -15
    assert not proc.running


def test_plugin_process_reports_early_exit_with_its_log(tmp_path: Path) -> None:
    proc = PluginProcess.python_module("json.tool", ["/nonexistent"], tmp_path / "p.log").start()
    with pytest.raises(PluginProcessError, match=r"(?s)exited with 2.*No such file"):
        proc.wait_for_line("never", timeout=10)
    with pytest.raises(PluginProcessError, match="already started"):
        proc.start()


def test_catches_sigterm_sees_the_idle_loop_trap() -> None:
    """The image's idle loop sets its trap some time after it starts; until then SIGTERM would
    be ignored by a container's PID 1, which is what ``Kubelet.start_container`` waits out."""
    loop = subprocess.Popen(list(IDLE_CMD), start_new_session=True)  # the host's /bin/sh
    plain = subprocess.Popen(["sleep", "60"])
    try:
        deadline = time.monotonic() + 10
        while not _catches_sigterm(loop.pid):
            assert time.monotonic() < deadline, "the idle loop never trapped SIGTERM"
            time.sleep(0.01)
        assert not _catches_sigterm(plain.pid)
        os.kill(loop.pid, signal.SIGTERM)
        assert loop.wait(timeout=10) == 0  # the trap exits 0
    finally:
        os.killpg(loop.pid, signal.SIGKILL)  # the loop's session: its background sleep
        loop.wait()
        plain.kill()
        plain.wait()
    assert not _catches_sigterm(plain.pid)  # gone
