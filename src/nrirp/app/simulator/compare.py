"""Two replays of one workload side by side (``nrirp simulate --compare OLD.yaml``): what would
move, container by container, between the old configuration and the new one.

Containers are matched by id (a recording's ids are the runtime's; a workload's are derived
from the names, so the same in both replays). A container moves when its cpus, mems or pool
(or balloon) differ after the last step; one that only one replay has at the end was refused
or gone in the other. Steps whose outcome differs (one replay refused what the other did)
are listed too. ``docs/simulator.md`` describes the output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from nrirp.app.simulator.results import ContainerView, ReplayResult, StepResult
from nrirp.domain.cpuset import CPUSet

FORMAT = "nrirp.compare/v1"


@attrs.frozen
class Placement:
    """Where a container is after the last step of one replay."""

    cpus: CPUSet | None
    mems: CPUSet | None
    pool: str | None
    state: str

    @classmethod
    def of(cls, view: ContainerView) -> Placement:
        return cls(view.cpus, view.mems, view.pool, view.state)

    def document(self) -> dict[str, Any]:
        return {
            "cpus": _text(self.cpus),
            "mems": _text(self.mems),
            "pool": self.pool,
            "state": self.state,
        }


@attrs.frozen
class ContainerChange:
    """One container in either replay: ``old``/``new`` is ``None`` when that replay does not
    have it at the end."""

    namespace: str
    pod: str
    name: str
    id: str
    old: Placement | None
    new: Placement | None

    @property
    def label(self) -> str:
        return f"{self.namespace}/{self.pod}/{self.name}"

    @property
    def moved(self) -> bool:
        return self.old != self.new

    def what(self) -> list[str]:
        """Which of cpus, mems, pool and state differ."""
        if self.old is None or self.new is None:
            return []
        return [
            name
            for name in ("cpus", "mems", "pool", "state")
            if getattr(self.old, name) != getattr(self.new, name)
        ]


@attrs.frozen
class StepChange:
    """A step that went otherwise in the two replays."""

    number: int
    description: str
    old_errors: tuple[str, ...]
    new_errors: tuple[str, ...]


@attrs.frozen
class Comparison:
    old: ReplayResult
    new: ReplayResult
    containers: tuple[ContainerChange, ...]
    steps: tuple[StepChange, ...]

    @property
    def moved(self) -> tuple[ContainerChange, ...]:
        return tuple(c for c in self.containers if c.moved)

    @property
    def differs(self) -> bool:
        return bool(self.moved or self.steps)


def compare(old: ReplayResult, new: ReplayResult) -> Comparison:
    """Compare two replays of the same workload (their last steps, and every step's outcome)."""
    old_views = _final(old.steps)
    new_views = _final(new.steps)
    changes = []
    for cid in [*old_views, *(c for c in new_views if c not in old_views)]:
        either = old_views.get(cid) or new_views[cid]
        before, after = old_views.get(cid), new_views.get(cid)
        changes.append(
            ContainerChange(
                either.namespace,
                either.pod,
                either.name,
                cid,
                None if before is None else Placement.of(before),
                None if after is None else Placement.of(after),
            )
        )
    steps = tuple(
        StepChange(a.number, a.description, a.errors, b.errors)
        for a, b in zip(old.steps, new.steps, strict=True)
        if a.ok != b.ok
    )
    return Comparison(old, new, tuple(changes), steps)


def _final(steps: Sequence[StepResult]) -> dict[str, ContainerView]:
    """The containers after the last step (the runtime's, removed ones gone)."""
    if not steps:
        return {}
    return {view.id: view for view in steps[-1].containers}


def _text(value: CPUSet | None) -> str | None:
    return None if value is None else str(value)


def _cell(placement: Placement | None) -> str:
    if placement is None:
        return "(not there)"
    cpus = "-" if placement.cpus is None else str(placement.cpus) or "(empty)"
    mems = "-" if placement.mems is None else str(placement.mems) or "(empty)"
    text = f"cpus {cpus} mems {mems}"
    if placement.pool:
        text += f" in {placement.pool}"
    if placement.state != "running":
        text += f" ({placement.state})"
    return text


def _config(result: ReplayResult) -> str:
    # a recording's own configuration is named by the replay ("the recording's
    # configuration"); nothing named: the policy ran with its defaults
    return result.config_file or "the policy's defaults"


def comparison_table(comparison: Comparison) -> str:
    """The comparison as readable text."""
    old, new = comparison.old, comparison.new
    containers = comparison.containers
    moved = comparison.moved
    lines = [
        f"Workload {new.workload}" + (f": {new.description}" if new.description else ""),
        f"Policy {new.policy} on {new.hardware}; {len(new.steps)} "
        f"{'step' if len(new.steps) == 1 else 'steps'} replayed twice",
        f"  OLD: {_config(old)}",
        f"  NEW: {_config(new)}",
        "",
        f"{len(containers)} containers at the end: {len(containers) - len(moved)} in the same "
        f"place, {len(moved)} would move or differ",
    ]
    if moved:
        rows = [("CONTAINER", "OLD", "NEW", "DIFFERS")]
        rows += [
            (c.label, _cell(c.old), _cell(c.new), ",".join(c.what()) or "only one has it")
            for c in moved
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines += [
            "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in rows
        ]
    if comparison.steps:
        went = "step went" if len(comparison.steps) == 1 else "steps went"
        lines += ["", f"{len(comparison.steps)} {went} otherwise:"]
        for step in comparison.steps:
            lines.append(f"  step {step.number}: {step.description}")
            for name, errors in (("OLD", step.old_errors), ("NEW", step.new_errors)):
                outcome = "ok" if not errors else "FAILED: " + "; ".join(errors)
                lines.append(f"    {name}: {outcome}")
    lines += ["", "no difference" if not comparison.differs else "the configurations differ"]
    return "\n".join(lines)


def comparison_document(comparison: Comparison) -> dict[str, Any]:
    """The comparison as JSON-ready data (``docs/simulator.md``)."""
    old, new = comparison.old, comparison.new

    def side(result: ReplayResult) -> dict[str, Any]:
        return {
            "config_file": result.config_file,
            "summary": {
                "steps": len(result.steps),
                "failed": len(result.failed),
                "unexpected": len(result.unexpected),
            },
        }

    return {
        "format": FORMAT,
        "workload": {"source": new.workload, "description": new.description},
        "policy": new.policy,
        "hardware": {"source": new.hardware, "cpus": str(new.cpus), "nodes": str(new.nodes)},
        "old": side(old),
        "new": side(new),
        "containers": [
            {
                "namespace": c.namespace,
                "pod": c.pod,
                "name": c.name,
                "id": c.id,
                "old": None if c.old is None else c.old.document(),
                "new": None if c.new is None else c.new.document(),
                "moved": c.moved,
                "differs": c.what(),
            }
            for c in comparison.containers
        ],
        "steps": [
            {
                "number": s.number,
                "description": s.description,
                "old": {"ok": not s.old_errors, "errors": list(s.old_errors)},
                "new": {"ok": not s.new_errors, "errors": list(s.new_errors)},
            }
            for s in comparison.steps
        ],
        "summary": {
            "containers": len(comparison.containers),
            "moved": len(comparison.moved),
            "steps_differing": len(comparison.steps),
        },
    }
