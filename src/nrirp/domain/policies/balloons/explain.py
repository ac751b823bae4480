"""Why a container is in its balloon: the balloons policy's decision worked out again.

On demand, never while deciding: the engine is copied with the container taken out (its
balloon deflated or deleted as when it leaves), and the container is placed in the copy as a
new one would be: its type (the ``balloon`` annotation, else the first type in list order with
a matching ``matchExpressions`` entry or ``namespaces`` glob, else ``default``), then the
methods of the fill chain in order, each with the balloons it looked at and their items
(fits the request, free or max free mCPU, containers, list position: the order the chain
ranks by, docs/balloons.md), the method that found the balloon, the new balloon's creation
when it came to that, and the sizing (inflate to the members' requests). A refusal says what
was short, as the policy does. The verdict is the policy's own (``choose_kind``,
``choose_balloon`` and the resize run on the copy); the trace beside it follows the same
rules. Nothing of the policy's own state changes.
"""

from __future__ import annotations

import copy

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, Pod
from nrirp.domain.policies.balloons.balloon import Balloon, Member
from nrirp.domain.policies.balloons.catalog import BalloonKind, Catalog
from nrirp.domain.policies.balloons.engine import Engine, NoBalloon, Plan
from nrirp.domain.policies.balloons.fill import _chain, choose_balloon, choose_kind
from nrirp.domain.policies.balloons.groups import expand_group
from nrirp.domain.policies.balloons.requests import (
    Request,
    build_request,
    is_preserved,
)
from nrirp.domain.policies.balloons.resize import ResizeError
from nrirp.domain.policy import PolicyContext
from nrirp.domain.policy.explanation import (
    Candidate,
    Deciding,
    Explanation,
    Item,
    Stage,
    Standing,
    Subject,
    Verdict,
    identity,
    value_text,
)

POLICY = "balloons"
TYPE_RULE = "the balloon annotation; else the first type in list order that matches; else default"
FILL_RULE = "fits, then more free (max free for balanced-inflate), fewer containers, list order"


def explain_balloon(
    *,
    catalog: Catalog,
    engine: Engine,
    preserved: bool,
    ctx: PolicyContext,
    subject: Subject,
) -> Explanation:
    """The explanation of ``subject``'s balloon (see the module's docstring); ``preserved``:
    the policy leaves it alone now."""
    container, pod = subject.container, subject.pod
    current = engine.owner.get(container.id) if subject.placed else None
    placement = _balloon_text(current) if current is not None else ""
    reader = ctx.cache.annotations(container)  # nothing reported
    if preserved or is_preserved(reader, catalog.preserve, container, pod, catalog.privileged):
        return Explanation(
            policy=POLICY,
            **identity(pod, container),
            container_id=container.id,
            verdict=Verdict.LEFT_ALONE,
            summary="left alone: cpu.preserve or a preserve.matchExpressions entry",
            placement="(preserved)",
        )
    request = build_request(pod, container, reader, ctx.annotation_parser.parse, catalog.privileged)
    stages = [Stage("request", _request_text(request))]
    work = detached_copy(catalog, engine, container.id)
    kind_stage, traced_kind = _type_stage(catalog, request, container, pod)
    stages.append(kind_stage)

    def refused(why: str) -> Explanation:
        return Explanation(
            policy=POLICY,
            **identity(pod, container),
            container_id=container.id,
            verdict=Verdict.REFUSED,
            summary=why,
            stages=tuple(stages),
            placement=placement,
            shortage=why,
        )

    try:
        kind = choose_kind(work.catalog, request, container, pod)
    except NoBalloon as exc:
        return refused(str(exc))
    notes: list[str] = []
    if traced_kind is not kind:
        found = traced_kind.name if traced_kind is not None else None
        notes.append(f"the trace found type {found}, the policy {kind.name} (a bug)")
    member = make_member(kind, request, container, pod)
    trace = _fill_stages(work, kind, member, container)
    stages.extend(trace)
    plan = Plan(work.free)
    try:
        balloon = choose_balloon(work, kind, member, plan, container)
    except NoBalloon as exc:
        return refused(str(exc))
    traced = next((s.winner for s in trace if s.winner is not None), None)
    if traced != balloon.name:
        notes.append(f"the trace found balloon {traced}, the policy {balloon.name} (a bug)")
    sizing = _sizing(work, balloon, member, plan, container)
    stages.append(sizing)
    if sizing.outcome.startswith("refused"):
        return refused(sizing.outcome.removeprefix("refused: "))
    if current is not None and current.name != balloon.name:
        notes.append(
            f"it sits in {current.name}: placed when the node was otherwise (or kept through "
            f"a restart); arriving now it would go to {balloon.name}"
        )
    method = next((s.name.removeprefix("fill: ") for s in trace if s.winner), "")
    return Explanation(
        policy=POLICY,
        **identity(pod, container),
        container_id=container.id,
        verdict=Verdict.PLACED,
        summary=f"balloon {balloon.name} of type {kind.name}, found by {method}",
        stages=tuple(stages),
        placement=placement,
        notes=tuple(notes),
    )


def detached_copy(catalog: Catalog, engine: Engine, container_id: str) -> Engine:
    """A copy of the engine without the container (its balloon deflated, or deleted when
    it was the last one and the type has more than its minBalloons). The catalog and its
    types, the CPU tree and the devices are shared."""
    memo: dict[int, object] = {
        id(catalog): catalog,
        id(engine.catalog): engine.catalog,
        id(engine.resizer): engine.resizer,
        id(engine.devices): engine.devices,
    }
    for kind in (*catalog.kinds, *engine.catalog.kinds):
        memo[id(kind)] = kind
    work = copy.deepcopy(engine, memo)
    work.remove(container_id)
    return work


def make_member(kind: BalloonKind, request: Request, ctr: Container, pod: Pod | None) -> Member:
    """The container as a balloon member (as ``BalloonsPolicy._member``)."""
    group: str | None = None
    resolved = True
    if kind.source.group_by:
        expanded = expand_group(kind.source.group_by, ctr, pod)
        group, resolved = (expanded, True) if expanded is not None else ("", False)
    return Member(
        container_id=ctr.id,
        pod_id=ctr.pod_id,
        namespace=request.namespace,
        label=request.label,
        request=request.cpu,
        group=group,
        group_resolved=resolved,
        hide_hyperthreads=request.hide_hyperthreads,
        memory_limit=request.memory_limit,
        memory_types=request.memory_types,
        memory_preserve=request.memory_preserve,
    )


# ---------------------------------------------------------------------------- type
def _type_stage(
    catalog: Catalog, request: Request, ctr: Container, pod: Pod | None
) -> tuple[Stage, BalloonKind | None]:
    if request.balloon is not None:
        kind = catalog.by_name.get(request.balloon)
        named = (Item(1, "named by the balloon annotation", True, "true"),)
        if kind is None:
            return Stage(
                "balloon type",
                f"refused: the balloon annotation names {request.balloon!r}, not a type",
                rule=TYPE_RULE,
            ), None
        return Stage(
            "balloon type",
            f"{kind.name}: named by the balloon annotation",
            (Candidate(kind.name, Standing.CHOSEN, named),),
            kind.name,
            rule=TYPE_RULE,
        ), kind
    candidates: list[Candidate] = []
    chosen: BalloonKind | None = None
    for kind in catalog.kinds:
        expressions = [p(ctr, pod) for p in kind.expression_matchers]
        expression = any(expressions) if expressions else None
        namespace = kind.namespace_matcher.match(request.namespace) if kind.namespaces else None
        items = (
            Item(1, "a matchExpressions entry matches", expression, "true"),
            Item(2, "a namespaces glob matches", namespace, "true"),
            Item(3, "list position", kind.position, "first"),
        )
        matched = bool(expression) or bool(namespace)
        if matched and chosen is None:
            chosen = kind
            candidates.append(Candidate(kind.name, Standing.CHOSEN, items))
        elif matched:
            note = f"matches too, but {chosen.name if chosen else '?'} comes first"
            candidates.append(Candidate(kind.name, Standing.RANKED, items, note))
        else:
            candidates.append(Candidate(kind.name, Standing.NOT_VIABLE, items, "does not match"))
    if chosen is None:
        chosen = catalog.default_kind
        candidates = [
            attrs.evolve(c, standing=Standing.CHOSEN, note="no type matches: the default")
            if c.name == chosen.name
            else c
            for c in candidates
        ]
        outcome = f"{chosen.name}: no type matches the container"
    elif chosen is catalog.default_kind:
        outcome = f"{chosen.name}: the first type that matches"
    else:
        outcome = f"{chosen.name}: the first type in list order that matches"
    return Stage("balloon type", outcome, tuple(candidates), chosen.name, rule=TYPE_RULE), chosen


# ---------------------------------------------------------------------------- fill chain
_METHOD_NAMES = {
    "_same_group": "same-group",
    "_same_pod": "same-pod",
    "_same_namespace": "same-namespace",
    "_balanced": "balanced",
    "_balanced_inflate": "balanced-inflate",
    "_new_balloon": "new-balloon",
}


def _fill_stages(
    engine: Engine, kind: BalloonKind, member: Member, container: Container
) -> list[Stage]:
    """One stage per method of the type's fill chain, in order, until one finds a balloon
    (the methods after it are listed as not tried)."""
    stages: list[Stage] = []
    plan = Plan(engine.free)
    found = False
    for method in _chain(kind):
        name = _METHOD_NAMES.get(method.__name__, method.__name__)
        if found:
            stages.append(Stage(f"fill: {name}", "not tried: an earlier method found a balloon"))
            continue
        if name == "new-balloon":
            stage = _new_balloon_stage(engine, kind, member, plan.copy(), container)
        else:
            stage = _method_stage(engine, kind, member, plan, name)
        found = stage.winner is not None
        stages.append(stage)
    return stages


def _method_stage(
    engine: Engine, kind: BalloonKind, member: Member, plan: Plan, name: str
) -> Stage:
    balloons = engine.of_kind(kind)
    inflate = name != "balanced"
    by_max = name == "balanced-inflate"
    looked: list[tuple[Balloon, str]] = []
    for balloon in balloons:
        why = _not_looked_at(name, balloon, member)
        looked.append((balloon, why))
    keyed: list[tuple[tuple[int, int, int, int], Balloon, tuple[Item, ...]]] = []
    candidates: list[Candidate] = []
    for position, (balloon, why) in enumerate(looked):
        if why:
            candidates.append(Candidate(balloon.name, Standing.DROPPED, note=why))
            continue
        free = engine.free_mcpu(balloon, plan)
        max_free = engine.max_free(balloon, plan)
        room = max_free if inflate else free
        fits = room >= member.request
        rank = max_free if by_max else free
        items: tuple[Item, ...] = (
            Item(1, f"{'max free' if inflate else 'free'} mCPU covers the request", fits, "true"),
            Item(2, f"{'max free' if by_max else 'free'} mCPU", rank, "higher"),
            Item(3, "containers", len(balloon.members), "lower"),
            Item(4, "list position", position, "first"),
        )
        keyed.append(((0 if fits else 1, -rank, len(balloon.members), position), balloon, items))
    keyed.sort(key=lambda k: k[0])
    winner = keyed[0][1] if keyed and keyed[0][0][0] == 0 else None
    for key, balloon, items in keyed:
        if balloon is winner:
            candidates.append(Candidate(balloon.name, Standing.CHOSEN, items))
        elif key[0]:
            note = f"{member.request}m requested, {items[0].name.split(' mCPU')[0]} too small"
            candidates.append(Candidate(balloon.name, Standing.NOT_VIABLE, items, note))
        else:
            candidates.append(Candidate(balloon.name, Standing.RANKED, items))
    deciding = None
    if winner is not None and len(keyed) > 1:
        mine, theirs = keyed[0], keyed[1]
        for index, (a, b) in enumerate(zip(mine[0], theirs[0], strict=True)):
            if a != b:
                deciding = Deciding(mine[2][index], theirs[1].name, theirs[2][index].value)
                break
    if winner is not None:
        outcome = f"{winner.name}"
        if deciding is not None:
            outcome += (
                f": {deciding.item.name} {value_text(deciding.item.value)} against "
                f"{value_text(deciding.runner_up_value)} for {deciding.runner_up}"
            )
        elif len(keyed) == 1:
            outcome += ": the only candidate"
    elif not keyed:
        outcome = f"found none: {_nothing(name)}"
    else:
        outcome = f"found none: no candidate has {member.request}m"
    return Stage(
        f"fill: {name}",
        outcome,
        tuple(candidates),
        winner.name if winner is not None else None,
        deciding,
        FILL_RULE,
    )


def _not_looked_at(method: str, balloon: Balloon, member: Member) -> str:
    if method == "same-group":
        if member.group is None or not member.group_resolved:
            return "the container has no group"
        if balloon.groups.get(member.group, 0) <= 0:
            return f"holds no container of group {member.group!r}"
    elif method == "same-pod" and member.pod_id not in balloon.pods:
        return "holds no container of its pod"
    elif method == "same-namespace" and member.namespace not in balloon.namespaces:
        return f"holds no container of namespace {member.namespace!r}"
    return ""


def _nothing(method: str) -> str:
    return {
        "same-group": "no balloon of the type holds its group",
        "same-pod": "no balloon of the type holds a container of its pod",
        "same-namespace": "no balloon of the type holds its namespace",
    }.get(method, "the type has no balloon")


def _new_balloon_stage(
    engine: Engine, kind: BalloonKind, member: Member, plan: Plan, container: Container
) -> Stage:
    name = "fill: new-balloon"
    candidates: list[Candidate] = []
    for balloon in engine.of_kind(kind):
        if not balloon.members:
            note = "an empty balloon of the type, taken as it is"
            empty = (Item(1, "empty", True, "true"),)
            return Stage(
                name,
                f"{balloon.name}: {note}",
                (Candidate(balloon.name, Standing.CHOSEN, empty, note),),
                balloon.name,
            )
        candidates.append(Candidate(balloon.name, Standing.DROPPED, note="not empty"))
    existing = len(engine.of_kind(kind))
    free = plan.free.bit_count()
    below_max = kind.max_balloons <= 0 or existing < kind.max_balloons
    items = [
        Item(1, "below maxBalloons", below_max if kind.max_balloons > 0 else None, "true"),
        Item(
            2,
            f"free CPUs ({free}) cover minCPUs ({kind.min_cpus})",
            free >= kind.min_cpus and free > 0,
            "true",
        ),
    ]
    outcome = ""
    created: Balloon | None = None
    if not free or free < kind.min_cpus:
        outcome = f"found none: {free} CPUs free, a new {kind.name} balloon needs {kind.min_cpus}"
    else:
        try:
            created = engine.plan_new(kind, plan, container)
        except NoBalloon as exc:
            outcome = f"found none: {exc}"
    if created is not None:
        reach = engine.max_avail(created, plan)
        holds = reach >= member.request
        items.append(Item(3, f"could reach the request ({reach}m)", holds, "true"))
        if holds:
            candidates.append(
                Candidate(created.name, Standing.CHOSEN, tuple(items), "created with minCPUs")
            )
            return Stage(
                name,
                f"{created.name}: created with {kind.min_cpus} CPUs (minCPUs)",
                tuple(candidates),
                created.name,
            )
        outcome = (
            f"found none: a new {kind.name} balloon could reach {reach}m, "
            f"{member.request}m requested"
        )
    label = f"new {kind.name} balloon"
    candidates.append(Candidate(label, Standing.NOT_VIABLE, tuple(items), outcome[12:]))
    return Stage(name, outcome, tuple(candidates))


# ---------------------------------------------------------------------------- sizing
def _sizing(
    engine: Engine, balloon: Balloon, member: Member, plan: Plan, container: Container
) -> Stage:
    target = max(1, member.request + balloon.requested)
    have = plan.size(balloon)
    if have * 1000 >= target:
        return Stage(
            "sizing",
            f"{balloon.name} keeps {have} CPUs: {target}m with the container fits",
        )
    want = balloon.kind.limit(-(-target // 1000))
    try:
        engine.plan_resize(plan, balloon, target, container)
    except ResizeError as exc:
        return Stage("sizing", f"refused: {balloon.name} cannot inflate to {target}m: {exc}")
    cpus = _cpus_text(plan.of(balloon))
    return Stage(
        "sizing",
        f"{balloon.name} inflates from {have} to {want} CPUs for {target}m (CPUs {cpus})",
    )


# ---------------------------------------------------------------------------- texts
def _request_text(request: Request) -> str:
    parts = [f"{request.cpu}m CPU requested"]
    if request.balloon is not None:
        parts.append(f"balloon annotation {request.balloon!r}")
    if request.memory_limit:
        parts.append(f"memory limit {request.memory_limit} bytes")
    return ", ".join(parts)


def _balloon_text(balloon: Balloon) -> str:
    return f"balloon {balloon.name}, cpus {_cpus_text(balloon.cpus) or '-'}"


def _cpus_text(bits: int) -> str:
    return str(CPUSet(bits)) if bits else ""
