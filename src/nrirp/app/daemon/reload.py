"""Reloading the daemon's config file without stalling the event loop.

A reload (SIGHUP, or the file watcher noticing a change) reads, parses and validates the file
on a worker thread while the loop keeps serving NRI requests, and there also prepares what the
configuration's policy derives from it (``prepare``: compiled namespace lists, digests, the
document saved with the state, remembered per configuration); only applying the new
configuration, a pipeline operation like any request, runs on the loop, serialized with them.
Reloads asked for while one runs are coalesced into one more. Whatever goes wrong, the old
configuration stays, the reason is logged, and the watcher keeps watching.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from nrirp.adapters.system import ConfigFileError, ConfigFileWatcher, read_config_file
from nrirp.domain.config import PolicyConfig, PolicySpecs
from nrirp.domain.pipeline import ConfigCodec, ResourceManager
from nrirp.domain.policy import PolicyRegistry
from nrirp.domain.ports.documents import DocumentError

log = logging.getLogger("nrirp.daemon")

_T = TypeVar("_T")


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


def log_config_error(headline: str, exc: Exception) -> None:
    """One line: the headline and the problems a config error shows (``errors`` field)."""
    from nrirp.domain.config import ConfigError

    problems = exc.shown_problems() if isinstance(exc, ConfigError) else [str(exc)]
    log.error("%s: %s", headline, "; ".join(problems), extra={"fields": {"errors": problems}})


def load_config_file(policy: str, path: str, specs: PolicySpecs) -> PolicyConfig:
    """Read (regular file, within the config budget), parse and validate ``path``: pure CPU
    and bounded I/O, safe on any thread. Raises ``ConfigFileError`` or ``ConfigError``."""
    from nrirp.adapters.documents import load_policy_config

    return load_policy_config(policy, read_config_file(path), specs)


def config_preparer(registry: PolicyRegistry, codec: ConfigCodec) -> Callable[[PolicyConfig], None]:
    """What the reload thread prepares for a configuration: the policy's derived values
    (``PolicyRegistry.prepare``) and the document the state file keeps (the codec's dump)."""

    def prepare(config: PolicyConfig) -> None:
        registry.prepare(config)
        codec.dump(config)

    return prepare


ReloadResult = Callable[[str, str, "PolicyConfig | None", str], None]
"""``(trigger, result, config, detail)`` after each reload: ``applied`` (with the config now in
force), ``invalid`` (did not read, parse or validate) or ``refused`` (by the policy)."""


class ConfigReloader:
    """Reloads ``path`` on request (:meth:`request`) and when it changes (:meth:`watch`);
    ``on_result`` hears how each reload ended."""

    def __init__(
        self,
        manager: ResourceManager,
        policy: str,
        path: str,
        specs: PolicySpecs,
        *,
        load: Callable[[str, str, PolicySpecs], PolicyConfig] = load_config_file,
        on_result: ReloadResult | None = None,
        prepare: Callable[[PolicyConfig], object] | None = None,
    ) -> None:
        self.manager = manager
        self.policy = policy
        self.path = path
        self.specs = specs
        self.watcher = ConfigFileWatcher(path)
        self._load = load
        self._on_result = on_result
        self._prepare = prepare
        self._pending: str | None = None
        self._task: asyncio.Task[None] | None = None
        self.completed = 0
        """Reloads finished (applied or not), for tests."""

    def request(self, trigger: str) -> None:
        """Reload soon (called on the loop, e.g. from a signal handler). A reload asked for
        while one runs is done once more after it, with the latest trigger."""
        self._pending = trigger
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def watch(self, interval: float) -> None:
        """Poll the file every ``interval`` seconds and reload when it changed (until
        cancelled)."""
        while True:
            await asyncio.sleep(interval)
            if self.watcher.changed():
                self.request("file change")

    async def close(self) -> None:
        """Stop a reload in progress (its configuration is not applied)."""
        task, self._task = self._task, None
        self._pending = None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while self._pending is not None:
            trigger, self._pending = self._pending, None
            try:
                await self._reload(trigger)
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug: reported, and the next change is reloaded all the same
                log.exception("reload (%s): internal error; the old configuration stays", trigger)
            self.completed += 1

    def _report(self, trigger: str, result: str, config: PolicyConfig | None, detail: str) -> None:
        if self._on_result is not None:
            self._on_result(trigger, result, config, detail)

    def _load_and_prepare(self, path: str) -> PolicyConfig:
        """On the reload thread: load, then prepare what the reconfigure would derive."""
        config = self._load(self.policy, path, self.specs)
        if self._prepare is not None:
            self._prepare(config)
        return config

    async def _reload(self, trigger: str) -> None:
        path = self.path
        self.watcher.mark_seen()
        try:
            config = await off_loop(lambda: self._load_and_prepare(path), "nrirp-config-reload")
        except (ConfigFileError, DocumentError) as exc:  # the loader raises only ConfigError
            log_config_error(
                f"reload ({trigger}): new configuration {path} not applied, the old one stays",
                exc,
            )
            self._report(trigger, "invalid", None, str(exc).splitlines()[0])
            return
        outcome = self.manager.reconfigure(config)  # on the loop: serialized with requests
        self._report(
            trigger,
            "applied" if outcome.applied else "refused",
            config if outcome.applied else None,
            outcome.reason or "",
        )
        if outcome.applied:
            log.info(
                "reload (%s): configuration %s applied; %d container updates",
                trigger,
                path,
                outcome.updates,
            )
        else:
            log.error(
                "reload (%s): policy refused configuration %s, the old one stays: %s",
                trigger,
                path,
                outcome.reason,
            )
