"""The shape of the compositions: the core's ports are filled by each environment's adapters,
by name, and overriding an adapter reaches the core; containers are independent."""

from __future__ import annotations

from typing import Any

import pytest
from dependency_injector import providers

from nrirp.adapters.memory import InMemoryStateStore, RecordingRuntimeUpdates
from nrirp.app.composition import Adapters, CoreContainer, Ports
from nrirp.app.daemon import DaemonAdapters, DaemonContainer
from nrirp.app.embed import EmbeddedContainer
from nrirp.app.simulator import SimulatorAdapters, SimulatorContainer

COMPOSITIONS = [EmbeddedContainer, DaemonContainer, SimulatorContainer]


def undefined(adapters: type[Adapters]) -> list[str]:
    return sorted(
        name
        for name in Ports.dependencies
        if isinstance(getattr(adapters, name), providers.Dependency)
    )


def test_every_port_has_an_adapter_in_every_set() -> None:
    assert undefined(Adapters) == ["runtime_updates"]  # the environment's to give
    assert undefined(DaemonAdapters) == []
    assert undefined(SimulatorAdapters) == []
    assert set(Ports.dependencies) == set(CoreContainer.dependencies)


@pytest.mark.parametrize("composition", COMPOSITIONS, ids=lambda c: c.__name__)
def test_the_core_uses_the_compositions_adapters(composition: Any) -> None:
    container = composition()
    container.config.from_dict({"policy": "template", "machine": "box-16"})
    store = InMemoryStateStore()
    container.adapters.state_store.override(providers.Object(store))
    container.adapters.runtime_updates.override(providers.Object(RecordingRuntimeUpdates()))
    for name in Ports.dependencies:
        if name != "hardware":  # the daemon's and embedded one read /sys
            assert getattr(container.core, name)() is getattr(container.adapters, name)(), name
    assert container.core.state_store() is store
    other = composition()
    assert other.adapters.state_store() is not store  # one container, one engine


def test_an_environment_overrides_only_what_differs() -> None:
    differs = {
        name
        for name in Ports.dependencies
        if getattr(DaemonAdapters, name) is not getattr(Adapters, name)
    }
    assert differs == {
        "state_store",
        "host_control",
        "runtime_updates",
        "metrics",  # recorded for export (and status)
        "decision_log",  # the last decision of each container kept for status
        "kubernetes",  # the node agent, when it runs
        "topology_hints",  # sysfs, then the kubelet's pod resources
        "cpu_power",  # host-wide controls on the node (--host-control)
        "interrupts",
        "resctrl",
        "resource_export",
    }
    differs = {
        name
        for name in Ports.dependencies
        if getattr(SimulatorAdapters, name) is not getattr(Adapters, name)
    }
    assert differs == {
        "hardware",
        "topology_hints",
        "host_control",
        "decision_log",
        "runtime_updates",
        "cpu_power",  # on the fake machine's host tree
        "interrupts",
        "resctrl",
        "resource_export",
    }
