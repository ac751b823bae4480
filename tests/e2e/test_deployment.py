"""The real deployment path: the image built by ``make image`` (no registry), imported into the
test containerd with ``ctr images import``, the daemon started as a pod through CRI with the
rendered DaemonSet's args, environment, mounts, resources and security settings; it registers
with the containerd that runs it, serves other pods (cpusets checked in their cgroups),
``/readyz`` turns ready, ``/metrics`` scrapes, ``nrirp status`` answers inside the pod; its
container killed, the test restarts it as the kubelet would and it reconciles.

What the harness cannot do as a cluster would, and how it stands in: there is no API server, so
the overlay's default configuration resource is given to the daemon as ``--config-file`` (the
same document the node agent would read; ``deploy/`` is otherwise used as rendered), and pods
use the host network (no CNI): the probes' port is reached on 127.0.0.1. Host paths of the
hostPath volumes are the harness's (its NRI socket directory, a state directory of the test's);
``/sys`` and ``/sys/fs/cgroup`` are the host's own.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from nrirp.domain.model.kubelet import pod_cgroup_parent
from tests.e2e.harness import ContainerSpec, Kubelet, PodSpec, QOSClass, Resources
from tests.e2e.harness.containerd import Containerd
from tests.e2e.harness.kubelet import Pod

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
OVERLAY = REPO / "deploy" / "overlays" / "topology-aware"
NODE = "e2e-node"
PORT = 8891
CONFIG_IN_POD = "/etc/nrirp/config.yaml"


def render() -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl renders deploy/ (kustomize)"
    out = subprocess.run(
        [kubectl, "kustomize", str(OVERLAY)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


@pytest.fixture(scope="module")
def image_archive() -> Path:
    from tools.image.build import cached_image

    started = time.monotonic()
    path = cached_image()
    print(f"\nnrirp image: {path} ({time.monotonic() - started:.1f} s)")
    return path


def get(path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError as error:
        return 0, str(error)


def wait_status(path: str, status: int, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    got, body = 0, ""
    while time.monotonic() < deadline:
        got, body = get(path)
        if got == status:
            return body
        time.sleep(0.2)
    raise AssertionError(f"{path}: {got} {body!r} after {timeout} s, expected {status}")


class DaemonPod:
    """The DaemonSet's pod, made through CRI from the rendered manifest as a kubelet makes it."""

    def __init__(self, kubelet: Kubelet, docs: list[dict[str, Any]], host_dirs: dict[str, Path]):
        self.kubelet = kubelet
        self.pb = kubelet.pb
        ds = next(d for d in docs if d["kind"] == "DaemonSet")
        self.config_doc = next(d for d in docs if d["kind"] == "TopologyAwarePolicy")
        self.template = ds["spec"]["template"]
        self.spec = self.template["spec"]
        [self.ctr] = self.spec["containers"]
        self.host_dirs = host_dirs
        self.uid = str(uuid.uuid4())
        self.name = f"{ds['metadata']['name']}-{NODE}"
        self.namespace = ds["metadata"]["namespace"]
        self.attempt = 0
        self.container_id = ""
        self.pod = self._run_sandbox()

    # --- the pod template, translated as the kubelet translates it -------------------------
    def _host_path(self, volume: dict[str, Any]) -> str:
        if "hostPath" in volume:
            path = volume["hostPath"]["path"]
            return str(self.host_dirs.get(path, path))
        if "emptyDir" in volume:
            return str(self.host_dirs["emptyDir:" + volume["name"]])
        raise AssertionError(f"volume {volume['name']}: no host path the harness can give")

    def mounts(self) -> list[Any]:
        volumes = {v["name"]: v for v in self.spec["volumes"]}
        mounts = [
            self.pb.Mount(
                container_path=m["mountPath"],
                host_path=self._host_path(volumes[m["name"]]),
                readonly=bool(m.get("readOnly", False)),
                propagation=self.pb.PROPAGATION_PRIVATE,
            )
            for m in self.ctr["volumeMounts"]
        ]
        config = self.host_dirs["config"]
        mounts.append(
            self.pb.Mount(
                container_path=str(Path(CONFIG_IN_POD).parent), host_path=str(config), readonly=True
            )
        )
        return mounts

    def security(self) -> Any:
        sc = self.ctr["securityContext"]
        caps = sc.get("capabilities", {})
        seccomp = sc.get("seccompProfile", {}).get("type")
        return self.pb.LinuxContainerSecurityContext(
            capabilities=self.pb.Capability(
                drop_capabilities=list(caps.get("drop", [])),
                add_capabilities=list(caps.get("add", [])),
            ),
            privileged=bool(sc.get("privileged", False)),
            namespace_options=self.pb.NamespaceOption(
                network=self.pb.NODE, pid=self.pb.CONTAINER, ipc=self.pb.POD
            ),
            run_as_user=self.pb.Int64Value(value=sc["runAsUser"]),
            run_as_group=self.pb.Int64Value(value=sc["runAsGroup"]),
            readonly_rootfs=bool(sc.get("readOnlyRootFilesystem", False)),
            no_new_privs=not sc.get("allowPrivilegeEscalation", True),
            seccomp=self.pb.SecurityProfile(profile_type=self.pb.SecurityProfile.RuntimeDefault)
            if seccomp == "RuntimeDefault"
            else None,
        )

    def env(self) -> list[Any]:
        out = []
        for item in self.ctr.get("env", []):
            if "value" in item:
                value = item["value"]
            else:
                assert item["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
                value = NODE
            out.append(self.pb.KeyValue(key=item["name"], value=value))
        return out

    def resources(self) -> Any:
        requests = self.ctr["resources"]["requests"]
        resources = Resources.of(requests=requests)
        values = self.kubelet.linux_resources(resources, QOSClass.BURSTABLE)
        return self.kubelet._cri_resources(values)

    def _run_sandbox(self) -> Pod:
        pb = self.pb
        labels = {
            **self.template["metadata"].get("labels", {}),
            "io.kubernetes.pod.name": self.name,
            "io.kubernetes.pod.namespace": self.namespace,
            "io.kubernetes.pod.uid": self.uid,
        }
        parent = pod_cgroup_parent(QOSClass.BURSTABLE, self.uid)
        config = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(
                name=self.name, uid=self.uid, namespace=self.namespace, attempt=0
            ),
            hostname="",
            log_directory=str(self.kubelet.containerd.layout.pod_logs / self.uid),
            labels=labels,
            annotations=dict(self.template["metadata"].get("annotations", {})),
            linux=pb.LinuxPodSandboxConfig(
                cgroup_parent=parent,
                security_context=pb.LinuxSandboxSecurityContext(
                    namespace_options=pb.NamespaceOption(
                        network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD
                    )
                ),
            ),
        )
        self.kubelet.containerd.track_cgroup(parent)
        reply = self.kubelet._rt("RunPodSandbox", pb.RunPodSandboxRequest(config=config))
        spec = PodSpec(self.name, (), namespace=self.namespace, uid=self.uid)
        pod = Pod(reply.pod_sandbox_id, spec, QOSClass.BURSTABLE, parent, config)
        self.kubelet.pods[pod.id] = pod
        return pod

    def start(self) -> str:
        """CreateContainer (attempt = restarts so far) + StartContainer, as the kubelet does
        for the first start and every restart."""
        pb = self.pb
        args = [*self.ctr["args"], "--config-file", CONFIG_IN_POD]
        config = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=self.ctr["name"], attempt=self.attempt),
            image=pb.ImageSpec(image=self.ctr["image"]),
            args=args,
            envs=self.env(),
            mounts=self.mounts(),
            labels={
                "io.kubernetes.container.name": self.ctr["name"],
                "io.kubernetes.pod.name": self.name,
                "io.kubernetes.pod.namespace": self.namespace,
                "io.kubernetes.pod.uid": self.uid,
            },
            annotations={"io.kubernetes.container.restartCount": str(self.attempt)},
            log_path=f"{self.ctr['name']}/{self.attempt}.log",
            linux=pb.LinuxContainerConfig(
                resources=self.resources(), security_context=self.security()
            ),
        )
        request = pb.CreateContainerRequest(
            pod_sandbox_id=self.pod.id, config=config, sandbox_config=self.pod.sandbox_config
        )
        cid: str = self.kubelet._rt("CreateContainer", request).container_id
        self.kubelet._rt("StartContainer", pb.StartContainerRequest(container_id=cid))
        self.pod.containers[self.ctr["name"]] = cid
        self.container_id = cid
        self.attempt += 1
        return cid

    def log(self) -> str:
        path = self.kubelet.containerd.layout.pod_logs / self.uid / self.ctr["name"]
        return "\n".join(p.read_text(errors="replace") for p in sorted(path.glob("*.log")))

    def wait_log(self, needle: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.log():
                return
            time.sleep(0.2)
        raise AssertionError(f"daemon did not log {needle!r}; log:\n{self.log()[-4000:]}")

    def status(self) -> dict[str, Any]:
        result = self.kubelet.exec_sync(
            self.container_id, ["nrirp", "status", "--json"], timeout=20
        )
        assert result.exit_code == 0, (result.stdout, result.stderr)
        report: dict[str, Any] = json.loads(result.stdout)
        return report

    def state(self) -> str:
        state = self.kubelet.container_status(self.container_id).status.state
        return str(self.pb.ContainerState.Name(state))


@pytest.fixture
def host_dirs(containerd: Containerd, tmp_path: Path) -> Iterator[dict[str, Path]]:
    state = tmp_path / "state"
    config = tmp_path / "config"
    for d in (state, config, tmp_path / "pod-resources", tmp_path / "tmp"):
        d.mkdir(mode=0o755)
    yield {
        "/var/run/nri": containerd.nri_socket.parent,
        "/var/lib/nrirp": state,
        "/var/lib/kubelet/pod-resources": tmp_path / "pod-resources",
        "emptyDir:tmp": tmp_path / "tmp",
        "config": config,
    }


def scrape() -> dict[str, list[tuple[dict[str, str], float]]]:
    got, body = get("/metrics")
    assert got == 200, body
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def test_the_daemonset_pod_serves_its_node(
    containerd: Containerd, kubelet: Kubelet, host_dirs: dict[str, Path], image_archive: Path
) -> None:
    ctr_bin = containerd.binaries.ctr
    address = str(containerd.layout.address)
    imported = subprocess.run(
        [str(ctr_bin), "-a", address, "-n", "k8s.io", "images", "import", str(image_archive)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    docs = render()
    daemon = DaemonPod(kubelet, docs, host_dirs)
    (host_dirs["config"] / Path(CONFIG_IN_POD).name).write_text(yaml.safe_dump(daemon.config_doc))
    assert get("/healthz")[0] == 0, "port 8891 is taken on this host"
    daemon.start()
    daemon.wait_log("registered with containerd")
    assert wait_status("/readyz", 200).startswith("ok")
    assert get("/healthz") == (200, "ok\n")

    # other pods are served: the default namespace in the shared pool, kube-system reserved
    app = kubelet.run_pod(
        PodSpec("app", (ContainerSpec("c", Resources.of(requests={"cpu": "100m"})),))
    )
    sys_pod = kubelet.run_pod(
        PodSpec(
            "infra",
            (ContainerSpec("c", Resources.of(requests={"cpu": "100m"})),),
            namespace="kube-system",
        )
    )
    report = daemon.status()
    by_pod = {(c["namespace"], c["pod"]): c for c in report["containers"]}
    pools = {p["name"]: p for p in report["groups"]}
    assert report["ready"] and report["policy"] == "topology-aware"
    assert report["config"]["source"] == f"file {CONFIG_IN_POD}"
    app_cpus = by_pod["default", "app"]["cpus"]
    infra_cpus = by_pod["kube-system", "infra"]["cpus"]
    assert app_cpus and infra_cpus and app_cpus != infra_cpus
    assert any(p["reserved"] == infra_cpus for p in pools.values())
    assert kubelet.container_cgroup_cpuset(app.container_id("c")) == app_cpus
    assert kubelet.container_cgroup_cpuset(sys_pod.container_id("c")) == infra_cpus
    assert by_pod["default", "app"]["reason"]
    # the daemon itself is a kube-system pod on the reserved CPUs, as the policy placed it
    assert (
        kubelet.container_cgroup_cpuset(daemon.container_id)
        == by_pod[daemon.namespace, daemon.name]["cpus"]
    )

    metrics = scrape()
    assert metrics["nrirp_runtime_connected"] == [({}, 1.0)]
    assert metrics["nrirp_ready"] == [({}, 1.0)]
    assert any(
        labels["operation"] == "create-container" and v >= 2
        for labels, v in metrics["nrirp_operation_duration_seconds_count"]
    )
    assert metrics["nri_policy_topologyaware_zone_cpu_capacity"]
    assert metrics["nri_policy_cpu_container_count"]

    # kill the daemon's container: the kubelet (the test) sees it exit and starts it again
    first = daemon.container_id
    os.kill(kubelet.container_pid(first), signal.SIGKILL)
    deadline = time.monotonic() + 30
    while daemon.state() != "CONTAINER_EXITED" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert daemon.state() == "CONTAINER_EXITED"
    late = kubelet.run_pod(
        PodSpec("late", (ContainerSpec("c", Resources.of(requests={"cpu": "100m"})),))
    )
    unserved = kubelet.container_cgroup_cpuset(late.container_id("c"))  # nobody adjusted it
    daemon.start()
    daemon.wait_log("restored state from /var/lib/nrirp/cache")
    wait_status("/readyz", 200)
    report = daemon.status()
    by_pod = {(c["namespace"], c["pod"]): c for c in report["containers"]}
    assert by_pod["default", "late"]["cpus"] == app_cpus  # admitted at synchronization
    assert kubelet.container_cgroup_cpuset(late.container_id("c")) == app_cpus != unserved
    assert kubelet.container_cgroup_cpuset(app.container_id("c")) == app_cpus  # kept
    assert by_pod["default", "app"]["cpus"] == app_cpus
    assert report["runtime"]["connections"] == 1  # a new process
    kubelet._rt("RemoveContainer", kubelet.pb.RemoveContainerRequest(container_id=first))
