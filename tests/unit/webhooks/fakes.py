"""Fakes for the dispatcher's lanes: a virtual clock, endpoints that answer as a script says,
an outcomes sink that records what Kafka would be given. One event loop, virtual
milliseconds."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from schemas import codec
from schemas.listing_events import ListingEvent
from schemas.webhooks import WebhookDelivery, WebhookEndpoint, WebhookSecret
from webhooks.lanes import Attempt, DeliveryScheduler, Queued, Verdict
from webhooks.schedule import RetrySchedule

START = 1_700_000_000_000


class VirtualClock:
    """When every task waits, time jumps to the earliest sleeper's deadline (`run`)."""

    def __init__(self, now: int = START) -> None:
        self.now = now
        self._sleepers: list[tuple[int, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now_ms(self) -> int:
        return self.now

    async def sleep(self, seconds: float, wake: asyncio.Event) -> None:
        if wake.is_set():
            return
        timer: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + max(1, round(seconds * 1000)), next(self._seq), timer))
        woken = asyncio.ensure_future(wake.wait())
        try:
            await asyncio.wait({timer, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            woken.cancel()
            timer.cancel()

    async def settle(self) -> None:
        for _ in range(50):
            await asyncio.sleep(0)

    async def advance(self, ms: int) -> None:
        """Let `ms` of virtual time pass, waking every sleeper due by then."""
        await self.settle()
        self.now += ms
        while self._sleepers and self._sleepers[0][0] <= self.now:
            _, _, timer = heapq.heappop(self._sleepers)
            if not timer.done():
                timer.set_result(None)
        await self.settle()

    async def run(self, until: Callable[[], bool], limit_ms: int = 10 * 24 * 3600 * 1000) -> None:
        end = self.now + limit_ms
        while True:
            await self.settle()
            if until():
                return
            while self._sleepers and self._sleepers[0][2].done():
                heapq.heappop(self._sleepers)
            if not self._sleepers:
                raise AssertionError("nothing left to wait for, and the condition does not hold")
            deadline = self._sleepers[0][0]
            if deadline > end:
                raise AssertionError(f"still not done after {limit_ms} ms of virtual time")
            self.now = max(self.now, deadline)
            while self._sleepers and self._sleepers[0][0] <= self.now:
                _, _, timer = heapq.heappop(self._sleepers)
                if not timer.done():
                    timer.set_result(None)


def endpoint(endpoint_id: str, employer: str = "acme") -> WebhookEndpoint:
    url = f"https://{endpoint_id}.example/hooks"
    return WebhookEndpoint(endpoint_id, employer, url, ("*",), (WebhookSecret(b"sealed"),), START - 1000)


def event(
    posting_id: str, version: int, at: int, kind: str = "listing.live", employer: str = "acme"
) -> ListingEvent:
    return ListingEvent(
        f"{kind}-{posting_id}-{version}-{at}", kind, employer, posting_id, version, at, "linkedin"
    )


def queued(
    endpoint_id: str,
    e: ListingEvent,
    offset: int,
    source: str = "listing-events",
    partition: int = 0,
    created_at: int = START,
) -> Queued:
    encoded = codec.listing_events().encode(e)
    delivery = WebhookDelivery(
        endpoint_id,
        e.event_id,
        e.posting_id,
        encoded,
        source,
        offset,
        attempts=0,
        next_attempt_at=created_at,
        created_at=created_at,
    )
    return Queued(delivery, e, partition)


Script = Callable[[WebhookEndpoint, Queued, int], Awaitable[Attempt]]
LATENCY_S = 0.01  # how long an endpoint without a script takes to answer 200


@dataclass
class FakeSender:
    clock: VirtualClock
    scripts: dict[str, Script] = field(default_factory=dict)  # endpoint -> how it answers (default: 200)
    sent: list[tuple[int, str, str, int, str]] = field(
        default_factory=list
    )  # (when, endpoint, posting, version, type)
    in_flight: int = 0
    most_in_flight: int = 0

    async def send(self, target: WebhookEndpoint, item: Queued) -> Attempt:
        self.sent.append(
            (self.clock.now, target.id, item.event.posting_id, item.event.version, item.event.type)
        )
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            script = self.scripts.get(target.id)
            if script is None:
                await self.clock.sleep(LATENCY_S, asyncio.Event())
                return Attempt(Verdict.DELIVERED, "HTTP 200")
            return await script(target, item, self.clock.now)
        finally:
            self.in_flight -= 1

    def delivered_to(self, endpoint_id: str) -> list[tuple[str, int, str]]:
        return [(p, v, t) for _, e, p, v, t in self.sent if e == endpoint_id]


@dataclass
class FakeOutcomes:
    """What Kafka would be given; each call returns at once (acknowledged)."""

    endpoints: dict[str, WebhookEndpoint]
    retried: list[WebhookDelivery] = field(default_factory=list)
    done: list[str] = field(default_factory=list)  # keys that wait no longer
    letters: list[tuple[WebhookDelivery, str]] = field(default_factory=list)
    disabled: list[tuple[str, str]] = field(default_factory=list)

    async def retrying(self, item: Queued) -> None:
        self.retried.append(item.delivery)

    async def finished(self, item: Queued) -> None:
        self.done.append(item.key)

    async def dead_lettered(self, item: Queued, error: str) -> None:
        self.letters.append((item.delivery, error))
        self.done.append(item.key)

    async def disable(self, target: WebhookEndpoint, reason: str) -> None:
        self.disabled.append((target.id, reason))
        self.endpoints[target.id] = replace(target, disabled_at=1, disabled_reason=reason)


class Harness:
    def __init__(self, waits_s: tuple[float, ...] = (5, 300, 1800), **limits: float) -> None:
        self.clock = VirtualClock()
        self.endpoints = {e.id: e for e in (endpoint("a"), endpoint("b", employer="globex"))}
        self.sender = FakeSender(self.clock)
        self.outcomes = FakeOutcomes(self.endpoints)
        self.scheduler = DeliveryScheduler(
            self.endpoints,
            self.sender,
            self.outcomes,
            RetrySchedule(waits_s),
            clock=self.clock,
            **limits,  # type: ignore[arg-type]
        )


def scenario(body: Callable[[Harness], Awaitable[None]], **options: object) -> None:
    async def run() -> None:
        harness = Harness(**options)  # type: ignore[arg-type]
        try:
            await body(harness)
        finally:
            harness.scheduler.close()

    asyncio.run(run())
