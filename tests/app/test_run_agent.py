"""``nrirp run`` with the node agent, as a process: the scripted NRI runtime on one side, the
wire-level fake API server on the other (reached through lightkube over TCP).

A ``node.<node>`` resource created after start configures the policy (status Success with the
generation) through the daemon's one reload path: the status report names the resource and its
generation, the metrics count the reload, the endpoints follow its instrumentation block and
its fields without effect are warned about; a bad one is refused with the loader's errors on
the resource while the old configuration keeps serving, SIGHUP applies the resource again,
NodeResourceTopology follows the placements; with the API server down at start the daemon
serves with its defaults and picks the resource up once the server answers.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs
from nrirp.adapters.nri.gen import api_pb2
from tests.adapters.nri.stub.runtime_peer import RuntimePeer, RuntimeServer
from tests.app.test_run import Daemon, create, ctr, pod, with_runtime
from tests.app.test_run_observability import aget, scrape, value
from tests.app.test_run_observability import status as nrirp_status
from tests.support.kube_apiserver import FakeApiServer

KIND = "TopologyAwarePolicy"
NODE = "worker-7"


@pytest.fixture(scope="module")
def sysfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hw") / "sys"
    write_sysfs(resolve(load_machine("box-16"), "box-16"), root)
    return root


def cr(spec: dict[str, Any], name: str = f"node.{NODE}") -> dict[str, Any]:
    return {
        "apiVersion": "config.nri/v1alpha1",
        "kind": KIND,
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": spec,
    }


def node_status(server: FakeApiServer, name: str) -> dict[str, Any]:
    obj = server.config(KIND, name) or {}
    entry = ((obj.get("status") or {}).get("nodes") or {}).get(NODE)
    return entry if isinstance(entry, dict) else {}


async def eventually(check: Any, timeout: float = 15.0) -> None:
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            raise AssertionError("condition never held")
        await asyncio.sleep(0.05)


def agent_daemon(tmp: Path, sysfs: Path, server: FakeApiServer) -> Daemon:
    kubeconfig = server.write_kubeconfig(tmp / "kubeconfig")
    return Daemon(
        tmp,
        sysfs,
        "--kubeconfig",
        str(kubeconfig),
        "--node-name",
        NODE,
        "--topology-update-interval",
        "0.1",
        "--http-endpoint",
        "127.0.0.1:0",
        policy="topology-aware",
    )


def serving_ports(daemon: Daemon) -> list[int]:
    return [r["port"] for r in daemon.records() if r["msg"].startswith("serving /healthz")]


async def report(daemon: Daemon) -> dict[str, Any]:
    import asyncio
    import json

    shown = await asyncio.to_thread(nrirp_status, daemon.state_dir, "--json")
    assert shown.returncode in (0, 3), shown.stderr
    answer: dict[str, Any] = json.loads(shown.stdout)
    return answer


async def start_pod(peer: RuntimePeer, name: str, container: str = "app") -> Any:
    p = pod(name)
    await peer.call(
        "RunPodSandbox", api_pb2.RunPodSandboxRequest(pod=p), api_pb2.RunPodSandboxResponse
    )
    return await create(peer, p, ctr(container, pod_name=name))


def test_configuration_from_custom_resources(tmp_path: Path, sysfs: Path) -> None:
    server = FakeApiServer().start()
    server.add_node(NODE)

    async def body(runtime: RuntimeServer) -> None:
        daemon = agent_daemon(tmp_path, sysfs, server)
        try:
            peer = await runtime.next_peer(timeout=20)
            await peer.handshake(runtime_version="v1.7.24", nri_version="")
            await daemon.wait_for("registered with containerd")
            await daemon.wait_for(
                "node agent: node worker-7 configured by TopologyAwarePolicy resources in "
                "kube-system; until one is read: the built-in defaults"
            )
            first = await start_pod(peer, "one")
            assert first.adjust.linux.resources.cpu.cpus
            await eventually(lambda: server.topology(NODE) is not None)
            nrt = server.topology(NODE)
            assert nrt is not None and nrt["topologyPolicies"] == ["topology-aware"]
            assert {"name", "type", "resources", "attributes"} <= set(nrt["zones"][0])

            source = "custom resource TopologyAwarePolicy kube-system/node.worker-7"
            server.apply_config(
                cr(
                    {
                        "reservedResources": {"cpu": "cpuset:0-1"},
                        "log": {"klog": {"v": 4}},
                        "instrumentation": {
                            "httpEndpoint": "127.0.0.1:0",
                            "prometheusExport": True,
                        },
                    }
                )
            )
            await daemon.wait_for(rf"reload \({source}, generation 1\): configuration applied")
            await eventually(lambda: node_status(server, f"node.{NODE}").get("status") == "Success")
            assert node_status(server, f"node.{NODE}")["generation"] == 1
            # the same path as a file's reload: the warnings, the status report, the metrics
            # and the endpoint of the configuration in force
            warning = await daemon.wait_for(f"^configuration {source}: log.klog")
            assert warning["level"] == "warning" and warning["field"] == "log.klog"
            shown = (await report(daemon))["config"]
            assert (shown["source"], shown["source_generation"], shown["generation"]) == (
                source,
                1,
                2,
            )
            last = shown["last_reload"]
            assert (last["result"], last["trigger"]) == ("applied", f"{source}, generation 1")
            got, text = await aget(serving_ports(daemon)[-1], "/metrics")  # its export
            assert got == 200
            metrics = scrape(text)
            assert value(metrics, "nrirp_config_reloads_total", result="applied") == 1
            assert value(metrics, "nrirp_config_generation") == 2

            bad = {"reservedResources": {"cpu": "cpuset:zero"}, "bogus": 1}
            server.apply_config(cr(bad))
            refused = await daemon.wait_for(
                r"generation 2\): new configuration not applied, the old one stays"
            )
            assert any("bogus" in e for e in refused["errors"])
            await eventually(lambda: node_status(server, f"node.{NODE}").get("status") == "Failure")
            status = node_status(server, f"node.{NODE}")
            assert status["generation"] == 2
            assert any(e.startswith("spec.bogus: unknown field") for e in status["errors"])
            assert any(e.startswith("spec.reservedResources.cpu") for e in status["errors"])
            shown = (await report(daemon))["config"]
            assert (shown["source"], shown["source_generation"], shown["generation"]) == (
                source,
                1,
                2,
            )
            assert shown["last_reload"]["result"] == "invalid"
            assert shown["last_reload"]["source_generation"] == 2
            # the old configuration keeps serving pods (its reserved CPUs stay 0-1)
            second = await start_pod(peer, "two")
            assert second.adjust.linux.resources.cpu.cpus

            server.apply_config(cr({"reservedResources": {"cpu": "cpuset:0"}}))
            await eventually(
                lambda: (
                    node_status(server, f"node.{NODE}").get("generation") == 3
                    and node_status(server, f"node.{NODE}").get("status") == "Success"
                )
            )
            assert "errors" not in node_status(server, f"node.{NODE}")
            daemon.proc.send_signal(signal.SIGHUP)
            await daemon.wait_for(r"generation 3\): configuration is in force already")
            daemon.proc.send_signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
        finally:
            daemon.kill()

    try:
        with_runtime(tmp_path, body)
    finally:
        server.stop()


def test_api_server_down_at_start(tmp_path: Path, sysfs: Path) -> None:
    server = FakeApiServer().start()
    server.add_node(NODE)
    server.apply_config(cr({"reservedResources": {"cpu": "cpuset:0"}}, name="default"))
    server.stop()

    async def body(runtime: RuntimeServer) -> None:
        daemon = agent_daemon(tmp_path, sysfs, server)
        try:
            peer = await runtime.next_peer(timeout=20)
            await peer.handshake(runtime_version="v1.7.24", nri_version="")
            await daemon.wait_for("registered with containerd")
            await daemon.wait_for("cannot reach the API server .*the built-in defaults stays")
            served = await start_pod(peer, "early")  # requests do not wait for the API
            assert served.adjust.linux.resources.cpu.cpus
            server.start()
            await daemon.wait_for(r"custom resource TopologyAwarePolicy kube-system/default")
            await eventually(lambda: node_status(server, "default").get("status") == "Success")
            daemon.proc.send_signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
        finally:
            daemon.kill()

    try:
        with_runtime(tmp_path, body)
    finally:
        server.stop()


def test_bad_kubeconfig_exits_2(tmp_path: Path, sysfs: Path) -> None:
    daemon = Daemon(tmp_path, sysfs, "--kubeconfig", str(tmp_path / "missing"), "--node-name", NODE)
    assert daemon.proc.wait(timeout=30) == 2
    assert "node agent: no usable kubeconfig" in daemon.text()


def test_kubeconfig_without_node_name_exits_2(tmp_path: Path, sysfs: Path) -> None:
    server = FakeApiServer()
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    daemon = Daemon(tmp_path, sysfs, "--kubeconfig", str(kubeconfig))
    assert daemon.proc.wait(timeout=30) == 2
    assert "the node agent needs this node's name" in daemon.text()


def test_lightkube_is_imported_only_when_the_agent_runs(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from nrirp.app.cli import build_parser\n"
        "from nrirp.app.commands.common.agent import agent_settings\n"
        "from nrirp.app.daemon import DaemonContainer\n"
        "args = build_parser().parse_args(['run', '--policy', 'balloons'])\n"
        "container = DaemonContainer()\n"
        "container.config.from_dict({'policy': 'balloons'})\n"
        "registry = container.core.container.policy_registry()\n"
        "container.config.agent.from_value(agent_settings(args, registry))\n"
        "assert container.adapters.container.kubernetes() is None\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('lightkube', 'httpx2')))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.strip() == "[]"


def test_pod_resources_hints_follow_the_kubelet(tmp_path: Path, sysfs: Path) -> None:
    """box-16 has NUMA nodes 0-3 with CPUs 0-3, 4-7, 8-11, 12-15; the kubelet says the
    container's GPU sits on node 3, so with agent.podResourceAPI it runs there."""
    from tests.support.podresources_server import FakeKubelet

    kubelet = FakeKubelet(str(tmp_path / "kubelet.sock"))
    kubelet.assign("prod", "gpu", "app", "gpu.example.com/gpu", ["gpu-7"], [3])
    kubelet.start()
    config = tmp_path / "topology-aware.yaml"
    config.write_text("reservedResources: {cpu: 'cpuset:0'}\nagent: {podResourceAPI: true}\n")

    async def body(runtime: RuntimeServer) -> None:
        daemon = Daemon(
            tmp_path,
            sysfs,
            "--config-file",
            str(config),
            "--pod-resources-socket",
            kubelet.socket_path,
            "--disable-agent",
            policy="topology-aware",
        )
        try:
            peer = await runtime.next_peer(timeout=20)
            await peer.handshake(runtime_version="v1.7.24", nri_version="")
            await daemon.wait_for("registered with containerd")
            p = pod("gpu", **{"topologyhints.resource-policy.nri.io": "pod-resources"})
            await peer.call(
                "RunPodSandbox", api_pb2.RunPodSandboxRequest(pod=p), api_pb2.RunPodSandboxResponse
            )
            c = ctr("app", pod_name="gpu")
            c.labels.update(
                {
                    "io.kubernetes.pod.name": "gpu",
                    "io.kubernetes.pod.namespace": "prod",
                    "io.kubernetes.container.name": "app",
                }
            )
            reply = await create(peer, p, c)
            cpus = reply.adjust.linux.resources.cpu.cpus
            assert cpus == "12-15", cpus
            assert kubelet.calls == ["Get"]
            daemon.proc.send_signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
        finally:
            daemon.kill()

    try:
        with_runtime(tmp_path, body)
    finally:
        kubelet.stop()
