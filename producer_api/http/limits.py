"""What keeps one client, or one kind of request, from taking the whole replica: a request
rate per credential and a bound on requests in flight (the bulkheads of strong reads and
searches are `producer_api.bulkhead`).

Each answers a refusal as problem+json with `Retry-After`, never a bare connection reset:
429 for a credential over its rate, 503 for a replica or a bulkhead that is full.
"""

from __future__ import annotations

import math
import time

from limits import parse
from limits.aio.storage import MemoryStorage
from limits.aio.strategies import SlidingWindowCounterRateLimiter
from prometheus_client import Counter
from starlette.types import ASGIApp, Receive, Scope, Send

from producer_api.http.problems import Problem

REFUSED = Counter(
    "jobpost_api_refused_total",
    "Requests refused rate (429: a credential over its rate), busy (503: too many in flight)",
    ["reason"],
)
# Not counted against the replica's bound: an orchestrator's probes must answer while it is
# busy, or a loaded replica would be taken for a dead one.
_UNBOUNDED = ("/healthz", "/readyz", "/metrics")


class RateLimit:
    """Requests per credential over a sliding window (`limits`' sliding-window counter: O(1)
    per request), e.g. "100/second"; None: unlimited.

    `limits`' asyncio flavour: its in-memory storage expires counters in a task on the
    event loop. The synchronous storage started a new thread to expire them after almost
    every request, on the event loop's thread, which waited for that thread to start: 23 %
    of the HTTP thread's busy samples at 100 writes/s with the whole system running (py-spy).
    The storage is made on the first check, inside the event loop it belongs to."""

    def __init__(self, rate: str | None) -> None:
        self.item = parse(rate) if rate else None
        self._limiter: SlidingWindowCounterRateLimiter | None = None

    async def check(self, credential: str, requests: int = 1, counted: int = 0) -> None:
        """Count `requests` of `credential` (a batch's items count one each); a 429 Problem
        when that takes it over its rate (and none of them is counted). `counted`: how many
        more of the same request were counted already (a batch's first item, by the gate).

        A request of more than the rate as a whole is refused at once: no window holds it,
        and counted in two hits it could pass, as the sliding-window counter rounds the
        previous second's hits down (a 61-item batch at 60/s was admitted when the gate's
        hit and the items' fell in two seconds)."""
        if self.item is None:
            return
        if counted + requests > self.item.amount:
            REFUSED.labels("rate").inc()
            raise Problem(
                429,
                "Too many requests",
                f"credential {credential!r} is over its rate of {self.item} with {counted + requests}"
                " requests at once: split them (no Retry-After: a retry of the same is refused)",
            )
        if self._limiter is None:
            self._limiter = SlidingWindowCounterRateLimiter(MemoryStorage())
        if await self._limiter.hit(self.item, credential, cost=requests):
            return
        REFUSED.labels("rate").inc()
        stats = await self._limiter.get_window_stats(self.item, credential)
        wait = max(1, math.ceil(stats.reset_time - time.time()))
        raise Problem(
            429,
            "Too many requests",
            f"credential {credential!r} is over its rate of {self.item}; retry after {wait} s",
            headers={"Retry-After": str(wait)},
        )


class ConcurrencyLimit:
    """At most `limit` requests in flight (the probes aside); past it, 503 + Retry-After at
    once, so a flood queues at the client instead of in this process's memory."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in _UNBOUNDED:
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            REFUSED.labels("busy").inc()
            busy = Problem(
                503,
                "Service unavailable",
                "this replica has too many requests in flight",
                headers={"Retry-After": "1"},
            )
            await busy.response()(scope, receive, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
