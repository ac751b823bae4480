"""What a policy is handed: the cache, the machine, time, event injection, decision recording."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType

from nrirp.domain.cache import Cache
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import AnnotationProblem, AnnotationReader, Container, Device, Mount
from nrirp.domain.policy.events import PolicyEvent
from nrirp.domain.ports.clock import Clock
from nrirp.domain.ports.decisions import Severity
from nrirp.domain.ports.documents import AnnotationParser, UnwiredAnnotationParser
from nrirp.domain.ports.timers import TimerHandle, Timers
from nrirp.domain.ports.topology_hints import TopologyHintSource
from nrirp.domain.topology import Machine
from nrirp.domain.topology.hints import TopologyHint, select_hints

_NO_HINTS: Mapping[str, TopologyHint] = MappingProxyType({})

DecideFn = Callable[[Container, str, bool], None]
NoticeFn = Callable[[str, Severity, "str | None"], None]

_HINT_CACHE_PRUNE_AT = 1024
"""Cached hint lookups beyond which those of containers gone from the cache are dropped (the
limit then doubles past what stays, so pruning costs O(1) per lookup, amortized)."""


class NoTimersError(RuntimeError):
    """:meth:`PolicyContext.schedule_event` was called but no timer facility is wired
    (a composition error, not a policy decision)."""


class PolicyContext:
    """The policy's view of the resource manager.

    Only use it from inside policy calls (they run serialized); from other threads (timers),
    call :meth:`inject_event` and act in ``handle_event``. ``hints`` finds topology hints for
    containers' devices and mounts (none without it); ``timers`` backs :meth:`schedule_event`;
    ``annotation_parser`` reads YAML annotation values (without one, every such value is
    reported as unusable).
    """

    def __init__(
        self,
        *,
        cache: Cache,
        machine: Machine,
        clock: Clock,
        inject: Callable[[PolicyEvent], None],
        decide: DecideFn,
        notify: NoticeFn,
        hints: TopologyHintSource | None = None,
        timers: Timers | None = None,
        annotation_parser: AnnotationParser | None = None,
        class_support: Callable[[str], CPUSet | None] | None = None,
    ) -> None:
        self._cache = cache
        self._machine = machine
        self._clock = clock
        self._inject = inject
        self._decide = decide
        self._notify = notify
        self._readers: list[AnnotationReader] = []
        self._hints = hints
        self._timers = timers
        self._annotation_parser = annotation_parser or UnwiredAnnotationParser()
        self._hint_cache: dict[
            str, tuple[tuple[Mount, ...], tuple[Device, ...], Mapping[str, TopologyHint]]
        ] = {}
        self._hint_cache_limit = _HINT_CACHE_PRUNE_AT
        self._class_support = class_support

    def cpu_class_support(self, name: str) -> CPUSet | None:
        """The CPUs on which every setting of CPU class ``name`` takes effect on this host;
        ``None`` when that is not known (no CPU power control: every CPU is as good)."""
        return None if self._class_support is None else self._class_support(name)

    @property
    def cache(self) -> Cache:
        return self._cache

    @property
    def machine(self) -> Machine:
        return self._machine

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def annotation_parser(self) -> AnnotationParser:
        """Reads YAML-valued annotations (affinities, hint lists) within the input budget."""
        return self._annotation_parser

    @property
    def memory_capacity(self) -> int:
        """The node's memory in bytes (all NUMA nodes)."""
        return sum(n.memory_bytes for n in self._machine.nodes.values())

    def inject_event(self, event: PolicyEvent) -> None:
        """Have ``handle_event(event)`` called under the pipeline's serialization.

        From inside a policy call the event is queued and handled right after the current
        operation; from another thread it waits for the pipeline and is handled at once.
        """
        self._inject(event)

    def schedule_event(self, delay_seconds: float, event: PolicyEvent) -> TimerHandle:
        """Inject ``event`` (as :meth:`inject_event` does) ``delay_seconds`` from now.

        ``handle_event(event)`` then runs under the pipeline's serialization; cancel the
        returned handle to call it off. A failure to deliver the event is reported as a notice.
        Raises :class:`NoTimersError` when the resource manager has no timers (the app's
        compositions always wire them) and ``ValueError`` for a negative or non-finite delay.
        """
        if self._timers is None:
            raise NoTimersError(
                f"cannot schedule event {event.kind!r}: the resource manager has no timers "
                "(pass timers= to ResourceManager)"
            )
        if not math.isfinite(delay_seconds) or delay_seconds < 0:
            raise ValueError(f"invalid timer delay {delay_seconds!r}: expected seconds >= 0")

        def fire() -> None:
            try:
                self._inject(event)
            except Exception as exc:  # a timer thread has no caller to raise to
                self._notify(
                    f"scheduled event {event.kind!r} was not delivered: {exc}",
                    Severity.ERROR,
                    None,
                )

        return self._timers.call_later(delay_seconds, fire)

    def topology_hints(
        self, container: Container, *, report: bool = True
    ) -> Mapping[str, TopologyHint]:
        """The topology hints of the container's devices and mounts that its annotations
        select (``topologyhints``, ``allow.``/``deny.topologyhints``), keyed by provider.

        Empty without a hint source. Lookups are cached per container (mounts and devices
        do not change after creation); unusable annotations are reported like others
        (``report=False``: not, for a look that decides nothing, such as an explanation).
        """
        if self._hints is None:
            return {}
        found = self._raw_hints(container)
        if not found:
            return {}
        reader = self.annotations(container) if report else self._cache.annotations(container)
        return select_hints(found, reader, self._annotation_parser)

    def _raw_hints(self, container: Container) -> Mapping[str, TopologyHint]:
        assert self._hints is not None
        cached = self._hint_cache.get(container.id)
        if cached is not None and cached[0] == container.mounts and cached[1] == container.devices:
            return cached[2]
        try:
            found = dict(self._hints.hints(container)) or _NO_HINTS  # one empty for all
        except Exception as exc:  # the port must not raise; one container's hints are optional
            self._notify(f"topology hints unavailable: {exc}", Severity.WARNING, container.id)
            return {}
        if len(self._hint_cache) >= self._hint_cache_limit:
            for gone in [cid for cid in self._hint_cache if self._cache.container(cid) is None]:
                del self._hint_cache[gone]
            self._hint_cache_limit = max(_HINT_CACHE_PRUNE_AT, 2 * len(self._hint_cache))
        self._hint_cache[container.id] = (container.mounts, container.devices, found)
        return found

    def record_decision(self, container: Container, reason: str, *, ok: bool = True) -> None:
        """Log the container's current cpus/mems (as in the cache) with ``reason``."""
        current = self._cache.container(container.id) or container
        self._decide(current, reason, ok)

    def notice(
        self,
        message: str,
        *,
        container: Container | None = None,
        severity: Severity = Severity.WARNING,
    ) -> None:
        self._notify(message, severity, container.id if container else None)

    def annotations(self, container: Container) -> AnnotationReader:
        """Typed effective annotations; unusable values are reported after the operation."""
        reader = self._cache.annotations(container)
        self._readers.append(reader)
        return reader

    def take_annotation_problems(self) -> list[tuple[str, AnnotationProblem]]:
        """(container name, problem) pairs collected since the last call (pipeline use)."""
        out = [(r.container_name, p) for r in self._readers for p in r.problems]
        self._readers.clear()
        return out
