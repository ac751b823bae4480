"""What ``nrirp status`` shows: the daemon's own account of its state, as JSON-compatible data.

Built on the event loop that runs the pipeline (so it reads the pipeline between requests,
never during one): the policy and its configuration (source, generation, the last reload),
the runtime connection, readiness, the policy's resource groups (pools or balloons with their
CPUs and memory nodes, from the policy's ``describe()``, which is included whole as
``policy_state``), and every container with its CPUs, memory nodes and last decision.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from nrirp import __version__
from nrirp.adapters.memory import LastDecisions
from nrirp.app.daemon.health import Health
from nrirp.domain.pipeline import ResourceManager

STATUS_VERSION = 1
"""The version of the report's layout (``status_version``)."""


@attrs.define
class ConfigState:
    """Where the configuration in force came from (``source``: ``file PATH``, ``custom
    resource KIND NAMESPACE/NAME``, ``saved state``, ``defaults``; ``source_generation``: a
    custom resource's ``metadata.generation``), its generation (1 at start, +1 for each reload
    that changed it), the reload running now and how the last one ended, whatever its source."""

    source: str = "defaults"
    source_generation: int | None = None
    generation: int = 0
    last_reload: Mapping[str, Any] | None = None
    reloading: Mapping[str, Any] | None = None

    def loaded(self, source: str, source_generation: int | None = None) -> None:
        self.source = source
        self.source_generation = source_generation
        self.generation += 1

    def reload_started(self, trigger: str, source: str) -> None:
        self.reloading = {"trigger": trigger, "source": source, "since": time.time()}

    def reloaded(
        self,
        trigger: str,
        result: str,
        detail: str = "",
        *,
        source: str | None = None,
        source_generation: int | None = None,
        changed: bool = True,
        problems: Sequence[str] = (),
    ) -> None:
        """Record a reload (``result``: applied, invalid, refused or failed) of the
        configuration from ``source``; an applied one is in force from now on (a new
        generation if it ``changed`` it). ``detail`` is the first of the ``problems`` of one
        not applied, in one line; ``problems`` are all of them."""
        if result == "applied":
            if source is not None:
                self.source = source
                self.source_generation = source_generation
            if changed:
                self.generation += 1
        self.reloading = None
        self.last_reload = {
            "trigger": trigger,
            "result": result,
            "detail": detail,
            "problems": list(problems),
            "source": source if source is not None else self.source,
            "source_generation": source_generation,
            "changed": result == "applied" and changed,
            "time": time.time(),
        }

    def report(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "source_generation": self.source_generation,
            "generation": self.generation,
            "last_reload": dict(self.last_reload) if self.last_reload else None,
            "reloading": dict(self.reloading) if self.reloading else None,
        }


def status_report(
    *,
    manager: ResourceManager,
    health: Health,
    config: ConfigState,
    decisions: LastDecisions | None,
    plugin_name: str,
) -> dict[str, Any]:
    """The report (call it on the pipeline's thread)."""
    from nrirp.app.placement import placement_document, placement_of  # at the first report

    ready = health.readiness()
    containers = manager.containers() if manager.started else []
    pods = {p.id: p for p in (manager.pods() if manager.started else [])}
    described = dict(manager.describe()) if manager.started else {}
    last = decisions.last if decisions is not None else {}
    if decisions is not None:
        decisions.forget_others({c.id for c in containers})
    rows = []
    for ctr in sorted(containers, key=lambda c: _sort_key(c, pods)):
        pod = pods.get(ctr.pod_id)
        decision = last.get(ctr.id)
        rows.append(
            {
                "id": ctr.id,
                "name": ctr.name,
                "pod": pod.name if pod else "",
                "namespace": pod.namespace if pod else "",
                "state": ctr.state.value,
                "cpus": "" if ctr.cpus is None else str(ctr.cpus),
                "mems": "" if ctr.mems is None else str(ctr.mems),
                "reason": decision.reason if decision else "",
                "operation": decision.operation if decision else "",
            }
        )
    kind, groups = resource_groups(described)
    return {
        "status_version": STATUS_VERSION,
        "version": __version__,
        "policy": manager.policy.name,
        "plugin": plugin_name,
        "config": config.report(),
        "runtime": health.serving.report(),
        "ready": ready.ok,
        "ready_reasons": list(ready.reasons),
        "groups_kind": kind,
        "groups": groups,
        "containers": rows,
        "policy_state": described,
        # the machine, the groups and every container's placement, for nrirp status --svg
        "placement": placement_document(placement_of(manager)) if manager.started else None,
    }


def _sort_key(ctr: Any, pods: Mapping[str, Any]) -> tuple[str, str, str]:
    pod = pods.get(ctr.pod_id)
    return (pod.namespace if pod else "", pod.name if pod else "", ctr.name)


def resource_groups(described: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The policy's pools or balloons from its ``describe()``, each with ``name``, ``cpus``,
    ``mems`` and ``containers`` (plus what the policy adds): ``("balloons", [...])``,
    ``("pools", [...])``, or ``("", [])`` for a policy that has neither."""
    if isinstance(described.get("balloons"), list):
        return "balloons", [_balloon(b) for b in described["balloons"]]
    if isinstance(described.get("pools"), list):
        return "pools", [_pool(p) for p in described["pools"]]
    return "", []


def _balloon(balloon: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": balloon.get("name", ""),
        "type": balloon.get("type", ""),
        "cpus": balloon.get("cpus", ""),
        "shared_idle_cpus": balloon.get("shared_idle_cpus", ""),
        "mems": balloon.get("mems", ""),
        "containers": list(balloon.get("containers", [])),
    }


def _pool(pool: Mapping[str, Any]) -> dict[str, Any]:
    from nrirp.app.placement.description import grant_label  # imported by the report already

    grants = pool.get("grants") or {}
    return {
        "name": pool.get("name", ""),
        "kind": pool.get("kind", ""),
        "cpus": pool.get("cpus", ""),
        "shared": pool.get("shared", ""),
        "reserved": pool.get("reserved", ""),
        "isolated": pool.get("isolated", ""),
        "mems": pool.get("mems", ""),
        "containers": sorted(grant_label(cid, g) for cid, g in grants.items()),
    }
