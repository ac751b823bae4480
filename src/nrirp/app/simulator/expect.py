"""Checks a workload step carries (``expect:``), and their verdict on the state after the step.

A check names one subject: a ``container`` (``[namespace/]pod/container``), a ``pool`` or a
``balloon`` of the policy (by name, as ``--json`` shows them). Sets of CPUs or memory nodes are
compared with :class:`SetCheck` (equal, within, how many, disjoint from other containers'). A
check that does not hold gives one line per difference, e.g.
``container default/db/postgres cpus: expected 0-3, got 4-7``. The keys are documented in
``docs/simulator.md``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

from nrirp.domain.config.errors import InvalidObject, InvalidValue, Issue, quote
from nrirp.domain.cpuset import CPUSet, CPUSetError

DEFAULT_NAMESPACE = "default"
_EMPTY = "(empty)"
_SET_KEYS = ("equals", "within", "count", "disjointFrom")


def container_label(ref: str) -> str:
    """``namespace/pod/container`` for ``[namespace/]pod/container``."""
    return ref if ref.count("/") == 2 else f"{DEFAULT_NAMESPACE}/{ref}"


def _ref_problem(ref: str) -> str | None:
    parts = ref.split("/")
    if len(parts) not in (2, 3) or not all(parts):
        return f"invalid container {quote(ref)}: expected POD/CONTAINER or NAMESPACE/POD/CONTAINER"
    return None


def _cpu_list(value: Any) -> CPUSet:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return CPUSet.of(value)
    if not isinstance(value, str):
        raise InvalidValue(value, "expected a cpu list such as '0-3,8'")
    try:
        return CPUSet.parse(value)
    except CPUSetError as exc:
        raise InvalidValue(value, f"expected a cpu list such as '0-3,8' ({exc})") from None


def _text(cpus: CPUSet) -> str:
    return str(cpus) or _EMPTY


@attrs.frozen(kw_only=True)
class SetCheck:
    """What a set of CPUs or memory nodes must be. Written as a cpu list (it must equal it)
    or a mapping of ``equals``, ``within`` (a cpu list), ``count`` (how many) and
    ``disjointFrom`` (containers whose set of the same kind it must not meet)."""

    equals: CPUSet | None = None
    within: CPUSet | None = None
    count: int | None = None
    disjoint_from: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, value: Any) -> SetCheck:
        if not isinstance(value, Mapping):
            return cls(equals=_cpu_list(value))
        issues: list[Issue] = []
        fields: dict[str, Any] = {}
        for key, given in value.items():
            try:
                if key in ("equals", "within"):
                    fields[key] = _cpu_list(given)
                elif key == "count":
                    if isinstance(given, bool) or not isinstance(given, int) or given < 0:
                        raise InvalidValue(given, "expected a number >= 0")
                    fields["count"] = given
                elif key == "disjointFrom":
                    refs = [given] if isinstance(given, str) else given
                    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
                        raise InvalidValue(given, "expected a container or a list of them")
                    for ref in refs:
                        problem = _ref_problem(ref)
                        if problem:
                            issues.append(((key,), problem))
                    fields["disjoint_from"] = tuple(refs)
                else:
                    issues.append(((str(key),), f"unknown field (expected {', '.join(_SET_KEYS)})"))
            except InvalidValue as exc:
                issues.append(((str(key),), exc.describe()))
        if not issues and not fields:
            issues.append(((), f"give at least one of {', '.join(_SET_KEYS)}"))
        if issues:
            raise InvalidObject(issues)
        return cls(**fields)

    def to_config(self) -> Any:
        if self.within is None and self.count is None and not self.disjoint_from:
            return str(self.equals)
        out: dict[str, Any] = {}
        if self.equals is not None:
            out["equals"] = str(self.equals)
        if self.within is not None:
            out["within"] = str(self.within)
        if self.count is not None:
            out["count"] = self.count
        if self.disjoint_from:
            out["disjointFrom"] = list(self.disjoint_from)
        return out

    def problems(
        self, what: str, actual: CPUSet | None, others: Mapping[str, CPUSet | None]
    ) -> Iterator[str]:
        """One line per way ``actual`` (``None``: not restricted) differs; ``others`` holds
        the same kind of set of each container named in ``disjoint_from`` (absent: no such
        container)."""
        if actual is None:
            yield f"{what}: not restricted (all), expected {self._describe()}"
            return
        if self.equals is not None and actual != self.equals:
            yield f"{what}: expected {_text(self.equals)}, got {_text(actual)}"
        if self.within is not None and not actual.issubset(self.within):
            yield (
                f"{what}: expected within {_text(self.within)}, got {_text(actual)} "
                f"({actual - self.within} outside)"
            )
        if self.count is not None and len(actual) != self.count:
            yield f"{what}: expected count {self.count}, got {len(actual)} ({_text(actual)})"
        for ref in self.disjoint_from:
            label = container_label(ref)
            if label not in others:
                yield f"{what}: no container {label} to compare with"
                continue
            other = others[label]
            shared = actual if other is None else actual & other
            if shared:
                theirs = "all" if other is None else _text(other)
                yield (
                    f"{what}: expected disjoint from {label}'s ({theirs}), got {_text(actual)} "
                    f"({shared} in both)"
                )

    def _describe(self) -> str:
        parts = []
        if self.equals is not None:
            parts.append(_text(self.equals))
        if self.within is not None:
            parts.append(f"within {_text(self.within)}")
        if self.count is not None:
            parts.append(f"{self.count} of them")
        parts += [f"disjoint from {container_label(r)}" for r in self.disjoint_from]
        return ", ".join(parts)


_CONTAINER_KEYS = ("cpus", "mems", "state", "pool", "balloon", "refused")
_POOL_KEYS = ("cpus", "shared", "reserved", "isolated", "mems", "containers")
_BALLOON_KEYS = ("cpus", "mems", "containers")


@attrs.frozen(kw_only=True)
class Expectation:
    """One check of a step's ``expect`` list. The subject is ``container`` when given (then
    ``pool``/``balloon`` name where its allocation must be), else ``pool``, else ``balloon``.
    """

    container: str = ""
    pool: str = ""
    balloon: str = ""
    cpus: SetCheck | None = None
    mems: SetCheck | None = None
    shared: SetCheck | None = None
    reserved: SetCheck | None = None
    isolated: SetCheck | None = None
    state: str = ""
    containers: tuple[str, ...] | None = None
    refused: Any = None
    """``true``, or text the refusal's reason must contain: the step refused the container."""

    @property
    def subject(self) -> str:
        if self.container:
            return f"container {container_label(self.container)}"
        if self.pool:
            return f"pool {self.pool}"
        return f"balloon {self.balloon}"

    def _given(self) -> list[str]:
        keys = {
            "cpus": self.cpus,
            "mems": self.mems,
            "shared": self.shared,
            "reserved": self.reserved,
            "isolated": self.isolated,
            "state": self.state or None,
            "containers": self.containers,
            "refused": self.refused,
            "pool": self.pool or None,
            "balloon": self.balloon or None,
        }
        return [key for key, value in keys.items() if value is not None]

    def config_problems(self) -> Iterator[Issue]:
        given = self._given()
        allowed: tuple[str, ...]
        if self.container:
            allowed, what = _CONTAINER_KEYS, "a container"
            problem = _ref_problem(self.container)
            if problem:
                yield ("container",), problem
        elif self.pool:
            allowed, what = (*_POOL_KEYS, "pool"), "a pool"
        elif self.balloon:
            allowed, what = (*_BALLOON_KEYS, "balloon"), "a balloon"
        else:
            yield (), "name the subject: 'container', 'pool' or 'balloon'"
            return
        for key in given:
            if key not in allowed:
                yield (key,), f"not a check of {what} (give {', '.join(allowed)})"
        checks = [k for k in given if k not in ("pool", "balloon")]
        if not checks and not (self.container and (self.pool or self.balloon)):
            yield (), f"nothing to check of {what}"
        if self.container and self.pool and self.balloon:
            yield ("balloon",), "give 'pool' or 'balloon', not both"
        if self.refused is not None:
            if not (self.refused is True or (isinstance(self.refused, str) and self.refused)):
                yield ("refused",), f"invalid value {quote(self.refused)}: expected true or text"
            elif len(given) > 1:
                yield ("refused",), "a refused container has nothing else to check"
        for index, ref in enumerate(self.containers or ()):
            problem = _ref_problem(ref)
            if problem:
                yield ("containers", index), problem


# ---------------------------------------------------------------------- the verdict
@attrs.frozen
class CheckedContainer:
    """What a check can see of a container after the step."""

    cpus: CPUSet | None
    mems: CPUSet | None
    state: str
    holder: str | None
    """The pool or balloon holding its allocation, if the policy shows one."""


@attrs.frozen
class CheckedPool:
    """What a check can see of a pool or balloon after the step (``None``: not shown)."""

    cpus: CPUSet | None
    mems: CPUSet | None
    shared: CPUSet | None
    reserved: CPUSet | None
    isolated: CPUSet | None
    containers: frozenset[str]


@attrs.frozen
class CheckResult:
    """The verdict of check ``number`` (1-based) of a step: ``problems`` says what differs."""

    number: int
    subject: str
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


@attrs.frozen
class StepState:
    """The state the checks of a step look at: containers by ``namespace/pod/container``
    (the latest instance), pools and balloons by name, and the refusals of the step."""

    containers: Mapping[str, CheckedContainer]
    pools: Mapping[str, CheckedPool]
    balloons: Mapping[str, CheckedPool]
    refusals: Mapping[str, str]


def check_step(checks: Sequence[Expectation], state: StepState) -> tuple[CheckResult, ...]:
    """The verdict of every check, in order."""
    return tuple(
        CheckResult(number, check.subject, tuple(_problems(check, state)))
        for number, check in enumerate(checks, start=1)
    )


def _problems(check: Expectation, state: StepState) -> Iterator[str]:
    if check.container:
        yield from _container_problems(check, state)
    elif check.pool:
        yield from _pool_problems(check, state.pools.get(check.pool), "pool", state)
    else:
        yield from _pool_problems(check, state.balloons.get(check.balloon), "balloon", state)


def _container_problems(check: Expectation, state: StepState) -> Iterator[str]:
    label = container_label(check.container)
    if check.refused is not None:
        reason = state.refusals.get(label)
        if reason is None:
            yield "expected to be refused, it was not"
        elif isinstance(check.refused, str) and check.refused not in reason:
            yield f"refused, but not with {quote(check.refused)}: {reason}"
        return
    found = state.containers.get(label)
    if found is None:
        refused = state.refusals.get(label)
        yield f"refused: {refused}" if refused else "no such container in the runtime"
        return
    for name, check_set, actual in (
        ("cpus", check.cpus, found.cpus),
        ("mems", check.mems, found.mems),
    ):
        if check_set is not None:
            others = _others(check_set, state, name)
            yield from check_set.problems(name, actual, others)
    if check.state and found.state != check.state:
        yield f"state: expected {check.state}, got {found.state}"
    holder = check.pool or check.balloon
    if holder and found.holder != holder:
        kind = "pool" if check.pool else "balloon"
        yield f"{kind}: expected {holder}, got {found.holder or 'none'}"


def _others(check: SetCheck, state: StepState, name: str) -> dict[str, CPUSet | None]:
    out: dict[str, CPUSet | None] = {}
    for ref in check.disjoint_from:
        label = container_label(ref)
        other = state.containers.get(label)
        if other is not None:
            out[label] = other.cpus if name in ("cpus", "shared") else other.mems
    return out


def _pool_problems(
    check: Expectation, found: CheckedPool | None, kind: str, state: StepState
) -> Iterator[str]:
    name = check.pool or check.balloon
    known = state.pools if kind == "pool" else state.balloons
    if found is None:
        names = ", ".join(list(known)[:12]) + (", ..." if len(known) > 12 else "")
        yield f"no {kind} named {quote(name)} ({kind}s: {names or 'none'})"
        return
    for label, check_set, actual in (
        ("cpus", check.cpus, found.cpus),
        ("mems", check.mems, found.mems),
        ("shared", check.shared, found.shared),
        ("reserved", check.reserved, found.reserved),
        ("isolated", check.isolated, found.isolated),
    ):
        if check_set is not None:
            yield from check_set.problems(label, actual, _others(check_set, state, label))
    if check.containers is not None:
        expected = {container_label(c) for c in check.containers}
        if expected != found.containers:
            missing = sorted(expected - found.containers)
            extra = sorted(found.containers - expected)
            detail = "; ".join(
                part
                for part in (
                    f"missing {', '.join(missing)}" if missing else "",
                    f"also {', '.join(extra)}" if extra else "",
                )
                if part
            )
            yield f"containers: {detail}"
