"""Reloading the daemon's config file, through the one reload path
(``nrirp.app.composition.reloads``: loaded and prepared on a worker thread, applied on the
loop) that the node agent's custom resources take too.

A reload is asked for by SIGHUP or by the file watcher noticing a change; reloads asked for
while one runs are coalesced into one more. Whatever goes wrong, the old configuration stays,
the reason is logged, and the watcher keeps watching.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable

from nrirp.adapters.system import ConfigFileWatcher, read_config_file
from nrirp.app.composition.reloads import (
    ConfigReloads,
    ReloadRequest,
    config_preparer,
    off_loop,
    problems_of,
)
from nrirp.domain.config import PolicyConfig, PolicySpecs

log = logging.getLogger("nrirp.daemon")

__all__ = [
    "ConfigReloader",
    "config_preparer",
    "load_config_file",
    "log_config_error",
    "off_loop",
]


def log_config_error(headline: str, exc: Exception) -> None:
    """One line: the headline and the problems a config error shows (``errors`` field)."""
    problems = problems_of(exc)
    log.error("%s: %s", headline, "; ".join(problems), extra={"fields": {"errors": problems}})


def load_config_file(policy: str, path: str, specs: PolicySpecs) -> PolicyConfig:
    """Read (regular file, within the config budget), parse and validate ``path``: pure CPU
    and bounded I/O, safe on any thread. Raises ``ConfigFileError`` or ``ConfigError``."""
    from nrirp.adapters.documents import load_policy_config

    return load_policy_config(policy, read_config_file(path), specs)


class ConfigReloader:
    """Reloads ``path`` through ``reloads`` on request (:meth:`request`) and when it changes
    (:meth:`watch`)."""

    def __init__(
        self,
        reloads: ConfigReloads,
        policy: str,
        path: str,
        specs: PolicySpecs,
        *,
        load: Callable[[str, str, PolicySpecs], PolicyConfig] = load_config_file,
    ) -> None:
        self.reloads = reloads
        self.policy = policy
        self.path = path
        self.specs = specs
        self.watcher = ConfigFileWatcher(path)
        self._load = load
        self._pending: str | None = None
        self._task: asyncio.Task[None] | None = None
        self.completed = 0
        """Reloads finished (applied or not), for tests."""

    @property
    def source(self) -> str:
        return f"file {self.path}"

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
            path = self.path
            self.watcher.mark_seen()
            await self.reloads.reload(
                ReloadRequest(
                    trigger=trigger,
                    source=self.source,
                    subject=f"configuration {path}",
                    load=functools.partial(self._load, self.policy, path, self.specs),
                )
            )
            self.completed += 1
