"""The API servers the Kubernetes tests run against: the wire-level fake always, a real
kube-apiserver when ``KUBEBUILDER_ASSETS`` is set (the envtest convention), else that
variant is skipped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import envtest
from tests.support.kube_apiserver import FakeApiServer


@pytest.fixture
def fake_apiserver() -> Iterator[FakeApiServer]:
    server = FakeApiServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["fake", "envtest"])
def apiserver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Either server, with the same helpers (``add_node``, ``apply_config``, ``config``,
    ``topology``, ``write_kubeconfig``, ``admin_client``)."""
    if request.param == "fake":
        server = FakeApiServer().start()
        try:
            yield server
        finally:
            server.stop()
        return
    if envtest.assets() is None:
        pytest.skip("no real API server: KUBEBUILDER_ASSETS is not set (envtest variant)")
    with envtest.envtest(tmp_path / "envtest") as real:
        yield real
