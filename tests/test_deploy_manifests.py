"""deploy/: every overlay renders with ``kubectl kustomize``; every object validates against the
Kubernetes schemas (kubernetes-validate, strict) and every configuration resource against its
CRD's own OpenAPI schema and nrirp's config loader; the DaemonSet carries what docs/deploy.md
says it does."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from nrirp.domain.config import load_policy_config
from nrirp.domain.config.unapplied import Environment, unapplied_fields

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
KUBERNETES_VERSION = "1.32"  # the kubectl shipped on the project's machines
OVERLAYS = {
    "topology-aware": "TopologyAwarePolicy",
    "balloons": "BalloonsPolicy",
    "template": "TemplatePolicy",
}


def render(overlay: str) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl is needed to render deploy/ (it ships kustomize)"
    out = subprocess.run(
        [kubectl, "kustomize", str(DEPLOY / "overlays" / overlay)],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


@pytest.fixture(scope="module", params=sorted(OVERLAYS))
def rendered(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]]]:
    return request.param, render(request.param)


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    [found] = [d for d in docs if d["kind"] == kind]
    return found


def crd_schemas(docs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    schemas = {}
    for crd in (d for d in docs if d["kind"] == "CustomResourceDefinition"):
        group = crd["spec"]["group"]
        for version in crd["spec"]["versions"]:
            api = f"{group}/{version['name']}"
            schemas[api, crd["spec"]["names"]["kind"]] = version["schema"]["openAPIV3Schema"]
    return schemas


def test_every_object_validates(rendered: tuple[str, list[dict[str, Any]]]) -> None:
    overlay, docs = rendered
    schemas = crd_schemas(docs)
    custom = 0
    for doc in docs:
        key = (doc["apiVersion"], doc["kind"])
        if key in schemas:
            jsonschema.validate(doc, schemas[key])
            custom += 1
        else:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    assert custom == 1  # the default configuration resource
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == sorted(
        ["CustomResourceDefinition"] * 3
        + ["ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"]
        + ["DaemonSet", OVERLAYS[overlay]]
    )


def test_the_default_configuration_loads_and_everything_in_it_acts(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    overlay, docs = rendered
    resource = one(docs, OVERLAYS[overlay])
    assert (resource["metadata"]["name"], resource["metadata"]["namespace"]) == (
        "default",
        "kube-system",
    )
    config = load_policy_config(overlay, resource)
    agent = Environment(
        name="nrirp run", http_server=True, log_settings=True, kubernetes_agent=True
    )
    assert unapplied_fields(config, agent) == []
    assert (
        config.instrumentation.http_endpoint == ":8891" and config.instrumentation.prometheus_export
    )


def test_the_daemonset(rendered: tuple[str, list[dict[str, Any]]]) -> None:
    overlay, docs = rendered
    ds = one(docs, "DaemonSet")
    assert ds["metadata"]["namespace"] == "kube-system"
    assert ds["spec"]["updateStrategy"]["rollingUpdate"]["maxSurge"] == 0
    pod = ds["spec"]["template"]
    assert pod["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "8891",
        "prometheus.io/path": "/metrics",
    }
    spec = pod["spec"]
    assert spec["priorityClassName"] == "system-node-critical"
    assert spec["serviceAccountName"] == one(docs, "ServiceAccount")["metadata"]["name"]
    assert not spec.get("hostPID") and not spec.get("hostNetwork")
    [ctr] = spec["containers"]
    args = ctr["args"]
    assert args[:3] == ["run", "--policy", overlay]
    flags = dict(zip(args[1::2], args[2::2], strict=False))
    assert flags["--http-endpoint"] == ":8891"
    env = {e["name"]: e for e in ctr["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    security = ctr["securityContext"]
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["privileged"] is False
    assert set(ctr["resources"]["requests"]) == {"cpu", "memory"}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        assert ctr[probe]["httpGet"] == {"path": path, "port": "http-metrics"}
    assert ctr["ports"] == [{"name": "http-metrics", "containerPort": 8891, "protocol": "TCP"}]
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m for m in ctr["volumeMounts"]}

    def host(mount_path: str) -> str:
        return str(volumes[mounts[mount_path]["name"]]["hostPath"]["path"])

    # every path the daemon is told about is a mount of the host's
    assert host(str(Path(flags["--nri-socket"]).parent)) == "/var/run/nri"
    assert host(flags["--state-dir"]) == "/var/lib/nrirp"
    assert host(flags["--sysfs-root"]) == "/sys"
    assert mounts[flags["--sysfs-root"]].get("readOnly") is True
    assert host(flags["--cgroup-root"]) == "/sys/fs/cgroup"
    assert not mounts[flags["--cgroup-root"]].get("readOnly")
    assert (
        host(str(Path(flags["--pod-resources-socket"]).parent)) == "/var/lib/kubelet/pod-resources"
    )
    assert mounts[str(Path(flags["--pod-resources-socket"]).parent)].get("readOnly") is True
    assert volumes[mounts["/tmp"]["name"]]["emptyDir"]["medium"] == "Memory"


def test_the_node_agent_runs_in_the_pod_as_its_service_account(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    """What the agent needs to turn on in the pod (docs/kubernetes.md): its node's name from the
    downward API, the service account's token (in-cluster access, no kubeconfig), configuration
    from resources (no --config-file, no --disable-agent) in the namespace its Role grants, and
    that service account bound to exactly the roles of deploy/rbac-agent.yaml."""
    _, docs = rendered
    ds = one(docs, "DaemonSet")
    spec = ds["spec"]["template"]["spec"]
    [ctr] = spec["containers"]
    env = {e["name"]: e for e in ctr["env"]}
    assert env["NODE_NAME"] == {
        "name": "NODE_NAME",
        "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}},
    }
    args = ctr["args"]
    assert not {"--disable-agent", "--config-file", "--kubeconfig"} & set(args)
    flags = dict(zip(args[1::2], args[2::2], strict=False))
    account = one(docs, "ServiceAccount")
    assert spec["serviceAccountName"] == account["metadata"]["name"]
    assert spec.get("automountServiceAccountToken", True) is True
    assert account.get("automountServiceAccountToken", True) is True
    role, cluster = one(docs, "Role"), one(docs, "ClusterRole")
    assert role["metadata"]["namespace"] == flags.get("--config-namespace", "kube-system")
    subject = {
        "kind": "ServiceAccount",
        "name": account["metadata"]["name"],
        "namespace": ds["metadata"]["namespace"],
    }
    for binding, bound in (
        (one(docs, "RoleBinding"), role),
        (one(docs, "ClusterRoleBinding"), cluster),
    ):
        assert binding["subjects"] == [subject]
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": bound["kind"],
            "name": bound["metadata"]["name"],
        }
    # deploy/rbac-agent.yaml names the same account and binds it the same way
    agent = [d for d in yaml.safe_load_all((DEPLOY / "rbac-agent.yaml").read_text()) if d]
    [agent_account] = [d for d in agent if d["kind"] == "ServiceAccount"]
    assert (agent_account["metadata"]["name"], agent_account["metadata"]["namespace"]) == (
        account["metadata"]["name"],
        account["metadata"]["namespace"],
    )
    [agent_binding] = [d for d in agent if d["kind"] == "ClusterRoleBinding"]
    assert agent_binding["subjects"] == [subject]


def test_rbac_grants_what_the_agent_uses_and_no_more(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    _, docs = rendered
    role = one(docs, "Role")
    cluster = one(docs, "ClusterRole")
    grants = {
        (group, resource, verb)
        for rules in (role["rules"], cluster["rules"])
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    kinds = ("topologyawarepolicies", "balloonspolicies", "templatepolicies")
    expected = {("config.nri", k, v) for k in kinds for v in ("get", "list", "watch")}
    expected |= {
        ("config.nri", f"{k}/status", v) for k in kinds for v in ("get", "patch", "update")
    }
    expected |= {("", "nodes", v) for v in ("get", "list", "watch")}
    expected |= {
        ("topology.node.k8s.io", "noderesourcetopologies", v)
        for v in ("get", "list", "create", "update", "patch")
    }
    assert grants == expected
    # the agent's own statement of its needs (docs/kubernetes.md): the same grants
    agent = [d for d in yaml.safe_load_all((DEPLOY / "rbac-agent.yaml").read_text()) if d]
    assert grants == {
        (group, resource, verb)
        for d in agent
        if d["kind"] in ("Role", "ClusterRole")
        for rule in d["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert role["metadata"]["namespace"] == "kube-system"
    assert all("*" not in str(rule) for rule in (*role["rules"], *cluster["rules"]))


def manifest_objects() -> dict[Path, list[dict[str, Any]]]:
    """Every object written in a file under deploy/ (not the kustomizations themselves)."""
    return {
        path: [d for d in yaml.safe_load_all(path.read_text()) if d]
        for path in sorted(DEPLOY.rglob("*.yaml"))
        if path.name != "kustomization.yaml"
    }


def identity(doc: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = doc["metadata"]
    return doc["apiVersion"], doc["kind"], meta.get("namespace", ""), meta["name"]


def test_no_two_manifests_define_one_object_differently() -> None:
    """An object (kind, namespace, name) written in two files under deploy/ is written the same
    in both: applying one after the other (e.g. deploy/rbac-agent.yaml and an overlay) must not
    replace the first one's rules with the second's."""
    seen: dict[tuple[str, str, str, str], tuple[Path, dict[str, Any]]] = {}
    for path, docs in manifest_objects().items():
        for doc in docs:
            key = identity(doc)
            if key in seen:
                first, content = seen[key]
                assert doc == content, f"{key} differs in {first} and {path}"
            else:
                seen[key] = (path, doc)


def test_rbac_agent_is_what_the_overlays_apply(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    """deploy/rbac-agent.yaml holds the very service account, roles and bindings every overlay
    renders (the labels kustomize adds aside), no more and no fewer."""
    _, docs = rendered
    kinds = ("ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")

    def unlabelled(doc: dict[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in doc["metadata"].items() if k != "labels"}
        return {**doc, "metadata": meta}

    ours = {identity(d): unlabelled(d) for d in docs if d["kind"] in kinds}
    agent = [d for d in yaml.safe_load_all((DEPLOY / "rbac-agent.yaml").read_text()) if d]
    assert {identity(d): d for d in agent} == ours
