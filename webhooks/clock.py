"""The clock the dispatcher's lanes read and sleep on: the system's, or a fake one in the
unit tests (virtual milliseconds, no waiting)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...

    async def sleep(self, seconds: float, wake: asyncio.Event) -> None:
        """Return after `seconds`, or as soon as `wake` is set."""


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    async def sleep(self, seconds: float, wake: asyncio.Event) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), max(0.0, seconds))
