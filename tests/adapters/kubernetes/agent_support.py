"""Shared pieces of the node-agent tests: a config handler that records, waiting helpers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from nrirp.adapters.kubernetes import ConfigChoice
from nrirp.domain.policy import TopologyZone, ZoneAttribute, ZoneResource
from nrirp.domain.ports.kubernetes import ConfigStatus

KIND = "BalloonsPolicy"
NODE = "worker-1"


def cr(name: str, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "config.nri/v1alpha1",
        "kind": KIND,
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": spec if spec is not None else {"reservedResources": {"cpu": "750m"}},
    }


class Recorder:
    """The daemon's side: records each applied resource; refuses specs with 'bad'."""

    def __init__(self) -> None:
        self.applied: list[ConfigChoice] = []

    async def __call__(self, choice: ConfigChoice) -> ConfigStatus:
        self.applied.append(choice)
        if "bad" in choice.document.get("spec", {}):
            return ConfigStatus(False, errors=("spec.bad: unknown field",))
        return ConfigStatus(True)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.applied]


async def until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            raise AssertionError("condition never held")
        await asyncio.sleep(0.01)


def zones(count: int) -> list[TopologyZone]:
    return [
        TopologyZone(
            name=f"zone {i}",
            type="numa node",
            parent="root" if i else "",
            resources=(ZoneResource("cpu", 4000, 3500, 1500), ZoneResource("memory", 10, 10, 4)),
            attributes=(ZoneAttribute("shared cpuset", "0-3"),),
        )
        for i in range(count)
    ]
