"""Presenting a replay: the readable table and the JSON document of ``nrirp simulate``.

The document is described key by key in ``docs/simulator.md``; bump ``FORMAT`` on any
incompatible change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nrirp.app.commands.common.hardware_report import human_size
from nrirp.app.simulator.expect import CheckResult
from nrirp.app.simulator.host_view import HostView, host_lines
from nrirp.app.simulator.results import (
    BalloonView,
    Change,
    ContainerView,
    PoolView,
    ReplayResult,
    StepResult,
)
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import IOPriority, Scheduling
from nrirp.domain.ports.decisions import Decision, Notice

FORMAT = "nrirp.simulate/v1"
NOT_RESTRICTED = "-"
EMPTY = "(empty)"
_MARK = {Change.NEW: "+", Change.CHANGED: "*", Change.UNCHANGED: " "}
_COLUMNS = ("POD", "CONTAINER", "STATE", "QOS", "CPUS", "MEMS", "SHARES", "QUOTA", "MEMORY")
_BALLOON_COLUMNS = ("BALLOON", "TYPE", "CPUS", "SHARED IDLE", "MEMS", "CPU CLASS", "CONTAINERS")


# ---------------------------------------------------------------------- JSON
def _cpuset(value: CPUSet | None) -> str | None:
    return None if value is None else str(value)


def _decision(d: Decision) -> dict[str, Any]:
    return {
        "operation": d.operation,
        "namespace": d.namespace,
        "pod": d.pod,
        "container": d.container,
        "container_id": d.container_id,
        "cpus": _cpuset(d.cpus),
        "mems": _cpuset(d.mems),
        "reason": d.reason,
        "ok": d.ok,
    }


def _notice(n: Notice) -> dict[str, Any]:
    return {
        "source": n.source,
        "severity": n.severity.value,
        "message": n.message,
        "container_id": n.container_id,
    }


def _container(c: ContainerView) -> dict[str, Any]:
    return {
        "namespace": c.namespace,
        "pod": c.pod,
        "name": c.name,
        "id": c.id,
        "state": c.state,
        "qos": c.qos,
        "cpus": _cpuset(c.cpus),
        "mems": _cpuset(c.mems),
        "cpu_shares": c.cpu_shares,
        "cpu_quota": c.cpu_quota,
        "cpu_period": c.cpu_period,
        "memory_limit": c.memory_limit,
        "oom_score_adj": c.oom_score_adj,
        "change": c.change.value,
        "decided": (
            {"cpus": _cpuset(c.decided_cpus), "mems": _cpuset(c.decided_mems)}
            if c.known_to_policy
            else None
        ),
        "matches_decision": c.matches_decision,
        "pool": c.pool,
        "scheduling": _scheduling(c.scheduling),
        "io_priority": _io_priority(c.io_priority),
        "applied_by": c.applied_by,
        "rdt_class": c.rdt_class,
        "blockio_class": c.blockio_class,
    }


def _scheduling(s: Scheduling | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {
        "policy": s.policy.value,
        "nice": s.nice,
        "priority": s.priority,
        "flags": list(s.flags),
        "runtime": s.runtime,
        "deadline": s.deadline,
        "period": s.period,
    }


def _io_priority(p: IOPriority | None) -> dict[str, Any] | None:
    return None if p is None else {"class": p.io_class.value, "priority": p.priority}


def _pool(p: PoolView) -> dict[str, Any]:
    return {
        "name": p.name,
        "kind": p.kind,
        "parent": p.parent,
        "cpus": p.cpus,
        "shared": p.shared,
        "reserved": p.reserved,
        "isolated": p.isolated,
        "mems": p.mems,
        "containers": list(p.containers),
    }


def _check(c: CheckResult) -> dict[str, Any]:
    return {"number": c.number, "subject": c.subject, "ok": c.ok, "problems": list(c.problems)}


def _balloon(b: BalloonView) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": b.name,
        "type": b.type,
        "cpus": b.cpus,
        "shared_idle_cpus": b.shared_idle_cpus,
        "mems": b.mems,
        "cpu_class": b.cpu_class,
        "containers": list(b.containers),
    }
    if b.components:
        out["components"] = [_balloon(c) for c in b.components]
    return out


def step_document(step: StepResult) -> dict[str, Any]:
    return {
        "number": step.number,
        "kind": step.kind,
        "description": step.description,
        "note": step.note,
        "ok": step.ok,
        "errors": list(step.errors),
        "expected_error": step.expected_error,
        "as_expected": step.as_expected,
        "unmet_expectation": step.unmet_expectation,
        "decisions": [_decision(d) for d in step.decisions],
        "notices": [_notice(n) for n in step.notices],
        "pods": [
            {
                "namespace": p.namespace,
                "name": p.name,
                "uid": p.uid,
                "id": p.id,
                "qos": p.qos,
                "cgroup_parent": p.cgroup_parent,
                "state": p.state,
            }
            for p in step.pods
        ],
        "containers": [_container(c) for c in step.containers],
        "balloons": [_balloon(b) for b in step.balloons],
        "pools": [_pool(p) for p in step.pools],
        "checks": [_check(c) for c in step.checks],
        "state_shown": step.state_shown,
        "host": _host(step.host, step.host_changed),
    }


def _host(view: HostView | None, changed: bool) -> dict[str, Any] | None:
    if view is None:
        return None
    return {
        "changed": changed,
        "cpu_classes": [
            {
                "cpus": g.cpus,
                "class": g.cpu_class,
                "min_khz": g.min_khz,
                "max_khz": g.max_khz,
                "governor": g.governor,
                "epp": g.epp,
                "disabled_cstates": list(g.disabled_cstates),
            }
            for g in view.cpu_classes
        ],
        "uncore": [{"die": d, "min_khz": lo, "max_khz": hi} for d, lo, hi in view.uncore],
        "interrupts": [{"irq": n, "cpus": cpus} for n, cpus in view.interrupts],
        "default_irq_affinity": view.default_irq_affinity,
        "rdt_groups": [{"group": g, "schemata": list(lines)} for g, lines in view.rdt_groups],
        "files": dict(view.files),
        "files_changed": list(view.changed),
    }


def replay_document(result: ReplayResult) -> dict[str, Any]:
    """The whole replay as JSON-ready data."""
    return {
        "format": FORMAT,
        "workload": {"source": result.workload, "description": result.description},
        "policy": result.policy,
        "config_file": result.config_file,
        "hardware": {
            "source": result.hardware,
            "cpus": str(result.cpus),
            "nodes": str(result.nodes),
        },
        "nri_version": result.nri_version,
        "start_notices": [_notice(n) for n in result.start_notices],
        "steps": [step_document(s) for s in result.steps],
        "summary": {
            "steps": len(result.steps),
            "failed": len(result.failed),
            "unexpected": len(result.unexpected),
        },
    }


# ---------------------------------------------------------------------- table
def _text(value: CPUSet | None) -> str:
    if value is None:
        return NOT_RESTRICTED
    return str(value) or EMPTY


def _quota(c: ContainerView) -> str:
    if c.cpu_quota is None or c.cpu_quota <= 0:
        return NOT_RESTRICTED
    return f"{c.cpu_quota}/{c.cpu_period}" if c.cpu_period else str(c.cpu_quota)


def _row(c: ContainerView) -> tuple[str, ...]:
    mark = _MARK[c.change] + ("!" if not c.matches_decision else " ")
    return (
        mark,
        f"{c.namespace}/{c.pod}",
        c.name,
        c.state,
        c.qos,
        _text(c.cpus),
        _text(c.mems),
        NOT_RESTRICTED if c.cpu_shares is None else str(c.cpu_shares),
        _quota(c),
        NOT_RESTRICTED if not c.memory_limit else human_size(c.memory_limit),
    )


def _table(containers: Sequence[ContainerView], indent: str) -> list[str]:
    if not containers:
        return [f"{indent}(no containers)"]
    rows = [("  ", *_COLUMNS), *(_row(c) for c in containers)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        (indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))).rstrip()
        for row in rows
    ]


def _set_text(text: str) -> str:
    return text or NOT_RESTRICTED


def _balloon_row(b: BalloonView) -> tuple[str, ...]:
    cpus = b.cpus or EMPTY
    if b.components:
        cpus += " (" + ", ".join(f"{c.name} {c.cpus or EMPTY}" for c in b.components) + ")"
    return (
        b.name,
        b.type,
        cpus,
        _set_text(b.shared_idle_cpus),
        _set_text(b.mems),
        b.cpu_class or NOT_RESTRICTED,
        ", ".join(b.containers) or NOT_RESTRICTED,
    )


def _balloon_table(balloons: Sequence[BalloonView], indent: str) -> list[str]:
    rows = [_BALLOON_COLUMNS, *(_balloon_row(b) for b in balloons)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        (indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))).rstrip()
        for row in rows
    ]


def _decision_line(d: Decision) -> str:
    return (
        f"decision: {d.namespace}/{d.pod}/{d.container} cpus={_text(d.cpus)} "
        f"mems={_text(d.mems)} ({d.reason})"
    )


def _mismatch_lines(containers: Sequence[ContainerView]) -> list[str]:
    return [
        f"! {c.namespace}/{c.pod}/{c.name}: runtime has cpus={_text(c.cpus)} "
        f"mems={_text(c.mems)}, the policy decided cpus={_text(c.decided_cpus)} "
        f"mems={_text(c.decided_mems)}"
        for c in containers
        if not c.matches_decision
    ]


def step_lines(step: StepResult) -> list[str]:
    lines = [f"Step {step.number}: {step.description}"]
    indent = "  "
    if step.note:
        lines.append(f"{indent}note: {step.note}")
    if step.ok:
        lines.append(f"{indent}result: ok")
    else:
        expected = " (as expected)" if step.as_expected else ""
        lines.append(f"{indent}result: FAILED{expected}")
        lines += [f"{indent}  {error}" for error in step.errors]
    if step.unmet_expectation:
        lines.append(f"{indent}UNEXPECTED: {step.unmet_expectation}")
    lines += _check_lines(step.checks, indent)
    lines += [indent + _decision_line(d) for d in step.decisions]
    lines += [f"{indent}notice ({n.severity.value}, {n.source}): {n.message}" for n in step.notices]
    lines += [indent + line for line in _scheduling_lines(step.containers)]
    if step.host is not None and step.host_changed:
        lines += [indent + line for line in host_lines(step.host)]
    if not step.state_shown:
        return lines
    lines += [indent + line for line in _mismatch_lines(step.containers)]
    lines += _table(step.containers, indent)
    if step.balloons:
        lines += _balloon_table(step.balloons, indent + "  ")
    return lines


def _scheduling_lines(containers: Sequence[ContainerView]) -> list[str]:
    """The scheduling class of each new container that has one, and who applied it; its RDT
    and block I/O classes (the runtime applies them)."""
    lines = []
    for c in containers:
        if c.change is Change.NEW and (c.rdt_class or c.blockio_class):
            named = [f"RDT {c.rdt_class}"] if c.rdt_class else []
            named += [f"block I/O {c.blockio_class}"] if c.blockio_class else []
            lines.append(
                f"classes: {c.namespace}/{c.pod}/{c.name}: {', '.join(named)} (by the runtime)"
            )
        if c.change is not Change.NEW or c.applied_by is None:
            continue
        parts = []
        if c.scheduling is not None:
            s = c.scheduling
            text = s.policy.value
            for name, value in (("priority", s.priority), ("nice", s.nice)):
                if value is not None:
                    text += f" {name} {value}"
            parts.append(text)
        if c.io_priority is not None:
            parts.append(f"I/O {c.io_priority.io_class.value} {c.io_priority.priority}")
        how = (
            "by the runtime (NRI)"
            if c.applied_by == "nri"
            else "by the host controller on its tasks (the runtime's NRI cannot carry it)"
        )
        lines.append(f"scheduling: {c.namespace}/{c.pod}/{c.name}: {', '.join(parts)} {how}")
    return lines


def _check_lines(checks: Sequence[CheckResult], indent: str) -> list[str]:
    """``expect: 3 checks held`` or a line per failed check and difference."""
    if not checks:
        return []
    failed = [c for c in checks if not c.ok]
    if not failed:
        return [f"{indent}expect: {len(checks)} check{'s' if len(checks) != 1 else ''} held"]
    lines = [f"{indent}EXPECT FAILED: {len(failed)} of {len(checks)} checks"]
    for check in failed:
        lines += [f"{indent}  [{check.number}] {check.subject} {p}" for p in check.problems]
    return lines


def replay_table(result: ReplayResult) -> str:
    """The replay as readable text: a header, then each step with its outcome and table."""
    lines = [
        f"Workload {result.workload}" + (f": {result.description}" if result.description else ""),
        f"Policy {result.policy}"
        + (f" (config {result.config_file})" if result.config_file else " (default config)")
        + f" on {result.hardware} (cpus {result.cpus}, nodes {result.nodes}); "
        f"simulated runtime NRI {result.nri_version}",
        f"Columns: {NOT_RESTRICTED} = not restricted or not set; + new, * changed since the "
        "previous step, ! the runtime does not hold what the policy decided",
    ]
    if result.start_notices:
        lines += ["", "At the start:"]
        lines += [
            f"  notice ({n.severity.value}, {n.source}): {n.message}" for n in result.start_notices
        ]
    for step in result.steps:
        lines.append("")
        lines += step_lines(step)
    lines.append("")
    lines.append(summary_line(result))
    return "\n".join(lines)


def _numbers(steps: Sequence[StepResult]) -> str:
    word = "step" if len(steps) == 1 else "steps"
    return f"{word} " + ", ".join(str(s.number) for s in steps)


def _count(number: int, noun: str) -> str:
    """``1 step``, ``2 steps``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def summary_line(result: ReplayResult) -> str:
    """``11 steps: 3 failed (steps 4, 7, 8); all as expected``."""
    failed, unexpected = result.failed, result.unexpected
    text = f"{_count(len(result.steps), 'step')}: {len(failed)} failed"
    if failed:
        text += f" ({_numbers(failed)})"
    if unexpected:
        return text + f"; {len(unexpected)} not as expected ({_numbers(unexpected)})"
    return text + ("; all as expected" if failed else "")
