"""Why a container is in its pool: the topology-aware policy's decision worked out again.

On demand, never while deciding: the engine is copied with the container's grant taken out
(its CPUs and memory back in the pools), and the container's request is planned in the copy
as a new one would be. The explanation lists the pools the planner drops before ranking and
why (memory too small, a cold start without PMEM, strict topology hints, reserved and
preserved containers in the root pool only), every other pool's scoring items in the order
of docs/topology-aware.md ("Pool choice", items 1-12) as :class:`PoolScorer` computed them,
the pool the planner chose and the item that put it ahead of the runner-up (the first item
whose values differ), then the memory zone the allocator gives it; or the refusal with what
was short, as the policy words it. Nothing of the policy's own state changes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import attrs

from nrirp.domain.affinity import (
    COLOCATION_WEIGHT,
    AffinityError,
    affinity_weights,
    container_affinities,
)
from nrirp.domain.config import ControlConfig, CPUPriority, TopologyAwarePolicySpec
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.memalloc import human_bytes
from nrirp.domain.model import Container, Pod
from nrirp.domain.policies.topology_aware.allocations import Allocations
from nrirp.domain.policies.topology_aware.classes import (
    Classes,
    check_cpu_class,
    choose_classes,
)
from nrirp.domain.policies.topology_aware.config_index import ConfigIndex
from nrirp.domain.policies.topology_aware.grants import Grant, types_text
from nrirp.domain.policies.topology_aware.hint_limits import hint_limits
from nrirp.domain.policies.topology_aware.memory_view import PMEM, accounted_size
from nrirp.domain.policies.topology_aware.planner import Plan
from nrirp.domain.policies.topology_aware.pools import Pool
from nrirp.domain.policies.topology_aware.preferences import (
    ROOTED_KINDS,
    CPUKind,
    PolicyAnnotations,
    Request,
    build_request,
    container_label,
)
from nrirp.domain.policies.topology_aware.score_cache import ScoreCache
from nrirp.domain.policies.topology_aware.scoring import (
    MemoryFit,
    PoolScorer,
    Score,
    score_key,
    want_priority,
    wants_normal_priority,
)
from nrirp.domain.policy import PolicyContext, PolicyError
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
from nrirp.domain.topology import MemoryType
from nrirp.domain.topology.hints import TopologyHint

POLICY = "topology-aware"
RULE = "first difference wins (items of docs/topology-aware.md, 'Pool choice')"


def explain_placement(
    *,
    alloc: Allocations,
    spec: TopologyAwarePolicySpec,
    control: ControlConfig,
    index: ConfigIndex,
    ctx: PolicyContext,
    subject: Subject,
    class_cpus: Callable[[Request, Classes], CPUSet | None] | None = None,
) -> Explanation:
    """The explanation of ``subject``'s pool (see the module's docstring); ``class_cpus``:
    where a request's CPU class takes effect when not on every CPU (the policy's, item 8)."""
    container, pod = subject.container, subject.pod
    grant = alloc.grants.get(container.id) if subject.placed else None
    placement = grant_text(grant) if grant is not None else ""
    stages: list[Stage] = []

    def refused(why: str, stage: str = "") -> Explanation:
        shortage = why
        return Explanation(
            policy=POLICY,
            **identity(pod, container),
            container_id=container.id,
            verdict=Verdict.REFUSED,
            summary=f"{shortage} ({stage})" if stage else shortage,
            stages=tuple(stages),
            placement=placement,
            shortage=shortage,
            notes=_placed_notes(grant, None),
        )

    reader = PolicyAnnotations(ctx.cache.annotations(container))  # nothing reported
    try:
        request = build_request(spec, index, pod, container, reader)
        hints = list(ctx.topology_hints(container, report=False).values())
        if request.strict_hints:
            request = _with_limits(request, hints, ctx)
        classes = choose_classes(
            spec,
            control,
            namespace=request.namespace,
            qos=request.qos,
            reader=reader,
            index=index,
        )
    except PolicyError as exc:
        return refused(str(exc), "its request")
    if request.cpu.kind is CPUKind.PRESERVE:
        return _preserved(request, pod, container, placement)
    work = detached_copy(alloc, container.id)
    notes: list[str] = []
    weighted = _affinity(work, spec, ctx, pod, container, notes)
    short = None
    if request.cpu.kind is CPUKind.RESERVED:
        short = work.planner.reserved_short(request.cpu.shared)
        if short is not None:
            notes.append(f"reserved container on the shared CPUs: {short}")
    stages.append(Stage("request", _request_text(request, work, short is not None)))
    chosen: Plan | None = None
    failure = ""
    cpus_of_class = class_cpus(request, classes) if class_cpus is not None else None
    try:
        chosen = work.plan(request, hints=hints, weighted=weighted, class_cpus=cpus_of_class)
        check_cpu_class(classes, chosen.kind)
    except PolicyError as exc:
        failure = str(exc)
    stages.append(_pool_stage(work, request, hints, weighted, cpus_of_class, chosen, failure))
    if chosen is None or failure:
        explanation = refused(failure or "no pool can take it")
        return _with_notes(explanation, notes)
    try:
        placed = work.commit(chosen)
    except PolicyError as exc:
        stages.append(Stage("memory", f"refused: {exc}"))
        return _with_notes(refused(str(exc), "memory"), notes)
    pool_stage = stages[-1]
    stages.append(Stage("memory", _memory_text(chosen, placed)))
    notes.extend(_placed_notes(grant, placed))
    return Explanation(
        policy=POLICY,
        **identity(pod, container),
        container_id=container.id,
        verdict=Verdict.PLACED,
        summary=_summary(pool_stage, placed),
        stages=tuple(stages),
        placement=placement,
        notes=tuple(notes),
    )


def detached_copy(alloc: Allocations, container_id: str) -> Allocations:
    """A copy of the engine without the container's grant (its CPUs and memory back in the
    pools, other containers' memory moved back as a release does). The machine, the
    configuration and the pool tree are shared (nothing changes them); the score cache and the
    planner's setups start empty."""
    memo: dict[int, object] = {
        id(alloc.machine): alloc.machine,
        id(alloc.spec): alloc.spec,
        id(alloc.resources): alloc.resources,
        id(alloc.tree): alloc.tree,
        id(alloc.planner.score_cache): None,
        id(alloc.planner.setups): {},
    }
    for pool in alloc.tree.pools:
        memo[id(pool)] = pool
    work = copy.deepcopy(alloc, memo)
    work.planner.score_cache = ScoreCache(work.supply, work.memory_view)
    work.release(container_id)
    return work


def _with_limits(request: Request, hints: Sequence[TopologyHint], ctx: PolicyContext) -> Request:
    return attrs.evolve(request, hint_limits=hint_limits(list(hints), ctx.machine))


def _affinity(
    work: Allocations,
    spec: TopologyAwarePolicySpec,
    ctx: PolicyContext,
    pod: Pod | None,
    container: Container,
    notes: list[str],
) -> list[tuple[Pool, int]]:
    """The policy's affinity weights (as ``TopologyAwarePolicy._affinity``), from the copy."""
    weighted: list[tuple[Pool, int]] = []
    if spec.colocate_pods:
        weighted += work.colocated_pools(("pod", container.pod_id), COLOCATION_WEIGHT)
    if pod is None:
        return weighted
    if spec.colocate_namespaces:
        weighted += work.colocated_pools(("namespace", pod.namespace), COLOCATION_WEIGHT)
    try:
        affinities = container_affinities(pod, container, ctx.annotation_parser)
    except AffinityError as exc:
        notes.append(f"affinity ignored: {exc}")
        return weighted
    if affinities:
        weights = affinity_weights(ctx.cache, container, affinities)
        grants = work.grants
        weighted += [(grants[cid].pool, w) for cid, w in weights.items() if cid in grants]
    return weighted


# ---------------------------------------------------------------------------- pool choice
def _pool_stage(
    work: Allocations,
    request: Request,
    hints: Sequence[TopologyHint],
    weighted: Sequence[tuple[Pool, int]],
    class_cpus: CPUSet | None,
    chosen: Plan | None,
    failure: str,
) -> Stage:
    """Every pool: dropped before the ranking (and why), or scored item by item."""
    planner, memory = work.planner, work.memory_view
    cpu = request.cpu
    if cpu.kind is CPUKind.RESERVED and planner.reserved_short(cpu.shared) is not None:
        request = attrs.evolve(request, cpu=attrs.evolve(cpu, kind=CPUKind.SHARED))
        cpu = request.cpu
    types = memory.types_of(request)
    size = accounted_size(request)
    dropped: dict[int, str] = {}
    pools: list[Pool] = list(work.tree.pools)
    if not memory.typed_nodes(types) & work.tree.top.mems:
        return Stage("pool", f"refused: no {types_text(types)} memory on this node", rule=RULE)
    if size:
        for pool in pools:
            capacity = memory.pool_capacity(pool, types)
            if capacity < size:
                dropped[pool.id] = (
                    f"its {types_text(types)} memory ({human_bytes(capacity)}) is smaller than "
                    f"the request ({human_bytes(size)})"
                )
    kept = [p for p in pools if p.id not in dropped]
    if request.memory.cold_start > 0 and MemoryType.PMEM in types:
        pmem = memory.typed_nodes(PMEM)
        offering = [p for p in kept if memory.pool_nodes(p, types) & pmem]
        if offering:
            for pool in kept:
                if pool not in offering:
                    dropped[pool.id] = "offers no PMEM for the cold start"
            kept = offering
    rooted = cpu.kind in ROOTED_KINDS
    if rooted:
        for pool in kept:
            if pool is not work.tree.top:
                dropped[pool.id] = f"{cpu.kind.value} containers live in the root pool"
        kept = [work.tree.top] if work.tree.top in kept else []
        hints, weighted = (), ()
    limits = None if rooted else request.hint_limits
    if limits is not None:
        for pool in kept:
            if not planner._within(pool, request, limits, types):
                dropped[pool.id] = "cannot grant inside every topology hint (strict)"
        kept = [p for p in kept if p.id not in dropped]
    scorer = _scorer(work, request, hints, weighted, class_cpus, types, size)
    scores = sorted((scorer.score(pool) for pool in kept), key=score_key)
    winner = chosen.pool if chosen is not None and not failure else None
    candidates = _candidates(work, request, scorer, scores, winner)
    candidates += [
        Candidate(pool.name, Standing.DROPPED, note=dropped[pool.id])
        for pool in pools
        if pool.id in dropped
    ]
    deciding = _deciding(scorer, scores, winner, request.memory.limit)
    if winner is None:
        outcome = f"refused: {failure}" if failure else "none"
    elif len(scores) == 1:
        outcome = f"{winner.name}: the only pool that can be scored"
    elif deciding is None:
        outcome = f"{winner.name}: equal to the runner-up on every item"
    else:
        outcome = (
            f"{winner.name}: item {deciding.item.number} ({deciding.item.name}) "
            f"{value_text(deciding.item.value)} against {value_text(deciding.runner_up_value)}"
            f" for {deciding.runner_up}"
        )
        if scores[0].pool is not winner:
            outcome += "; pools ranked above it could not be carved"
    return Stage(
        "pool",
        outcome,
        tuple(candidates),
        winner.name if winner is not None else None,
        deciding,
        RULE,
    )


def _scorer(
    work: Allocations,
    request: Request,
    hints: Sequence[TopologyHint],
    weighted: Sequence[tuple[Pool, int]],
    class_cpus: CPUSet | None,
    types: frozenset[MemoryType],
    size: int,
) -> PoolScorer:
    """The scorer the planner makes for ``request`` (``Planner.plan``)."""
    planner = work.planner
    wanted = want_priority(request.cpu)
    fits: dict[int, tuple[bool, int, bool]] = {}

    def memory_fit(pool: Pool) -> MemoryFit:
        return work.memory_view.fit(request, pool, types, size, fits)

    return PoolScorer(
        request.cpu,
        work.supply,
        weighted=weighted,
        hints=hints,
        memory=memory_fit,
        priority_cpus=planner.priorities.get(wanted) if wanted is not None else None,
        normal_cpus=(
            planner.priorities.get(CPUPriority.NORMAL, CPUSet())
            if wants_normal_priority(request.cpu)
            else None
        ),
        class_cpus=class_cpus,
    )


def _candidates(
    work: Allocations,
    request: Request,
    scorer: PoolScorer,
    scores: Sequence[Score],
    winner: Pool | None,
) -> list[Candidate]:
    out: list[Candidate] = []
    above = winner is not None
    for score in scores:
        pool = score.pool
        items = score_items(scorer, score, request.memory.limit)
        if pool is winner:
            above = False
            out.append(Candidate(pool.name, Standing.CHOSEN, items, _offer(work, score)))
        elif not score.viable:
            out.append(
                Candidate(pool.name, Standing.NOT_VIABLE, items, _short(work, request, score))
            )
        elif above:
            note = "ranked above the winner, but its CPUs could not be carved"
            out.append(Candidate(pool.name, Standing.PASSED_OVER, items, note))
        else:
            out.append(Candidate(pool.name, Standing.RANKED, items, _offer(work, score)))
    return out


def _deciding(
    scorer: PoolScorer, scores: Sequence[Score], winner: Pool | None, limit: int | None
) -> Deciding | None:
    """The first item on which the winner beats the next pool in the ranking (pools ranked
    above it that could not be carved aside)."""
    if winner is None:
        return None
    position = next(i for i, s in enumerate(scores) if s.pool is winner)
    if position + 1 >= len(scores):
        return None
    mine, theirs = scores[position], scores[position + 1]
    for index, (a, b) in enumerate(zip(mine.key, theirs.key, strict=False)):
        if a != b:
            return Deciding(
                score_items(scorer, mine, limit)[index],
                theirs.pool.name,
                score_items(scorer, theirs, limit)[index].value,
            )
    return None


def score_items(scorer: PoolScorer, score: Score, memory_limit: int | None) -> tuple[Item, ...]:
    """The score's key as the scoring items of docs/topology-aware.md, one item per key
    element, in the key's order (what :class:`PoolScorer` compares); ``memory_limit``: the
    request's (item 4 differs for Burstable containers with and without one)."""
    key = score.key
    cpu = scorer.cpu
    if scorer.rooted:
        capacity = [Item(1, "root pool (reserved or preserved)", True, "true")]
    else:
        capacity = [
            Item(1, "enough free isolated CPUs", _flag(key[0], cpu.isolate), "true"),
            Item(1, "enough shared capacity", not key[1], "true"),
            Item(1, "CPUs that can be shared", not key[2] if scorer.on_shared else None, "true"),
        ]
    n = len(capacity)
    rest = key[n:]
    if scorer.hints and len(rest) == 5:
        return (
            *capacity,
            Item(2, "affinity", _number(-rest[0]), "higher"),
            Item(3, "product of hint scores", _number(-rest[1]), "higher"),
            Item(3, "product of non-zero hint scores", _number(-rest[2]), "higher"),
            Item(3, "depth", int(-rest[3]), "higher"),
            Item(3, "pool id", int(rest[4]), "lower"),
        )
    class_item: tuple[Item, ...] = ()
    if scorer.class_bits is not None and len(rest) == 15:  # item 8 is in the key
        class_item = (Item(8, "enough CPUs where the CPU class applies", not rest[8], "true"),)
        rest = (*rest[:8], *rest[9:])
    if scorer.hints or len(rest) != 14:
        # a key of another shape than this module knows: show it as it is
        return tuple(Item(0, f"key[{i}]", _number(v), "lower") for i, v in enumerate(key))
    viable = score.viable
    memory_items = (
        Item(4, "memory of the requested types", not rest[1] if viable else None, "true"),
        Item(4, "memory fits without widening", not rest[2] if viable else None, "true"),
        _limit_item(scorer.cpu.burstable, memory_limit, rest[3] if viable else None),
    )
    return (
        *capacity,
        Item(2, "affinity", _number(-rest[0]), "higher"),
        *memory_items,
        Item(5, "shared capacity covers the CPU limit", _when(rest[4], scorer.burst_limit), "true"),
        Item(5, "at the unlimitedBurstable level", _when(rest[5], cpu.unlimited_level), "true"),
        Item(5, "pool id off the level", int(rest[6]) if rest[5] else None, "lower"),
        Item(6, "memory nodes offered", int(rest[7]) if viable else None, "lower"),
        *class_item,
        Item(9, "enough CPUs of the priority", _when(rest[8], scorer.priority_bits), "true"),
        Item(10, "depth", int(-rest[9]), "higher"),
        *_kind_items(scorer, score, rest[10:13]),
        Item(12, "pool id", int(rest[13]), "lower"),
    )


def _kind_items(scorer: PoolScorer, score: Score, part: Sequence[float]) -> tuple[Item, ...]:
    normal = scorer.normal_bits is not None
    if scorer.rooted:
        return tuple(Item(11, "by kind (none for the root pool)", None, "") for _ in part)
    if score.use_isolated:
        return (
            Item(11, "free isolated CPUs", int(-part[0]), "higher"),
            Item(11, "enough normal-priority CPUs", not part[1] if normal else None, "true"),
            Item(11, "(none)", None, ""),
        )
    if scorer.full:
        return (
            Item(11, "enough normal-priority CPUs", not part[0] if normal else None, "true"),
            Item(11, "sliceable shared capacity (mCPU)", int(-part[1]), "higher"),
            Item(11, "(none)", None, ""),
        )
    return (
        Item(11, "enough normal-priority CPUs", not part[0] if normal else None, "true"),
        Item(11, "colocated grants", int(part[1]), "lower"),
        Item(11, "shared capacity left (mCPU)", int(-part[2]), "higher"),
    )


def _limit_item(burstable: bool, limit: int | None, value: float | None) -> Item:
    """Item 4's Burstable part (``scoring.limit_key``)."""
    if not burstable:
        return Item(4, "memory covers the Burstable memory limit", None, "true")
    if limit is None:
        capacity = None if value is None else int(-value)
        return Item(4, "pool memory, bytes (Burstable without memory limit)", capacity, "higher")
    return Item(4, "memory covers the Burstable memory limit", _when(value, limit), "true")


def _flag(value: float, asked: object) -> bool | None:
    return (not value) if asked else None


def _when(value: float | None, asked: object) -> bool | None:
    """The item's verdict (a key element of 0 wins) when the request asks for it."""
    return (not value) if value is not None and asked is not None else None


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else round(value, 4)


def _offer(work: Allocations, score: Score) -> str:
    supply, pool = work.supply, score.pool
    if score.use_isolated:
        return f"{len(supply.isolated[pool.id])} free isolated CPUs"
    allocatable = max(supply.allocatable_shared(pool), 0)
    return f"{len(supply.sharable[pool.id])} sharable CPUs, {allocatable}m allocatable"


def _short(work: Allocations, request: Request, score: Score) -> str:
    cpu, supply, pool = request.cpu, work.supply, score.pool
    if cpu.require_isolated and not score.use_isolated:
        return (
            f"{len(supply.isolated[pool.id])} free isolated CPUs, {cpu.full} required "
            "(require-isolated-cpus)"
        )
    need = cpu.shared + (0 if score.use_isolated else 1000 * cpu.full)
    allocatable = max(supply.allocatable_shared(pool), 0)
    return f"{allocatable}m allocatable along its path, {need}m needed"


# ---------------------------------------------------------------------------- texts
def _request_text(request: Request, work: Allocations, fell_back: bool) -> str:
    cpu = request.cpu
    kind = cpu.kind.value
    if fell_back:
        kind = "shared (reserved CPUs full)"
    parts = [request.qos.value, kind]
    if cpu.full:
        parts.append(f"{cpu.full} exclusive CPU{'s' if cpu.full != 1 else ''}")
        if cpu.isolate or cpu.require_isolated:
            parts.append("isolated required" if cpu.require_isolated else "isolated preferred")
    if cpu.shared:
        parts.append(f"{cpu.shared}m {'reserved' if cpu.kind is CPUKind.RESERVED else 'shared'}")
    if cpu.priority is not CPUPriority.NONE:
        parts.append(f"priority {cpu.priority.value}")
    size = accounted_size(request)
    types = work.memory_view.types_of(request)
    memory = f"{human_bytes(size)} of {types_text(types)} memory" if size else "no memory request"
    if request.memory.preserve:
        memory = "memory left alone (memory.preserve)"
    parts.append(memory)
    if request.hint_limits is not None:
        parts.append(f"strict topology hints: {request.hint_limits.text}")
    return ", ".join(parts)


def _memory_text(plan: Plan, grant: Grant) -> str:
    if plan.memory is None:
        return "memory left alone (memory.preserve)"
    if not plan.memory.size:
        return f"no memory accounted; pinned to nodes {grant.memory or plan.memory.nodes}"
    text = (
        f"{human_bytes(plan.memory.size)} of {types_text(plan.types)} memory asked in nodes "
        f"{plan.memory.nodes}"
    )
    if grant.memory is not None and grant.memory != plan.memory.nodes:
        text += f", zone widened to {grant.memory}"
    elif grant.memory is not None:
        text += ", fits there"
    return text


def grant_text(grant: Grant) -> str:
    """``exclusive cpus 4-5 in NUMA node #1, memory 1`` (as the decision log says it)."""
    what = grant.kind.value
    if grant.exclusive:
        what += f" cpus {grant.exclusive}"
        if grant.shared:
            what += f" + {grant.shared}m shared"
    elif grant.shared or grant.reserved:
        what += f" {grant.shared or grant.reserved}m"
    text = f"{what} in {grant.pool.name}"
    if grant.memory is not None:
        text += f", memory {grant.memory}"
    return text


def _summary(stage: Stage, grant: Grant) -> str:
    where = grant_text(grant)
    if stage.deciding is None:
        return f"{where}: {stage.outcome.split(': ', 1)[-1]}"
    item = stage.deciding.item
    return f"{where}: won on item {item.number} ({item.name}) over {stage.deciding.runner_up}"


def _placed_notes(now: Grant | None, anew: Grant | None) -> tuple[str, ...]:
    if now is None or anew is None:
        return ()
    if now.pool is anew.pool and now.kind is anew.kind:
        return ()
    return (
        f"it sits in {now.pool.name} ({now.kind.value}): placed when the node was otherwise "
        f"(or kept through a resize, restart or reconfiguration); arriving now it would go to "
        f"{anew.pool.name} ({anew.kind.value})",
    )


def _preserved(
    request: Request, pod: Pod | None, container: Container, placement: str
) -> Explanation:
    return Explanation(
        policy=POLICY,
        **identity(pod, container),
        container_id=container.id,
        verdict=Verdict.LEFT_ALONE,
        summary="cpu.preserve: its CPUs are left alone (accounted in the root pool)",
        stages=(Stage("request", f"{request.qos.value}, preserve"),),
        placement=placement,
    )


def _with_notes(explanation: Explanation, notes: Sequence[str]) -> Explanation:
    if not notes:
        return explanation
    return attrs.evolve(explanation, notes=(*notes, *explanation.notes))


__all__ = ["container_label", "detached_copy", "explain_placement", "grant_text", "score_items"]
