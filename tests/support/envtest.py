"""A real kube-apiserver (and etcd) for the Kubernetes tests, by the envtest convention.

``KUBEBUILDER_ASSETS`` names a directory with the ``kube-apiserver`` and ``etcd`` binaries
(as ``setup-envtest`` installs them). When it is set, the tests that take the ``apiserver``
fixture run against both the wire-level fake (``tests/support/kube_apiserver.py``) and this
real server; when it is not, the real variant is skipped (no such binary can be installed on
this project's machines: not packaged in Debian, PyPI or npm).

The server runs with RBAC and two static tokens: ``admin`` (``system:masters``, used by the
tests to arrange objects) and ``agent`` (the node agent, allowed exactly what
``deploy/rbac-agent.yaml`` grants: its Role in kube-system and its ClusterRole). The project's
CRDs (``deploy/crds``) and the NodeResourceTopology CRD (``tests/support/crds``) are installed
before the tests run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx2
import yaml

REPO = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "envtest-admin-token"
AGENT_TOKEN = "envtest-agent-token"
AGENT_USER = "system:serviceaccount:kube-system:nri-resource-policy"


def assets() -> Path | None:
    """The envtest binaries' directory, if ``KUBEBUILDER_ASSETS`` names one with both."""
    root = os.environ.get("KUBEBUILDER_ASSETS")
    if not root:
        return None
    path = Path(root)
    if not (path / "kube-apiserver").exists() or not (path / "etcd").exists():
        raise RuntimeError(f"KUBEBUILDER_ASSETS={root} lacks kube-apiserver or etcd")
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class EnvtestServer:
    """etcd + kube-apiserver under ``workdir``; the same helpers as the fake server."""

    def __init__(self, binaries: Path, workdir: Path) -> None:
        self.binaries = binaries
        self.workdir = workdir
        self.port = _free_port()
        self.processes: list[subprocess.Popen[bytes]] = []
        self.admin = httpx2.Client(
            base_url=self.url,
            verify=False,
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
            timeout=30,
        )

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> EnvtestServer:
        work = self.workdir
        work.mkdir(parents=True, exist_ok=True)
        etcd_port, peer_port = _free_port(), _free_port()
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        self._spawn(
            [
                str(self.binaries / "etcd"),
                f"--data-dir={work / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
            ],
            "etcd",
        )
        (work / "tokens.csv").write_text(
            f"{ADMIN_TOKEN},admin,admin-uid,system:masters\n{AGENT_TOKEN},{AGENT_USER},agent-uid\n"
        )
        key = work / "sa.key"
        subprocess.run(
            ["openssl", "genrsa", "-out", str(key), "2048"], check=True, capture_output=True
        )
        subprocess.run(
            ["openssl", "rsa", "-in", str(key), "-pubout", "-out", str(work / "sa.pub")],
            check=True,
            capture_output=True,
        )
        self._spawn(
            [
                str(self.binaries / "kube-apiserver"),
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--cert-dir={work / 'certs'}",
                f"--token-auth-file={work / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={work / 'sa.pub'}",
                f"--service-account-signing-key-file={key}",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--disable-admission-plugins=ServiceAccount",
                "--allow-privileged=true",
            ],
            "kube-apiserver",
        )
        self._wait_ready()
        self._install()
        return self

    def _spawn(self, argv: list[str], name: str) -> None:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 - kept by the process
        self.processes.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT))

    def _wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx2.HTTPError):
                if self.admin.get("/readyz").status_code == 200:
                    return
            time.sleep(0.5)
        raise RuntimeError(f"kube-apiserver not ready; see {self.workdir}/kube-apiserver.log")

    def _install(self) -> None:
        manifests = sorted((REPO / "deploy" / "crds").glob("*.yaml"))
        manifests += sorted((REPO / "tests" / "support" / "crds").glob("*.yaml"))
        for path in manifests:
            for doc in yaml.safe_load_all(path.read_text()):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    self._post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", doc)
        self._post("/api/v1/namespaces", {"metadata": {"name": "kube-system"}}, exist_ok=True)
        rbac = yaml.safe_load_all((REPO / "deploy" / "rbac-agent.yaml").read_text())
        api = "/apis/rbac.authorization.k8s.io/v1"
        for doc in rbac:
            if not doc or doc["kind"] not in ("Role", "ClusterRole"):
                continue
            namespace = doc["metadata"].get("namespace")
            prefix = f"{api}/namespaces/{namespace}" if doc["kind"] == "Role" else api
            plural = "roles" if doc["kind"] == "Role" else "clusterroles"
            self._post(f"{prefix}/{plural}", doc)
            binding = {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": f"{doc['kind']}Binding",
                "metadata": {
                    "name": f"{doc['metadata']['name']}-envtest",
                    **({"namespace": namespace} if namespace else {}),
                },
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": doc["kind"],
                    "name": doc["metadata"]["name"],
                },
                "subjects": [
                    {
                        "kind": "User",
                        "name": AGENT_USER,
                        "apiGroup": "rbac.authorization.k8s.io",
                    }
                ],
            }
            self._post(f"{prefix}/{plural[:-1]}bindings", binding)
        time.sleep(2)  # CRDs become served shortly after they are established

    def _post(self, path: str, body: Mapping[str, Any], exist_ok: bool = False) -> None:
        response = self.admin.post(path, json=dict(body))
        if response.status_code == 409 and exist_ok:
            return
        response.raise_for_status()

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(10)
            if process.poll() is None:
                process.kill()
        self.admin.close()
        shutil.rmtree(self.workdir / "etcd", ignore_errors=True)

    # ------------------------------------------------------------------ the tests' helpers
    def admin_client(self) -> httpx2.Client:
        return httpx2.Client(
            base_url=self.url,
            verify=False,
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
            timeout=30,
        )

    def write_kubeconfig(self, path: Path) -> Path:
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {
                            "name": "envtest",
                            "cluster": {"server": self.url, "insecure-skip-tls-verify": True},
                        }
                    ],
                    "users": [{"name": "agent", "user": {"token": AGENT_TOKEN}}],
                    "contexts": [
                        {"name": "envtest", "context": {"cluster": "envtest", "user": "agent"}}
                    ],
                    "current-context": "envtest",
                }
            )
        )
        return path

    def add_node(self, name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
        body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
        if labels:
            body["metadata"]["labels"] = dict(labels)  # type: ignore[index]
        response = self.admin.post("/api/v1/nodes", json=body)
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result

    def label_node(self, name: str, key: str, value: str | None) -> None:
        self._merge(f"/api/v1/nodes/{name}", {"metadata": {"labels": {key: value}}})

    def _config_path(self, kind: str, namespace: str, name: str = "") -> str:
        path = f"/apis/config.nri/v1alpha1/namespaces/{namespace}/{kind.lower()[:-1]}ies"
        return f"{path}/{name}" if name else path

    def apply_config(self, document: Mapping[str, Any]) -> dict[str, Any]:
        namespace = document["metadata"].get("namespace", "kube-system")
        name = document["metadata"]["name"]
        path = self._config_path(document["kind"], namespace, name)
        if self.admin.get(path).status_code == 404:
            response = self.admin.post(
                self._config_path(document["kind"], namespace), json=dict(document)
            )
        else:
            replace = [{"op": "replace", "path": "/spec", "value": document.get("spec") or {}}]
            response = self.admin.patch(
                path, json=replace, headers={"Content-Type": "application/json-patch+json"}
            )
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result

    def delete_config(self, kind: str, name: str, namespace: str = "kube-system") -> None:
        self.admin.delete(self._config_path(kind, namespace, name)).raise_for_status()

    def config(self, kind: str, name: str, namespace: str = "kube-system") -> dict[str, Any] | None:
        response = self.admin.get(self._config_path(kind, namespace, name))
        return None if response.status_code == 404 else response.json()

    def topology(self, name: str) -> dict[str, Any] | None:
        response = self.admin.get(
            f"/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/{name}"
        )
        return None if response.status_code == 404 else response.json()

    def _merge(self, path: str, patch: Mapping[str, Any]) -> None:
        response = self.admin.patch(
            path, json=dict(patch), headers={"Content-Type": "application/merge-patch+json"}
        )
        response.raise_for_status()


@contextlib.contextmanager
def envtest(workdir: Path) -> Iterator[EnvtestServer]:
    binaries = assets()
    assert binaries is not None
    server = EnvtestServer(binaries, workdir).start()
    try:
        yield server
    finally:
        server.stop()
