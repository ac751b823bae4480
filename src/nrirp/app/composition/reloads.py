"""One reload path for every source of configuration: the config file (SIGHUP, a change of the
file) and the custom resource the node agent follows alike.

A reload is a :class:`ReloadRequest`: what asked for it (``trigger``), where the configuration
comes from (``source``, with the source's own ``generation`` for a custom resource) and how to
load it (``load``: read, parse and validate). :class:`ConfigReloads` runs them one at a time:
the load and what the policy derives from the configuration (``prepare``: compiled lists,
digests, the document saved with the state) on a worker thread while the event loop keeps
serving; then, on the loop and serialized with the requests like any pipeline operation,
``ResourceManager.reconfigure``, which finds that work done. A configuration equal to the one
in force is not applied again. Listeners hear when a reload starts and how it ended (the
daemon: the status report, the metrics, the warnings, the endpoints and the agent's settings
of the configuration in force), and the caller gets the :class:`ReloadOutcome` (the agent
writes it on the resource's status). Whatever goes wrong, the configuration in force stays.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Protocol, TypeVar

import attrs

from nrirp.adapters.system import ConfigFileError
from nrirp.domain.config import ConfigError, PolicyConfig
from nrirp.domain.pipeline import ConfigCodec, ResourceManager
from nrirp.domain.policy import PolicyRegistry
from nrirp.domain.ports.documents import DocumentError

log = logging.getLogger("nrirp.daemon")

_T = TypeVar("_T")

APPLIED = "applied"
INVALID = "invalid"
REFUSED = "refused"
FAILED = "failed"
RESULTS = (APPLIED, INVALID, REFUSED, FAILED)
"""How a reload ends: ``applied`` (the configuration is in force, also when it was already),
``invalid`` (did not read, parse or validate), ``refused`` (by the policy), ``failed`` (an
internal error, logged with its traceback)."""


async def off_loop(work: Callable[[], _T], name: str) -> _T:
    """``work()`` on a fresh daemon thread, awaited without blocking the loop.

    Not the loop's default executor: ``asyncio.run`` joins that at exit, so a worker stuck in
    the kernel (a config file on a hung network mount) would keep SIGTERM from stopping the
    daemon. A daemon thread is abandoned at exit instead; if the awaiting task is cancelled,
    the result is dropped."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[_T] = loop.create_future()

    def settle(result: _T | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        try:
            result = work()
        except BaseException as exc:  # handed to the awaiting task, raised there
            outcome: tuple[_T | None, BaseException | None] = (None, exc)
        else:
            outcome = (result, None)
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=run, name=name, daemon=True).start()
    return await future


def config_preparer(registry: PolicyRegistry, codec: ConfigCodec) -> Callable[[PolicyConfig], None]:
    """What the reload thread prepares for a configuration: the policy's derived values
    (``PolicyRegistry.prepare``) and the document the state file keeps (the codec's dump)."""

    def prepare(config: PolicyConfig) -> None:
        registry.prepare(config)
        codec.dump(config)

    return prepare


def problems_of(exc: Exception) -> list[str]:
    """The problems a load error shows: a config error's paths and reasons, else its text."""
    return exc.shown_problems() if isinstance(exc, ConfigError) else [str(exc)]


@attrs.frozen(kw_only=True)
class ReloadRequest:
    """One reload: ``trigger`` (``SIGHUP``, ``file change``, ``custom resource K ns/name,
    generation 3``) names it in the log; ``source`` is where the configuration comes from
    (``file /etc/nrirp/config.yaml``, ``custom resource K ns/name``) and ``generation`` the
    source's own generation (a custom resource's ``metadata.generation``; ``None`` for a file);
    ``subject`` is how the log lines call the document (``configuration /etc/...``);
    ``load()`` reads, parses and validates it on the reload thread (raising
    ``DocumentError`` or ``ConfigFileError`` when it does not)."""

    trigger: str
    source: str
    load: Callable[[], PolicyConfig] = attrs.field(eq=False, repr=False)
    generation: int | None = None
    subject: str = "configuration"


@attrs.frozen(kw_only=True)
class ReloadOutcome:
    """How a reload ended (``result``, one of :data:`RESULTS`): the ``config`` in force after
    an applied one, whether it ``changed`` anything (``False``: that configuration was in force
    already), the container ``updates`` it caused; the ``problems`` of one not applied."""

    result: str
    config: PolicyConfig | None = None
    changed: bool = False
    updates: int = 0
    problems: tuple[str, ...] = ()

    @property
    def applied(self) -> bool:
        return self.result == APPLIED

    @property
    def detail(self) -> str:
        """The first problem, for the status report's one line."""
        return self.problems[0].splitlines()[0] if self.problems else ""


class ReloadListener(Protocol):
    """Told of every reload, on the event loop."""

    def reload_started(self, request: ReloadRequest) -> None: ...

    def reload_ended(self, request: ReloadRequest, outcome: ReloadOutcome) -> None: ...


class ConfigReloads:
    """The reload path of ``manager`` (see the module docstring); ``prepare(config)`` runs on
    the reload thread after a configuration loaded (:func:`config_preparer`)."""

    def __init__(
        self,
        manager: ResourceManager,
        *,
        prepare: Callable[[PolicyConfig], object] | None = None,
        thread_name: str = "nrirp-config-reload",
    ) -> None:
        self.manager = manager
        self._prepare = prepare
        self._thread_name = thread_name
        self._listeners: list[ReloadListener] = []
        self._lock: asyncio.Lock | None = None
        self.completed = 0
        """Reloads finished, whatever their outcome (for tests)."""

    def listen(self, listener: ReloadListener) -> None:
        self._listeners.append(listener)

    async def reload(self, request: ReloadRequest) -> ReloadOutcome:
        """Load ``request``'s configuration off the loop and apply it on the loop, after the
        reloads already asked for; a cancelled reload applies nothing."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            for listener in self._listeners:
                listener.reload_started(request)
            try:
                outcome = await self._reload(request)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a bug: reported; the next reload works all the same
                log.exception(
                    "reload (%s): internal error; the old configuration stays", request.trigger
                )
                outcome = ReloadOutcome(
                    result=FAILED, problems=(f"internal error: {type(exc).__name__}: {exc}",)
                )
            self.completed += 1
            for listener in self._listeners:
                listener.reload_ended(request, outcome)
            return outcome

    def _load_and_prepare(self, request: ReloadRequest) -> PolicyConfig:
        """On the reload thread: load, then prepare what the reconfigure would derive."""
        config = request.load()
        if self._prepare is not None:
            self._prepare(config)
        return config

    async def _reload(self, request: ReloadRequest) -> ReloadOutcome:
        trigger, subject = request.trigger, request.subject
        try:
            config = await off_loop(lambda: self._load_and_prepare(request), self._thread_name)
        except (ConfigFileError, DocumentError) as exc:  # the loader raises only ConfigError
            problems = problems_of(exc)
            log.error(
                "reload (%s): new %s not applied, the old one stays: %s",
                trigger,
                subject,
                "; ".join(problems),
                extra={"fields": {"errors": problems}},
            )
            return ReloadOutcome(result=INVALID, problems=tuple(problems))
        if config == self.manager.config:
            log.info("reload (%s): %s is in force already", trigger, subject)
            return ReloadOutcome(result=APPLIED, config=config, changed=False)
        outcome = self.manager.reconfigure(config)  # on the loop: serialized with requests
        if not outcome.applied:
            log.error(
                "reload (%s): policy refused %s, the old one stays: %s",
                trigger,
                subject,
                outcome.reason,
            )
            return ReloadOutcome(result=REFUSED, problems=(outcome.reason or "refused",))
        log.info("reload (%s): %s applied; %d container updates", trigger, subject, outcome.updates)
        return ReloadOutcome(result=APPLIED, config=config, changed=True, updates=outcome.updates)
