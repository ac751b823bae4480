"""``nrirp run`` with the node agent on the real containerd, against the wire-level fake API
server (reached through lightkube over TCP): a ``node.<node>`` TopologyAwarePolicy created
after start switches the configuration and reads Success with its generation, a bad one reads
Failure with the loader's errors while the old configuration keeps serving pods, and the
node's NodeResourceTopology follows the pods' placement.

The machine is the fake two-socket one of the topology-aware tests (CPU 0 on socket 0, CPU 1
on socket 1, node 0), so the zones are ``socket #0`` and ``socket #1`` under the virtual root.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.kube_apiserver import FakeApiServer

from .daemon_process import DaemonProcess
from .harness import Containerd, Kubelet
from .harness.fixtures import PluginProcesses
from .topology_aware_support import (
    besteffort_pod,
    guaranteed_pod,
    observe,
    write_two_socket_tree,
)

pytestmark = pytest.mark.e2e

KIND = "TopologyAwarePolicy"
NODE = "e2e-node"
RESOURCE = f"node.{NODE}"


@pytest.fixture
def apiserver() -> Iterator[FakeApiServer]:
    server = FakeApiServer().start()
    server.add_node(NODE)
    try:
        yield server
    finally:
        server.stop()


def cr(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "config.nri/v1alpha1",
        "kind": KIND,
        "metadata": {"name": RESOURCE, "namespace": "kube-system"},
        "spec": spec,
    }


def status(server: FakeApiServer) -> dict[str, Any]:
    obj = server.config(KIND, RESOURCE) or {}
    entry = ((obj.get("status") or {}).get("nodes") or {}).get(NODE)
    return entry if isinstance(entry, dict) else {}


def zone(server: FakeApiServer, name: str) -> dict[str, Any]:
    nrt = server.topology(NODE) or {"zones": []}
    for found in nrt["zones"]:
        if found["name"] == name:
            result: dict[str, Any] = found
            return result
    return {}


def attribute(found: dict[str, Any], name: str) -> str | None:
    for item in found.get("attributes", ()):
        if item["name"] == name:
            return str(item["value"])
    return None


def until(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}")
        time.sleep(0.1)


def running_on(kube: Kubelet, container_id: str, cpus: str) -> Callable[[], bool]:
    return lambda: observe(kube, container_id).matches(cpus, "0")


def test_configuration_status_and_topology_from_the_cluster(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    tmp_path: Path,
    apiserver: FakeApiServer,
) -> None:
    sysfs = write_two_socket_tree(tmp_path / "two-socket-sys")
    kubeconfig = apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    daemon = DaemonProcess(
        plugin_processes,
        fresh_containerd,
        tmp_path / "state",
        policy="topology-aware",
        args=[
            "--sysfs-root",
            str(sysfs),
            "--kubeconfig",
            str(kubeconfig),
            "--node-name",
            NODE,
            "--topology-update-interval",
            "0.2",
        ],
    )
    daemon.registered()
    daemon.wait_for("until one is read: the built-in defaults")
    kube = fresh_kubelet

    # a node.<node> resource created after start: applied, Success with its generation
    apiserver.apply_config(cr({"reservedResources": {"cpu": "cpuset:0"}}))
    daemon.wait_for(r"kube-system/node.e2e-node, generation 1\): configuration applied")
    until(lambda: status(apiserver).get("status") == "Success", "status Success")
    assert status(apiserver)["generation"] == 1
    until(lambda: attribute(zone(apiserver, "socket #0"), "reserved cpuset") == "0", "reserved 0")

    # pods: S shared on CPU 1; E takes CPU 1 exclusively; the zones follow
    s = kube.run_pod(besteffort_pod("shared-s")).container_id("c")
    until(running_on(kube, s, "1"), "S on CPU 1")
    until(lambda: attribute(zone(apiserver, "socket #1"), "shared cpuset") == "1", "shared 1")
    e_pod = kube.run_pod(guaranteed_pod("exclusive-e"))
    e = e_pod.container_id("c")
    until(running_on(kube, e, "1"), "E on CPU 1")
    until(running_on(kube, s, "0"), "S moved to CPU 0")
    until(lambda: attribute(zone(apiserver, "socket #1"), "shared cpuset") == "", "no shared 1")
    cpu = {r["name"]: r for r in zone(apiserver, "socket #1")["resources"]}["cpu"]
    assert cpu["capacity"] == "1" and cpu["available"] == "0"

    # a bad resource: Failure with the loader's errors; the old configuration keeps serving
    apiserver.apply_config(cr({"reservedResources": {"cpu": "cpuset:zero"}, "bogus": 1}))
    refused = daemon.wait_for(r"generation 2\): new configuration not applied, the old one stays")
    until(lambda: status(apiserver).get("status") == "Failure", "status Failure")
    failed = status(apiserver)
    assert failed["generation"] == 2
    assert "spec.bogus: unknown field" in failed["errors"]
    assert any(e.startswith("spec.reservedResources.cpu: invalid value") for e in failed["errors"])
    assert failed["errors"] == refused["errors"]
    k = kube.run_pod(besteffort_pod("system", namespace="kube-system")).container_id("c")
    until(running_on(kube, k, "0"), "a kube-system pod on the reserved CPU 0 (old config)")

    # E leaves: S goes back to CPU 1, and so does the zone's shared cpuset
    kube.remove_pod(e_pod)
    until(running_on(kube, s, "1"), "S back on CPU 1")
    until(lambda: attribute(zone(apiserver, "socket #1"), "shared cpuset") == "1", "shared 1")
