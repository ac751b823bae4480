"""Running a test's coroutine on a fresh event loop, failing on hangs and on leaked tasks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

TIMEOUT = 20.0


def arun(make: Callable[[], Coroutine[Any, Any, T]], timeout: float = TIMEOUT) -> T:
    """Run ``make()`` on a fresh loop; fail if it takes longer than ``timeout`` seconds or if
    any other task is still pending when it returns."""

    async def wrapper() -> T:
        result = await asyncio.wait_for(make(), timeout)
        leftover = asyncio.all_tasks() - {asyncio.current_task()}
        assert not leftover, f"tasks left behind: {leftover}"
        return result

    return asyncio.run(wrapper())
