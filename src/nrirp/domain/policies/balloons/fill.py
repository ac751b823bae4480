"""Which balloon a container goes to: its type, then an instance by the fill chain
(``reference-balloons.md`` §3.2, §3.3).

Type: the ``balloon`` annotation; else the first type (in list order) one of whose
``matchExpressions`` matches or one of whose ``namespaces`` globs matches the pod's namespace;
else ``default``.

Instance, the first method of the chain that finds one:

1. ``same-group`` (with ``groupBy``): a balloon holding the container's group;
2. ``same-pod`` (unless ``preferSpreadingPods``): a balloon holding a container of the pod;
3. ``same-namespace`` then ``new-balloon`` (with ``preferPerNamespaceBalloon``);
4. ``new-balloon``, ``balanced``, ``balanced-inflate`` (with ``preferNewBalloons``), else
   ``balanced``, ``balanced-inflate``, ``new-balloon``.

Fits: ``balanced`` wants ``free(b) >= req``, the others ``maxFree(b) >= req``; the best is the
one with the most free (``maxFree`` for ``balanced-inflate``), then the fewest containers, then
the first in list order. ``new-balloon`` takes the first empty balloon of the type as it is, or
creates one.
"""

from __future__ import annotations

from collections.abc import Callable

from nrirp.domain.model import Container, Pod
from nrirp.domain.policies.balloons.balloon import Balloon, Member
from nrirp.domain.policies.balloons.catalog import BalloonKind, Catalog
from nrirp.domain.policies.balloons.engine import Engine, NoBalloon, Plan
from nrirp.domain.policies.balloons.requests import Request

Method = Callable[[Engine, BalloonKind, Member, Plan, Container], Balloon | None]


def choose_kind(
    catalog: Catalog, request: Request, container: Container, pod: Pod | None
) -> BalloonKind:
    """The container's balloon type; raises :class:`NoBalloon` for an unknown annotation."""
    if request.balloon is not None:
        kind = catalog.by_name.get(request.balloon)
        if kind is None:
            known = ", ".join(k.name for k in catalog.kinds)
            raise NoBalloon(
                f"no balloon for annotation balloon.balloons.resource-policy.nri.io="
                f"{request.balloon!r} (balloon types: {known})"
            )
        return kind
    namespace = request.namespace
    for kind in catalog.kinds:  # compiled per configuration: a few lookups per type
        if any(predicate(container, pod) for predicate in kind.expression_matchers):
            return kind
        if kind.namespace_matcher.match(namespace):
            return kind
    return catalog.default_kind


def choose_balloon(
    engine: Engine, kind: BalloonKind, member: Member, plan: Plan, container: Container
) -> Balloon:
    """The balloon of ``kind`` for ``member`` by the fill chain; a balloon it creates is
    left in ``plan.created``. Raises :class:`NoBalloon` when no method finds one."""
    for method in _chain(kind):
        found = method(engine, kind, member, plan, container)
        if found is not None:
            return found
    raise NoBalloon(
        f"no suitable {kind.name} balloon instance available" + _why(engine, kind, member, plan)
    )


def _chain(kind: BalloonKind) -> list[Method]:
    source = kind.source
    chain: list[Method] = []
    if source.group_by:
        chain.append(_same_group)
    if not source.prefer_spreading_pods:
        chain.append(_same_pod)
    if source.prefer_per_namespace_balloon:
        chain += [_same_namespace, _new_balloon]
    if source.prefer_new_balloons:
        chain += [_new_balloon, _balanced, _balanced_inflate]
    else:
        chain += [_balanced, _balanced_inflate, _new_balloon]
    return chain


def _best(
    engine: Engine,
    plan: Plan,
    candidates: list[Balloon],
    request: int,
    *,
    inflate: bool,
    rank_by_max: bool = False,
) -> Balloon | None:
    """The balloon with the most free (or max free) mCPU, then the fewest containers, then
    the first; only those that fit ``request`` (``inflate``: by max free, else by free)."""
    best: Balloon | None = None
    best_key: tuple[int, int] | None = None
    for balloon in candidates:
        free = engine.free_mcpu(balloon, plan)
        max_free = engine.max_free(balloon, plan)
        if (max_free if inflate else free) < request:
            continue
        key = (-(max_free if rank_by_max else free), len(balloon.members))
        if best_key is None or key < best_key:
            best, best_key = balloon, key
    return best


def _same_group(
    engine: Engine, kind: BalloonKind, member: Member, plan: Plan, container: Container
) -> Balloon | None:
    group = member.group
    if group is None or not member.group_resolved:
        return None
    candidates = [b for b in engine.of_kind(kind) if b.groups.get(group, 0) > 0]
    return _best(engine, plan, candidates, member.request, inflate=True)


def _same_pod(
    engine: Engine, kind: BalloonKind, member: Member, plan: Plan, container: Container
) -> Balloon | None:
    candidates = [b for b in engine.of_kind(kind) if member.pod_id in b.pods]
    return _best(engine, plan, candidates, member.request, inflate=True)


def _same_namespace(
    engine: Engine, kind: BalloonKind, member: Member, plan: Plan, container: Container
) -> Balloon | None:
    candidates = [b for b in engine.of_kind(kind) if member.namespace in b.namespaces]
    return _best(engine, plan, candidates, member.request, inflate=True)


def _balanced(
    engine: Engine, kind: BalloonKind, member: Member, plan: Plan, container: Container
) -> Balloon | None:
    return _best(engine, plan, engine.of_kind(kind), member.request, inflate=False)


def _balanced_inflate(
    engine: Engine, kind: BalloonKind, member: Member, plan: Plan, container: Container
) -> Balloon | None:
    return _best(engine, plan, engine.of_kind(kind), member.request, inflate=True, rank_by_max=True)


def _new_balloon(
    engine: Engine, kind: BalloonKind, member: Member, plan: Plan, container: Container
) -> Balloon | None:
    for balloon in engine.of_kind(kind):
        if not balloon.members:
            return balloon  # an empty balloon of the type, without a fit check
    if not plan.free or plan.free.bit_count() < kind.min_cpus:
        return None
    trial = plan.copy()
    try:
        balloon = engine.plan_new(kind, trial, container)
    except NoBalloon:
        return None
    if engine.max_avail(balloon, trial) < member.request:
        return None  # it could never hold the container: dropped, its CPUs stay free
    plan.free, plan.cpus, plan.created = trial.free, trial.cpus, trial.created
    return balloon


def _why(engine: Engine, kind: BalloonKind, member: Member, plan: Plan) -> str:
    balloons = engine.of_kind(kind)
    parts = [f"; {member.request}m requested"]
    if balloons:
        best = max(engine.max_free(b, plan) for b in balloons)
        parts.append(f", the most a {kind.name} balloon could still give is {max(best, 0)}m")
    free = plan.free.bit_count()
    if kind.max_balloons > 0 and len(balloons) >= kind.max_balloons:
        parts.append(f", {kind.name} has its maxBalloons ({kind.max_balloons})")
    elif kind.min_cpus > free:
        parts.append(f", {kind.name} needs minCPUs ({kind.min_cpus}) for a new balloon")
    if 0 < kind.max_cpus * 1000 < member.request:
        parts.append(f", {kind.name} balloons have at most maxCPUs ({kind.max_cpus})")
    parts.append(f", {free} CPUs free")
    return "".join(parts)
