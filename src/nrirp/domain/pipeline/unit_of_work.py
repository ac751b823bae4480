"""The unit of work: one pipeline operation as a transaction over the cache.

::

    with work.begin("create-container", "container default/pod0/ctr0"):
        ...                     # cache changes, decisions, updates to send
        work.commit()           # or it is all undone

:meth:`UnitOfWork.begin` takes the cache checkpoint and starts the operation's clock.
:meth:`~UnitOfWork.commit` keeps the changes and publishes what the operation recorded, in this
order: its decisions (one :meth:`~DecisionLog.decision_batch`), the annotation problems policies
ran into, one state save, the operation's duration (and how many decisions it made) to
:class:`Metrics`, then the updates it queued for the runtime. Leaving the block without
committing rolls the cache back and drops those records; when an exception is the cause, the
failure is logged and measured and the caller gets :class:`OperationFailedError` with the
reason written for the operator (metrics get the reason's class, :func:`refusal_class`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType

from nrirp.domain.cache import Cache, CacheCheckpoint, CacheError
from nrirp.domain.cpuallocator import CPUAllocationError
from nrirp.domain.memalloc import MemoryAllocationError
from nrirp.domain.model import Container, ContainerChangeError, Update
from nrirp.domain.pipeline.errors import NotStartedError, OperationFailedError, PipelineError
from nrirp.domain.policy import PolicyError
from nrirp.domain.ports.clock import Clock
from nrirp.domain.ports.decisions import Decision, DecisionLog, Notice, Severity, batch_writer
from nrirp.domain.ports.documents import one_line
from nrirp.domain.ports.metrics import Metrics

# failures whose message is meant for the operator (anything else is reported as a bug)
_EXPECTED = (PolicyError, PipelineError, CacheError, ContainerChangeError, ValueError)


def failure_reason(exc: BaseException) -> str:
    """The policy's own message for expected failures; the exception type for bugs. One
    printable line, bounded (:func:`~nrirp.domain.ports.documents.one_line`): a policy may
    name a pod whose name holds a newline."""
    text = str(exc)
    if not is_internal(exc):
        return one_line(text)
    return one_line(f"internal error: {type(exc).__name__}: {text}" if text else type(exc).__name__)


# refusal classes: what ran out (found anywhere in the chain: policies wrap allocator errors)
_SHORTAGES: tuple[tuple[type[BaseException], str], ...] = (
    (CPUAllocationError, "cpu"),
    (MemoryAllocationError, "memory"),
)
# then what refused, by the error's own type (the first match wins)
_REFUSERS: tuple[tuple[type[BaseException], str], ...] = (
    (NotStartedError, "not-started"),
    (PolicyError, "policy"),
    (CacheError, "unknown-object"),
    (ContainerChangeError, "invalid-change"),
    (PipelineError, "pipeline"),
    (ValueError, "invalid-request"),
)
REFUSAL_CLASSES = ("internal", *(n for _, n in _SHORTAGES), *(n for _, n in _REFUSERS))
"""Every value :func:`refusal_class` returns."""


def refusal_class(exc: BaseException) -> str:
    """A short, fixed name for why an operation failed (a metric label, never free text):
    ``internal`` for a bug, ``cpu`` or ``memory`` when an allocator ran out, else the kind of
    error that refused (``policy``, ``not-started``, ``unknown-object``, ...)."""
    if is_internal(exc):
        return "internal"
    cause = exc.__cause__ or exc.__context__
    for error_type, name in _SHORTAGES:
        if isinstance(exc, error_type) or isinstance(cause, error_type):
            return name
    for error_type, name in _REFUSERS:
        if isinstance(exc, error_type):
            return name
    return "internal"  # pragma: no cover - is_internal() covers every other type


def is_internal(exc: BaseException) -> bool:
    """Whether ``exc`` is a bug rather than an expected failure with a message for the
    operator."""
    if isinstance(exc, OperationFailedError):
        return exc.internal
    return not (str(exc) and isinstance(exc, _EXPECTED))


class UnitOfWork:
    """Checkpoint, rollback unless committed, and what a committed operation publishes.

    One instance serves every operation of a resource manager, one at a time (the pipeline is
    serialized; beginning while a unit is open is a :class:`PipelineError`). Nested undo inside
    an operation is a :meth:`savepoint`. Per operation the unit allocates only the cache
    checkpoint and the lists it hands over (decisions, updates), as the pipeline's hot path
    did before it.

    ``save`` persists the cache (called once per commit), ``submit`` hands updates to the
    runtime (called after everything else, only with updates), ``annotation_problems`` returns
    and forgets the annotation problems noted since its last call, ``after_commit`` (optional)
    runs last (host-wide enforcement).
    """

    def __init__(
        self,
        *,
        cache: Cache,
        clock: Clock,
        log: DecisionLog,
        metrics: Metrics | None,
        save: Callable[[], None],
        submit: Callable[[list[Update]], None],
        annotation_problems: Callable[[], Sequence[tuple[str, object]]],
        after_commit: Callable[[], None] | None = None,
    ) -> None:
        self._cache = cache
        self._clock = clock
        self._log = log
        self._log_decisions = batch_writer(log)
        self._metrics = metrics
        self._save = save
        self._submit = submit
        self._annotation_problems = annotation_problems
        self._after_commit = after_commit
        self.operation = ""
        """The operation running (or the last one): what decisions are recorded under."""
        self._subject = ""
        self._checkpoint: CacheCheckpoint | None = None
        self._committed = False
        self._started_at = 0.0
        self._decisions: list[Decision] = []
        self.decided: set[str] = set()
        """Ids of the containers a decision was recorded for in this operation."""
        self._outbox: list[Update] = []

    # ------------------------------------------------------------------ the transaction
    @property
    def is_open(self) -> bool:
        return self._checkpoint is not None

    def begin(self, operation: str, subject: str = "") -> UnitOfWork:
        """Open the unit for ``operation`` (about ``subject``, for failure messages): take the
        cache checkpoint and start the clock. Use the result as a context manager, or end it
        with :meth:`end`."""
        if self._checkpoint is not None:
            raise PipelineError(
                f"{operation}: the unit of work of {self.operation} is still open "
                "(nested changes use a savepoint)"
            )
        self._checkpoint = self._cache.checkpoint()
        self._started_at = self._clock.monotonic()
        self.operation = operation
        self._subject = subject
        self._committed = False
        return self

    def commit(self) -> None:
        """Keep the changes, then log the decisions and annotation problems, save the state,
        report the duration and send the queued updates. An exception raised from here on
        (a sink failing) reaches the caller as it is: the changes stay committed."""
        checkpoint = self._opened()
        self._checkpoint = None
        self._cache.release(checkpoint)
        self._committed = True
        outbox = self._outbox
        if outbox:
            self._outbox = []
        if self._decisions:
            decisions, self._decisions = self._decisions, []  # handed over: the log may keep it
            self._log_decisions(decisions)
            if self._metrics is not None:
                self._metrics.observe_decisions(self.operation, len(decisions))
        self.decided.clear()
        for name, problem in self._annotation_problems():
            self._log.notice(Notice("annotations", f"container {name}: {problem}"))
        self._save()
        if self._metrics is not None:
            self._metrics.observe_operation(
                self.operation, self._clock.monotonic() - self._started_at, True
            )
        if outbox:
            self._submit(outbox)
        if self._after_commit is not None:
            self._after_commit()

    def end(self, exc: BaseException | None) -> None:
        """Close the unit: nothing more after a commit; otherwise roll the cache back to the
        checkpoint and drop the records. An ``Exception`` is logged, measured and raised as
        :class:`OperationFailedError` (other exceptions, e.g. ``KeyboardInterrupt``, pass)."""
        if self._committed:
            self._committed = False
            return
        self._cache.rollback(self._opened())
        self._checkpoint = None
        self._outbox.clear()
        self._decisions.clear()
        self.decided.clear()
        self._annotation_problems()
        if not isinstance(exc, Exception):
            return
        operation, subject = self.operation, self._subject
        reason = failure_reason(exc)
        what = f"{operation} {subject}" if subject else operation
        self._log.notice(Notice(operation, f"{what} failed: {reason}", Severity.ERROR))
        if self._metrics is not None:
            self._metrics.observe_operation(
                operation, self._clock.monotonic() - self._started_at, False
            )
            self._metrics.observe_refusal(operation, refusal_class(exc))
        raise OperationFailedError(operation, subject, reason, internal=is_internal(exc)) from exc

    def __enter__(self) -> UnitOfWork:
        self._opened()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.end(exc)

    def savepoint(self) -> Savepoint:
        """A nested checkpoint inside the open unit (see :class:`Savepoint`)."""
        self._opened()
        return Savepoint(self._cache)

    def _opened(self) -> CacheCheckpoint:
        checkpoint = self._checkpoint
        if checkpoint is None:
            raise PipelineError("no unit of work is open")
        return checkpoint

    # ------------------------------------------------------------------ records
    def record_decision(self, container: Container, reason: str, ok: bool) -> None:
        """Note a decision about ``container`` (as it is now), logged when the unit commits."""
        pod = self._cache.pod(container.pod_id)
        resources = container.resources
        self.decided.add(container.id)
        self._decisions.append(
            Decision(  # positional: one per moved container, and keywords cost a third more
                self.operation,
                container.id,
                container.name,
                pod.name if pod else "",
                pod.namespace if pod else "",
                resources.cpus,
                resources.mems,
                reason,
                ok,
            )
        )

    def send_after_commit(self, updates: Sequence[Update]) -> None:
        """Queue updates for the runtime, sent once the unit commits (dropped if it does not)."""
        self._outbox.extend(updates)


class Savepoint:
    """``with work.savepoint():`` undoes the cache changes made in the block if it raises (the
    exception goes on) and keeps them otherwise; the unit's records are not touched. For a step
    whose failure the operation survives (a container is stopped whatever its release does)."""

    __slots__ = ("_cache", "_checkpoint")

    def __init__(self, cache: Cache) -> None:
        self._cache = cache
        self._checkpoint: CacheCheckpoint | None = None

    def __enter__(self) -> Savepoint:
        self._checkpoint = self._cache.checkpoint()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        checkpoint = self._checkpoint
        assert checkpoint is not None, "savepoint used outside its with-block"
        self._checkpoint = None
        if exc_type is None:
            self._cache.release(checkpoint)
        else:
            self._cache.rollback(checkpoint)
