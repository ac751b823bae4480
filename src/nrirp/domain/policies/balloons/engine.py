"""The balloons engine: balloons, free CPUs, sizing, creation and deletion.

Every change is planned first (:class:`Plan`: the new CPUs of the balloons it touches, the free
CPUs after it, a balloon it creates) and committed only when all of it can be done, so a
refused request changes nothing. Sizing follows ``reference-balloons.md`` §4 and §5.5, with
the differences docs/balloons.md lists (``maxCPUs`` caps what a balloon can reach; a composite
splits its size rounding up; a balloon whose request cannot be met is not kept).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import attrs

from nrirp.domain.config.enums import ComponentCreation
from nrirp.domain.model import Container
from nrirp.domain.policies.balloons.balloon import Balloon, Member
from nrirp.domain.policies.balloons.catalog import LOADED, BalloonKind, Catalog
from nrirp.domain.policies.balloons.cputree import Level
from nrirp.domain.policies.balloons.devices import Devices
from nrirp.domain.policies.balloons.resize import ResizeError, Resizer, Steering


class NoBalloon(Exception):
    """No balloon can take the container (the message says why)."""


@attrs.define
class Plan:
    """Changes in the making: new CPUs per balloon, the free CPUs after them, a new balloon."""

    free: int
    cpus: dict[Balloon, int] = attrs.field(factory=dict)
    created: Balloon | None = None

    def of(self, balloon: Balloon) -> int:
        """The balloon's CPUs as planned (its components' for a composite)."""
        if balloon.components:
            out = 0
            for component in balloon.components:
                out |= self.of(component)
            return out
        return self.cpus.get(balloon, balloon.cpus)

    def size(self, balloon: Balloon) -> int:
        return self.of(balloon).bit_count()

    def copy(self) -> Plan:
        return Plan(self.free, dict(self.cpus), self.created)


class Engine:
    """All balloons of one configuration on one machine."""

    def __init__(self, catalog: Catalog, resizer: Resizer, devices: Devices) -> None:
        self.catalog = catalog
        self.resizer = resizer
        self.devices = devices
        self.balloons: list[Balloon] = []
        """Top-level balloons in list order (the tie-break everywhere)."""
        self.free = catalog.allowed
        self.initially_free = catalog.allowed
        """The free CPUs right after the ``minBalloons`` were created."""
        self.owner: dict[str, Balloon] = {}
        """Container id -> the top-level balloon it is in."""
        self.dirty: dict[Balloon, str] = {}
        """Top-level balloons whose CPUs (own or shared) changed, with why."""
        self.version = 0
        """Counts changes of balloons and CPUs (what the saved state depends on)."""
        self._steering: dict[BalloonKind, tuple[Steering, bool]] = {}

    def reset_steering(self) -> None:
        """Forget the steering worked out per type (after the types were replaced)."""
        self._steering.clear()

    # ------------------------------------------------------------------ queries
    def of_kind(self, kind: BalloonKind) -> list[Balloon]:
        return [b for b in self.balloons if b.kind is kind]

    def all_balloons(self) -> Iterator[Balloon]:
        """Every balloon, components included."""
        for balloon in self.balloons:
            yield from balloon.walk()

    def max_avail(self, balloon: Balloon, plan: Plan) -> int:
        """mCPU the balloon could reach with the free CPUs of ``plan``.

        Own CPUs plus the free ones, capped by ``maxCPUs``. A composite grows its components
        equally: the largest equal component size the free CPUs and the components' limits
        allow, times the number of components."""
        free = plan.free.bit_count()
        if not balloon.components:
            cpus = plan.size(balloon) + free
            if balloon.kind.max_cpus > 0:
                cpus = min(cpus, max(balloon.kind.max_cpus, plan.size(balloon)))
            return cpus * 1000
        sizes = [plan.size(c) for c in balloon.components]
        caps = [
            c.kind.max_cpus if c.kind.max_cpus > 0 and not c.components else math.inf
            for c in balloon.components
        ]
        each = _level_with(sizes, free)
        each = min([each, *caps])
        total = int(each) * 1000 * len(sizes)
        if balloon.kind.max_cpus > 0:
            total = min(total, balloon.kind.max_cpus * 1000)
        return total

    def free_mcpu(self, balloon: Balloon, plan: Plan) -> int:
        """``free(b)``: mCPU of its CPUs not requested by its containers."""
        return plan.size(balloon) * 1000 - balloon.requested

    def max_free(self, balloon: Balloon, plan: Plan) -> int:
        """``maxFree(b)``: what a container could still get if the balloon inflated."""
        return self.max_avail(balloon, plan) - balloon.requested

    # ------------------------------------------------------------------ planning
    def steering(self, balloon: Balloon, plan: Plan, container: Container | None) -> Steering:
        """How the balloon's type steers its CPU picks, with the load devices as planned."""
        kind = balloon.kind
        cached = self._steering.get(kind)
        if cached is None or (cached[1] and container is not None):
            close = tuple(s for d in kind.close if (s := self.devices.sets(d, container)))
            far = tuple(() if d.startswith(LOADED) else self.devices.sets(d) for d in kind.far)
            overloads = tuple(
                (c.level, kind.far.index(LOADED + str(c.level)))
                for c in kind.loads
                if c.overloads_level_in_balloon
            )
            steer = Steering(
                close=close,
                far=far,
                balancing=kind.balancing,
                spread=kind.spread,
                priority=kind.priority,
                overloads=tuple(dict.fromkeys(overloads)),
            )
            per_container = any(d.startswith("podresourceapi:") for d in kind.close)
            if not per_container or container is None:
                self._steering[kind] = (steer, per_container)
            cached = (steer, per_container)
        steer = cached[0]
        if not kind.loads:
            return steer
        sets: list[tuple[int, ...]] = list(steer.far)
        for index, device in enumerate(kind.far):
            if device.startswith(LOADED):
                sets[index] = (self._loaded(device, plan),)
        return attrs.evolve(steer, far=tuple(sets))

    def _loaded(self, device: str, plan: Plan) -> int:
        """The CPUs a load level carries: those of every balloon loading it, widened."""
        level = device[len(LOADED) :]
        bits = 0
        balloons = list(self.all_balloons())
        if plan.created is not None:
            balloons += list(plan.created.walk())
        for balloon in balloons:
            for load in balloon.kind.loads:
                if str(load.level) == level and not balloon.components:
                    bits |= self.resizer.widen(load.level, plan.of(balloon))
                    break
        return bits

    def plan_resize(
        self, plan: Plan, balloon: Balloon, mcpu: int, container: Container | None = None
    ) -> None:
        """Plan the balloon at ``mcpu``: ⌈mcpu/1000⌉ CPUs within its type's limits (a
        composite, bounded by its own minCPUs and maxCPUs, gives each of its n components
        ⌈mcpu/n⌉). Raises :class:`ResizeError`."""
        if balloon.components:
            kind = balloon.kind
            if kind.max_cpus > 0:
                mcpu = min(mcpu, kind.max_cpus * 1000)
            mcpu = max(mcpu, kind.min_cpus * 1000)
            share = -(-mcpu // len(balloon.components))
            for component in balloon.components:
                self.plan_resize(plan, component, share, container)
            return
        want = balloon.kind.limit(-(-mcpu // 1000))
        current = plan.of(balloon)
        have = current.bit_count()
        if want == have:
            return
        steer = self.steering(balloon, plan, container)
        if want > have:
            added = self.resizer.grow(current, plan.free, want - have, steer)
            plan.cpus[balloon] = current | added
            plan.free &= ~added
        else:
            released = self.resizer.shrink(current, plan.free, have - want, steer)
            plan.cpus[balloon] = current & ~released
            plan.free |= released

    def plan_new(
        self, kind: BalloonKind, plan: Plan, container: Container | None = None
    ) -> Balloon:
        """Plan a new top-level balloon of ``kind`` with ``minCPUs``; raises :class:`NoBalloon`
        when ``maxBalloons`` are there or its CPUs cannot be found."""
        existing = self.of_kind(kind)
        if plan.created is not None and plan.created.kind is kind:
            existing.append(plan.created)
        if kind.max_balloons > 0 and len(existing) >= kind.max_balloons:
            raise NoBalloon(f"{kind.name} has its maxBalloons ({kind.max_balloons})")
        balloon = Balloon(kind, _smallest_free(b.index for b in existing))
        self._add_components(balloon)
        try:
            self.plan_resize(plan, balloon, kind.min_cpus * 1000, container)
        except ResizeError as exc:
            raise NoBalloon(f"cannot create a balloon of type {kind.name}: {exc}") from None
        plan.created = balloon
        return balloon

    def _add_components(self, balloon: Balloon) -> None:
        kind = balloon.kind
        if not kind.components:
            return
        by_name = self.catalog.by_name
        if kind.creation is ComponentCreation.BALANCE_BALLOONS:
            counts = self._type_counts()
            chosen = [
                min(
                    kind.components,
                    key=lambda n: sum(counts.get(t, 0) for t in self.catalog.reachable(n)),
                )
            ]
        else:
            chosen = list(kind.components)
        for name in chosen:
            component_kind = by_name[name]
            index = _smallest_free(b.index for b in self.of_kind(component_kind))
            component = Balloon(component_kind, index, parent=balloon)
            balloon.components.append(component)
            self._add_components(component)

    def _type_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for balloon in self.all_balloons():
            counts[balloon.kind.name] = counts.get(balloon.kind.name, 0) + 1
        return counts

    # ------------------------------------------------------------------ changes
    def commit(self, plan: Plan, why: str) -> None:
        """Apply a plan: new CPUs, free CPUs, the created balloon (appended)."""
        if plan.created is not None:
            self.balloons.append(plan.created)
            self.dirty[plan.created] = why
        touched: dict[Balloon, None] = {}
        for balloon, bits in plan.cpus.items():
            if balloon.cpus != bits:
                balloon.cpus = bits
                touched[balloon.top] = None
        for top in touched:
            if top.components:
                top.cpus = plan.of(top)
                for component in top.walk():
                    if component.components:
                        component.cpus = plan.of(component)
            self.dirty.setdefault(top, why)
        if plan.free != self.free or plan.created is not None or touched:
            self.version += 1
        self.free = plan.free

    def precreate(self) -> None:
        """Create every type's ``minBalloons`` (by priority, then list order); raises
        :class:`NoBalloon` when one cannot get its ``minCPUs``."""
        for kind in self.catalog.creation_order():
            for _ in range(kind.min_balloons):
                plan = Plan(self.free)
                try:
                    self.plan_new(kind, plan)
                except NoBalloon as exc:
                    raise NoBalloon(
                        f"balloon type {kind.name!r}: cannot create its minBalloons"
                        f" ({kind.min_balloons}) with minCPUs ({kind.min_cpus}) each: {exc}"
                    ) from None
                self.commit(plan, "created (minBalloons)")
        self.initially_free = self.free

    def add(self, balloon: Balloon, member: Member) -> None:
        balloon.add(member)
        self.owner[member.container_id] = balloon

    def remove(self, container_id: str) -> tuple[Balloon, Member] | None:
        """Take the container out of its balloon and resize or delete the balloon."""
        balloon = self.owner.pop(container_id, None)
        if balloon is None:
            return None
        member = balloon.remove(container_id)
        assert member is not None
        plan = Plan(self.free)
        try:
            target = max(1, balloon.requested) if balloon.members else 0
            self.plan_resize(plan, balloon, target)
        except ResizeError:  # shrinking back cannot fail; keep the size if it does
            plan = Plan(self.free)
        self.commit(plan, f"{member.label} left")
        kind = balloon.kind
        if not balloon.members and len(self.of_kind(kind)) > kind.min_balloons:
            self.delete(balloon)
        return balloon, member

    def delete(self, balloon: Balloon) -> None:
        self.balloons.remove(balloon)
        for part in balloon.walk():
            self.free |= part.cpus if not part.components else 0
        self.dirty.pop(balloon, None)
        self.version += 1

    def refresh_sharing(self) -> None:
        """Recompute the idle CPUs offered to balloons of types with ``shareIdleCPUsInSame``:
        the free CPUs (not kernel-isolated) of every node of that level their CPUs touch."""
        offered = self.free & ~self.catalog.isolated
        for balloon in self.balloons:
            level = balloon.kind.share_level
            shared = 0
            if level is not None and level is not Level.THREAD and balloon.cpus:
                shared = self.resizer.tree.reach(level, balloon.cpus) & offered
            if shared != balloon.shared:
                balloon.shared = shared
                self.dirty.setdefault(balloon, "shared idle CPUs changed")


def _smallest_free(used: Iterator[int] | list[int]) -> int:
    taken = set(used)
    index = 0
    while index in taken:
        index += 1
    return index


def _level_with(sizes: list[int], free: int) -> float:
    """The largest equal size ``t`` all ``sizes`` can be brought to with ``free`` more
    (water filling; sizes above ``t`` count as they are)."""
    ordered = sorted(sizes)
    total = free
    level = float(ordered[0])
    for i, size in enumerate(ordered):
        below = i  # how many sizes are at the current level
        if below and (size - level) * below > total:
            return level + total // below
        if below:
            total -= int((size - level) * below)
        level = float(size)
    return level + total // len(ordered)
