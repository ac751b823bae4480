"""Pod-resources hints against a fake kubelet (grpcio server on a unix socket)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nrirp.adapters.podresources import CombinedHints, PodResourceHints, PodResourcesClient
from nrirp.adapters.podresources.hints import CONTAINER_NAME, POD_NAME, POD_NAMESPACE
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container
from nrirp.domain.topology.hints import HintOrigin, TopologyHint
from tests.support.podresources_server import FakeKubelet


def container(pod: str = "trainer", name: str = "main", ns: str = "ml") -> Container:
    labels = {POD_NAME: pod, POD_NAMESPACE: ns, CONTAINER_NAME: name}
    return Container(id=f"{pod}-{name}", pod_id=pod, name=name, labels=labels)


@pytest.fixture
def kubelet(tmp_path: Path) -> Iterator[FakeKubelet]:
    server = FakeKubelet(str(tmp_path / "kubelet.sock"))
    server.assign("ml", "trainer", "main", "gpu.example.com/gpu", ["gpu-3"], [1])
    server.assign("ml", "trainer", "main", "gpu.example.com/gpu", ["gpu-5"], [3])
    server.assign("ml", "trainer", "main", "nic.example.com/vf", ["vf-0"], [0])
    server.assign("ml", "trainer", "main", "plain.example.com/thing", ["t"], [])
    server.assign("ml", "trainer", "side", "gpu.example.com/gpu", ["gpu-1"], [2])
    server.start()
    yield server
    server.stop()


def test_devices_become_hints_on_their_numa_nodes(kubelet: FakeKubelet) -> None:
    hints = PodResourceHints(PodResourcesClient(kubelet.socket_path)).hints(container())
    assert hints == {
        "podresapi:gpu.example.com/gpu": TopologyHint(
            "podresapi:gpu.example.com/gpu",
            nodes=CPUSet.from_ids([1, 3]),
            origin=HintOrigin.POD_RESOURCES,
            path="gpu-3,gpu-5",
        ),
        "podresapi:nic.example.com/vf": TopologyHint(
            "podresapi:nic.example.com/vf",
            nodes=CPUSet.from_ids([0]),
            origin=HintOrigin.POD_RESOURCES,
            path="vf-0",
        ),
    }
    assert kubelet.calls == ["Get"]
    side = PodResourceHints(PodResourcesClient(kubelet.socket_path)).hints(container(name="side"))
    assert {h.nodes for h in side.values()} == {CPUSet.from_ids([2])}


def test_unknown_pod_disabled_source_and_list_fallback(tmp_path: Path) -> None:
    old = FakeKubelet(str(tmp_path / "old.sock"), without_get=True)
    old.assign("ml", "trainer", "main", "gpu.example.com/gpu", ["gpu-0"], [0])
    old.start()
    try:
        source = PodResourceHints(PodResourcesClient(old.socket_path))
        assert list(source.hints(container())) == ["podresapi:gpu.example.com/gpu"]
        assert source.hints(container(pod="other")) == {}
        assert old.calls == ["List", "List"]  # Get tried once (UNIMPLEMENTED), then List
        off = PodResourceHints(PodResourcesClient(old.socket_path), enabled=lambda: False)
        assert off.hints(container()) == {}
        assert old.calls == ["List", "List"]
    finally:
        old.stop()


def test_a_missing_or_slow_kubelet_gives_no_hints(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = PodResourceHints(PodResourcesClient(str(tmp_path / "none.sock"), timeout=0.1))
    assert source.hints(container()) == {}
    assert source.hints(container()) == {}
    assert caplog.text.count("no pod-resources hints for ml/trainer") == 1  # rate-limited
    slow = FakeKubelet(str(tmp_path / "slow.sock"), delay=1.0)
    slow.assign("ml", "trainer", "main", "gpu.example.com/gpu", ["gpu-0"], [0])
    slow.start()
    try:
        client = PodResourcesClient(slow.socket_path, timeout=0.1)
        assert PodResourceHints(client).hints(container()) == {}
    finally:
        slow.stop()


def test_combined_sources_first_wins(kubelet: FakeKubelet) -> None:
    class Fixed:
        def hints(self, _: Container) -> dict[str, TopologyHint]:
            return {"podresapi:gpu.example.com/gpu": TopologyHint("x", nodes=CPUSet.from_ids([0]))}

    combined = CombinedHints(Fixed(), PodResourceHints(PodResourcesClient(kubelet.socket_path)))
    found = combined.hints(container())
    assert found["podresapi:gpu.example.com/gpu"].provider == "x"
    assert "podresapi:nic.example.com/vf" in found
