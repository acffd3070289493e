"""The dispatcher's lanes with a fake endpoint, a virtual clock and a fake sink: order per
(endpoint, posting), retries on the schedule, dead letters, a dead endpoint beside a live
one, 410, deleted endpoints, the limits in flight. Milliseconds each."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import replace

from schemas.webhooks import WebhookEndpoint
from tests.unit.webhooks.fakes import START, Harness, event, queued, scenario
from webhooks.lanes import Attempt, Queued, Verdict


def failing(detail: str = "HTTP 503", retry_after_s: float | None = None):
    async def answer(_endpoint: WebhookEndpoint, _item: Queued, _now: int) -> Attempt:
        return Attempt(Verdict.RETRY, detail, retry_after_s)

    return answer


def down_until(until_ms: int):
    """An endpoint that refuses connections until `until_ms`, then answers 200."""

    async def answer(_endpoint: WebhookEndpoint, _item: Queued, now: int) -> Attempt:
        if now < until_ms:
            return Attempt(Verdict.RETRY, "ClientConnectorError: connection refused")
        return Attempt(Verdict.DELIVERED, "HTTP 200")

    return answer


def test_each_postings_events_go_out_in_order_and_postings_alongside():
    async def body(h: Harness):
        for n, posting in itertools.product(range(4), ("p1", "p2")):
            h.scheduler.add(queued("a", event(posting, n, START + n), offset=10 * n + int(posting[1])))
        await h.clock.run(lambda: len(h.outcomes.done) == 8)
        for posting in ("p1", "p2"):
            assert [v for p, v, _ in h.sender.delivered_to("a") if p == posting] == [0, 1, 2, 3]
        assert h.sender.most_in_flight == 2  # one per posting, both postings at once

    scenario(body)


def test_a_failing_head_holds_its_postings_later_events_until_it_is_delivered():
    async def body(h: Harness):
        h.sender.scripts["a"] = down_until(START + 4000)
        for n in range(3):
            h.scheduler.add(queued("a", event("p1", n, START + n), offset=n))
        await h.clock.run(lambda: len(h.outcomes.done) == 3)
        assert h.sender.delivered_to("a") == [("p1", 0, "listing.live")] * 2 + [
            ("p1", 1, "listing.live"),
            ("p1", 2, "listing.live"),
        ]
        [retry] = h.outcomes.retried
        assert (retry.attempts, retry.next_attempt_at, retry.last_error) == (
            1,
            START + 5000,
            "ClientConnectorError: connection refused",
        )

    scenario(body)


def test_the_schedule_is_followed_and_then_the_event_is_dead_lettered_and_the_next_proceeds():
    async def body(h: Harness):
        h.sender.scripts["a"] = failing()
        h.scheduler.add(queued("a", event("p1", 0, START), offset=0))
        h.scheduler.add(queued("a", event("p1", 1, START + 1), offset=1))
        await h.clock.run(lambda: len(h.outcomes.letters) == 2)
        starts = [t for t, _, _, v, _ in h.sender.sent if v == 0]
        assert [round((b - a) / 1000) for a, b in itertools.pairwise(starts)] == [5, 300, 1800]
        letter, error = h.outcomes.letters[0]
        assert (letter.event_id, letter.attempts, letter.first_attempt_at) == (
            event("p1", 0, START).event_id,
            4,
            START,
        )
        assert error == "4 attempts failed, the last: HTTP 503"
        assert [v for _, _, _, v, _ in h.sender.sent].index(1) == 4  # version 1 waited for version 0's letter

    scenario(body)


def test_retry_after_is_honoured_when_longer_than_the_schedule():
    async def body(h: Harness):
        answers = iter([Attempt(Verdict.RETRY, "HTTP 429", 60.0), Attempt(Verdict.DELIVERED, "HTTP 200")])

        async def throttled(_e: WebhookEndpoint, _i: Queued, _now: int) -> Attempt:
            return next(answers)

        h.sender.scripts["a"] = throttled
        h.scheduler.add(queued("a", event("p1", 0, START), offset=0))
        await h.clock.run(lambda: len(h.outcomes.done) == 1)
        assert [t - START for t, *_ in h.sender.sent] == [0, 60_000]

    scenario(body)


def test_a_dead_endpoint_never_delays_another_employers_events():
    async def body(h: Harness):
        h.sender.scripts["a"] = failing("no answer within 15 s")
        for n in range(20):
            h.scheduler.add(queued("a", event(f"p{n}", 0, START), offset=n))
            h.scheduler.add(queued("b", event(f"q{n}", 0, START, employer="globex"), offset=100 + n))
        await h.clock.run(lambda: sum(1 for k in h.outcomes.done if k.startswith("b/")) == 20, limit_ms=100)
        assert h.clock.now - START == 30  # b's 20 in three rounds of its 8 slots, none waited for a's
        assert h.scheduler.waiting() == {"a": 20}

    scenario(body)


def test_requests_in_flight_are_limited_per_endpoint_and_a_slow_one_holds_only_its_own():
    async def body(h: Harness):
        release = asyncio.Event()

        async def slow(_e: WebhookEndpoint, _i: Queued, _now: int) -> Attempt:
            await release.wait()
            return Attempt(Verdict.DELIVERED, "HTTP 200")

        h.sender.scripts["a"] = slow
        for n in range(10):
            h.scheduler.add(queued("a", event(f"p{n}", 0, START), offset=n))
        h.scheduler.add(queued("b", event("q", 0, START, employer="globex"), offset=99))
        b_key = "b/" + event("q", 0, START, employer="globex").event_id
        await h.clock.run(lambda: h.outcomes.done == [b_key], limit_ms=100)
        assert h.sender.in_flight == 2  # a's two slots held, its 8 other postings waiting for them
        release.set()
        await h.clock.run(lambda: len(h.outcomes.done) == 11)
        assert h.sender.most_in_flight == 3

    scenario(body, max_in_flight_per_endpoint=2, max_in_flight=4)


def test_410_disables_the_endpoint_and_its_waiting_events_go_to_its_dead_letters_unsent():
    async def body(h: Harness):
        async def gone(_e: WebhookEndpoint, _i: Queued, _now: int) -> Attempt:
            return Attempt(Verdict.GONE, "HTTP 410")

        h.sender.scripts["a"] = gone
        for n in range(3):
            h.scheduler.add(queued("a", event("p1", n, START + n), offset=n))
        await h.clock.run(lambda: len(h.outcomes.letters) == 3)
        assert len(h.sender.sent) == 1
        assert h.outcomes.disabled == [("a", "HTTP 410 Gone: the endpoint asked to be disabled")]
        assert [error for _, error in h.outcomes.letters][1:] == [
            "the endpoint is disabled: HTTP 410 Gone: the endpoint asked to be disabled"
        ] * 2

    scenario(body)


def test_a_deleted_endpoints_events_are_dropped_even_while_they_wait_for_a_retry():
    async def body(h: Harness):
        h.sender.scripts["a"] = failing()
        h.scheduler.add(queued("a", event("p1", 0, START), offset=0))
        h.scheduler.add(queued("a", event("p1", 1, START + 1), offset=1))
        await h.clock.run(lambda: len(h.outcomes.retried) == 1)
        del h.endpoints["a"]
        h.scheduler.wake("a")
        await h.clock.run(lambda: len(h.outcomes.done) == 2, limit_ms=1)
        assert len(h.sender.sent) == 1 and h.outcomes.letters == []

    scenario(body)


def test_two_sources_interleave_by_time_each_keeps_its_own_order():
    async def body(h: Harness):
        h.sender.scripts["a"] = down_until(START + 1)  # everything queues up behind the first
        accepted = [event("p1", v, START + 10 * v, kind="posting.accepted") for v in range(3)]
        live = [event("p1", v, START + 10 * v + 5) for v in range(3)]
        h.scheduler.add(queued("a", accepted[0], offset=0, source="postings"))
        await h.clock.settle()
        for v in (2, 1, 0):  # a board's events arrive late and all at once
            h.scheduler.add(queued("a", live[v], offset=v))
        for v in (1, 2):
            h.scheduler.add(queued("a", accepted[v], offset=v, source="postings"))
        await h.clock.run(lambda: len(h.outcomes.done) == 6)
        order = [(v, t) for _, v, t in h.sender.delivered_to("a")][1:]
        assert order == [(v, t) for v in range(3) for t in ("posting.accepted", "listing.live")]

    scenario(body)


def test_an_event_queued_twice_is_one_delivery():
    async def body(h: Harness):
        first = queued("a", event("p1", 0, START), offset=0)
        assert h.scheduler.add(first)
        assert not h.scheduler.add(first)
        await h.clock.run(lambda: len(h.outcomes.done) == 1)
        assert len(h.sender.sent) == 1

    scenario(body)


def test_a_delivery_restored_mid_schedule_keeps_its_attempts_and_due_time():
    async def body(h: Harness):
        h.sender.scripts["a"] = failing()
        item = queued("a", event("p1", 0, START), offset=0)
        resumed = replace(item, delivery=replace(item.delivery, attempts=3, next_attempt_at=START + 7000))
        h.scheduler.add(resumed)
        await h.clock.run(lambda: len(h.outcomes.letters) == 1)
        assert [t - START for t, *_ in h.sender.sent] == [7000]
        assert h.outcomes.letters[0][0].attempts == 4

    scenario(body)


def test_partitions_given_up_forget_their_lanes():
    async def body(h: Harness):
        h.sender.scripts["a"] = failing()
        h.scheduler.add(queued("a", event("p1", 0, START), offset=0, partition=1))
        h.scheduler.add(queued("a", event("p2", 0, START), offset=0, partition=2))
        await h.clock.settle()
        h.scheduler.drop_partitions({1})
        assert h.scheduler.waiting() == {"a": 1}
        assert not h.scheduler.queued(queued("a", event("p1", 0, START), offset=0).key)

    scenario(body)
