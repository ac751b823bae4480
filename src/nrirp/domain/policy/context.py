"""What a policy is handed: the cache, the machine, time, event injection, decision recording."""

from __future__ import annotations

from collections.abc import Callable

from nrirp.domain.cache import Cache
from nrirp.domain.model import AnnotationProblem, AnnotationReader, Container
from nrirp.domain.policy.events import PolicyEvent
from nrirp.domain.ports.clock import Clock
from nrirp.domain.ports.decisions import Severity
from nrirp.domain.topology import Machine

DecideFn = Callable[[Container, str, bool], None]
NoticeFn = Callable[[str, Severity, "str | None"], None]


class PolicyContext:
    """The policy's view of the resource manager.

    Only use it from inside policy calls (they run serialized); from other threads (timers),
    call :meth:`inject_event` and act in ``handle_event``.
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
    ) -> None:
        self._cache = cache
        self._machine = machine
        self._clock = clock
        self._inject = inject
        self._decide = decide
        self._notify = notify
        self._readers: list[AnnotationReader] = []

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
    def memory_capacity(self) -> int:
        """The node's memory in bytes (all NUMA nodes)."""
        return sum(n.memory_bytes for n in self._machine.nodes.values())

    def inject_event(self, event: PolicyEvent) -> None:
        """Have ``handle_event(event)`` called under the pipeline's serialization.

        From inside a policy call the event is queued and handled right after the current
        operation; from another thread it waits for the pipeline and is handled at once.
        """
        self._inject(event)

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
