"""Bulkheads: at most so many calls of one kind at once, on threads of their own.

Strong reads (the partition's end offset) and searches (the search server) block a thread
while they wait; on the default executor, which the whole process shares, a slow broker or
search server would make every other such call queue behind them. Each kind gets its own
small pool instead, and a caller that finds it full for too long is answered 503.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from prometheus_client import Counter

T = TypeVar("T")
FULL = Counter(
    "jobpost_api_bulkhead_full_total", "Calls refused: their bulkhead had no slot in time", ["bulkhead"]
)


class BulkheadFull(Exception):
    """No slot came free in time."""


class Bulkhead:
    """At most `size` calls of one kind at once, each on a thread of the bulkhead's own pool
    (not the default executor the rest of the process shares); a caller waits for a slot at
    most `wait_s`."""

    def __init__(self, name: str, size: int, wait_s: float) -> None:
        self.name = name
        self.wait_s = wait_s
        self._slots = asyncio.Semaphore(size)
        self._pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix=name)

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the slots (waiting at most `wait_s` for it, else BulkheadFull)."""
        try:
            await asyncio.wait_for(self._slots.acquire(), self.wait_s)
        except TimeoutError as exc:
            FULL.labels(self.name).inc()
            raise BulkheadFull(f"too many {self.name} at once on this replica") from exc
        try:
            yield
        finally:
            self._slots.release()

    async def thread(self, call: Callable[[], T]) -> T:
        """`call` on a thread of the bulkhead's pool (within a slot the caller holds)."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    async def run(self, call: Callable[[], T]) -> T:
        """`call` on the bulkhead's pool, in a slot of its own."""
        async with self.slot():
            return await self.thread(call)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
