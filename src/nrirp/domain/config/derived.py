"""Values derived from a configuration, computed once per configuration.

Configurations are immutable, so what a policy derives from one (compiled namespace lists,
digests, the document dumped for the state file) can be remembered by the identity of the
objects it came from. Work done ahead, off the pipeline (``PolicyRegistry.prepare`` on the
daemon's reload thread), is then found by the reconfigure that follows instead of being done
again while requests wait.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, ParamSpec, TypeVar

_P = ParamSpec("_P")
_V = TypeVar("_V")


class PerConfig(Generic[_P, _V]):
    """``build`` remembered for the last ``keep`` argument tuples, compared by identity.

    The arguments are kept alive with the value, so an identity never stands for another
    object. Safe to call from several threads (two may build the same value; one is kept)."""

    def __init__(self, build: Callable[_P, _V], keep: int = 2) -> None:
        self._build = build
        self._keep = keep
        self._memo: dict[tuple[int, ...], tuple[tuple[object, ...], _V]] = {}
        self.builds = 0
        """How many values were built (for tests)."""

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _V:
        parts = (*args, *kwargs.values())
        key = tuple(map(id, parts))
        entry = self._memo.get(key)
        if entry is not None and all(a is b for a, b in zip(entry[0], parts, strict=True)):
            return entry[1]
        value = self._build(*args, **kwargs)
        self.builds += 1
        memo = dict(self._memo)  # a copy: another thread may be reading the old one
        memo.pop(key, None)
        memo[key] = (parts, value)
        while len(memo) > self._keep:
            del memo[next(iter(memo))]
        self._memo = memo
        return value
