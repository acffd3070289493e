"""The lane scheduler with a fake board, a fake clock and a fake sink: milliseconds each."""

import asyncio

import pytest

from consumers.errors import RejectedError, RetryableError
from consumers.lanes import Item, LaneScheduler
from consumers.retry import RetryPolicy
from schemas.events import DeliveryEvent
from schemas.model import DeliveryState, DeliveryStatus, Destination, Op, Posting, PostingUpdate

SNAPSHOT = Posting("Engineer", "d", "")


def item(posting_id: str, version: int, op: str = "UPDATED", offset: int | None = None, partition=0) -> Item:
    update = PostingUpdate(posting_id, version, Op(op), f"{posting_id}:{version}", "r", SNAPSHOT, 1, 1)
    return Item(posting_id, update, partition, offset if offset is not None else version)


class FakeClock:
    """Virtual time: a sleep moves it forward at once, unless the lane was woken first."""

    def __init__(self) -> None:
        self.now = 1_000_000
        self.sleeps: list[float] = []

    def now_ms(self) -> int:
        return self.now

    async def sleep(self, seconds: float, wake: asyncio.Event) -> None:
        self.sleeps.append(seconds)
        await asyncio.sleep(0)
        if not wake.is_set():
            self.now += int(seconds * 1000)


class FakeBoard:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []
        self.failures: dict[tuple[str, int], list[Exception]] = {}  # raised in turn, then success
        self.in_flight = 0
        self.most_in_flight = 0
        self.gate: asyncio.Event | None = None

    async def _call(self, kind: str, update: PostingUpdate) -> None:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.gate is not None:
                await self.gate.wait()
            await asyncio.sleep(0)
            self.calls.append((kind, update.posting_id, update.version))
            pending = self.failures.get((update.posting_id, update.version))
            if pending:
                raise pending.pop(0)
        finally:
            self.in_flight -= 1

    async def upsert(self, update: PostingUpdate) -> None:
        await self._call("upsert", update)

    async def close(self, update: PostingUpdate) -> None:
        await self._call("close", update)

    def applied(self, posting_id: str) -> list[int]:
        """Versions the board was called with, failed calls included."""
        return [v for _, p, v in self.calls if p == posting_id]


class FakeOutcomes:
    """Keeps what it is given, and (as the runner's store does) each posting's latest state
    where the scheduler reads it."""

    def __init__(self, latest: dict[str, DeliveryState]) -> None:
        self.states: list[DeliveryState] = []
        self.letters: list[tuple[str, int, str, int]] = []
        self.events: list[DeliveryEvent] = []
        self.latest = latest

    async def record(self, item: Item, state: DeliveryState) -> None:
        await asyncio.sleep(0)
        self.states.append(state)
        self.latest[state.posting_id] = state

    async def dead_letter(self, item: Item, error: str, attempts: int, first_attempt_ms: int) -> None:
        await asyncio.sleep(0)
        self.letters.append((item.posting_id, item.version, error, attempts))

    def event(self, item: Item, event: DeliveryEvent) -> None:
        self.events.append(event)

    def timeline(self, posting_id: str) -> list[tuple[int, str, int]]:
        """(version, outcome, attempt) of each event of the posting, in order."""
        return [(e.version, e.outcome, e.attempt) for e in self.events if e.posting_id == posting_id]


class Harness:
    def __init__(self, max_in_flight: int = 32, policy: RetryPolicy | None = None) -> None:
        self.board = FakeBoard()
        self.clock = FakeClock()
        self.states: dict[str, DeliveryState] = {}
        self.outcomes = FakeOutcomes(self.states)
        self.finished: list[Item] = []
        self.scheduler = LaneScheduler(
            Destination.LINKEDIN, self.board, self.outcomes, self.states, self.finished.append,
            policy=policy, clock=self.clock, max_in_flight=max_in_flight,
        )  # fmt: skip

    async def settle(self, expected_finished: int) -> None:
        for _ in range(10_000):
            if len(self.finished) >= expected_finished and not self.scheduler.lanes:
                return
            await asyncio.sleep(0)
        raise AssertionError(f"finished {len(self.finished)} of {expected_finished}")

    def last_state(self, posting_id: str) -> DeliveryState:
        return [s for s in self.outcomes.states if s.posting_id == posting_id][-1]


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 5))


def test_a_postings_versions_go_out_in_order_others_alongside():
    async def scenario():
        h = Harness()
        for version in range(5):
            h.scheduler.add(item("a", version, "CREATED" if version == 0 else "UPDATED", offset=2 * version))
            h.scheduler.add(item("b", version, offset=2 * version + 1))
        await h.settle(10)
        assert h.board.applied("a") == [0, 1, 2, 3, 4]
        assert h.board.applied("b") == [0, 1, 2, 3, 4]
        last = h.last_state("a")
        assert (last.status, last.delivered_version) == (DeliveryStatus.DELIVERED, 4)
        assert h.board.most_in_flight == 2  # one call per posting at a time, both postings at once

    run(scenario())


def test_the_limit_counts_calls_in_flight():
    async def scenario():
        h = Harness(max_in_flight=3)
        h.board.gate = asyncio.Event()
        for n in range(10):
            h.scheduler.add(item(f"p{n}", 0, "CREATED", offset=n))
        for _ in range(50):
            await asyncio.sleep(0)
        assert h.board.in_flight == 3
        h.board.gate.set()
        await h.settle(10)
        assert h.board.most_in_flight == 3

    run(scenario())


def test_retry_waits_follow_the_policy_and_the_version_is_delivered_after():
    async def scenario():
        h = Harness()
        h.board.failures[("a", 0)] = [RetryableError("503")] * 4
        h.scheduler.add(item("a", 0, "CREATED"))
        await h.settle(1)
        assert h.clock.sleeps == [3, 6, 12, 24]
        assert h.board.applied("a") == [0] * 5
        final = h.last_state("a")
        assert (final.status, final.attempts, final.delivered_version) == (DeliveryStatus.DELIVERED, 5, 0)
        assert final.destination == Destination.LINKEDIN
        retrying = [s for s in h.outcomes.states if s.status == DeliveryStatus.RETRYING]
        assert [s.attempts for s in retrying] == [1, 2, 3, 4]
        assert retrying[0].last_error == "503"
        # The timeline sees every attempt, each retry with when the next one is due.
        assert h.outcomes.timeline("a") == [(0, "RETRYING", n) for n in (1, 2, 3, 4)] + [(0, "DELIVERED", 5)]
        first_retry = h.outcomes.events[0]
        assert (first_retry.error, first_retry.next_attempt_at) == ("503", first_retry.at + 3000)

    run(scenario())


def test_a_failing_posting_holds_no_worker():
    async def scenario():
        h = Harness(max_in_flight=1)
        h.board.failures[("stuck", 0)] = [RetryableError("503")] * 50
        h.scheduler.add(item("stuck", 0, "CREATED", offset=0))
        for n in range(5):
            h.scheduler.add(item(f"fine{n}", 0, "CREATED", offset=n + 1))
        for _ in range(2000):
            if all(h.board.applied(f"fine{n}") for n in range(5)):
                break
            await asyncio.sleep(0)
        assert all(h.board.applied(f"fine{n}") == [0] for n in range(5))
        h.scheduler.close()

    run(scenario())


def test_a_rejection_is_dead_lettered_and_later_versions_proceed():
    async def scenario():
        h = Harness()
        h.board.failures[("a", 1)] = [RejectedError("400 bad title")]
        for version in range(3):
            h.scheduler.add(item("a", version, "CREATED" if version == 0 else "UPDATED"))
        await h.settle(3)
        assert h.outcomes.letters == [("a", 1, "400 bad title", 1)]
        assert h.board.applied("a") == [0, 1, 2]
        assert h.last_state("a").delivered_version == 2
        assert h.outcomes.timeline("a") == [(0, "DELIVERED", 1), (1, "DEAD_LETTERED", 1), (2, "DELIVERED", 1)]

    run(scenario())


def test_a_spent_budget_is_dead_lettered():
    async def scenario():
        from consumers.retry import RetrySettings

        h = Harness(policy=RetryPolicy(RetrySettings(max_attempts=3)))
        h.board.failures[("a", 0)] = [RetryableError("503")] * 10
        h.scheduler.add(item("a", 0, "CREATED"))
        await h.settle(1)
        assert h.outcomes.letters == [("a", 0, "retries spent: 503", 3)]
        assert h.last_state("a").status == DeliveryStatus.FAILED

    run(scenario())


@pytest.mark.parametrize("surprise", [KeyError("elements"), ValueError("bad"), AttributeError("x")])
def test_an_unexpected_exception_is_a_retried_attempt_not_a_dead_lane(surprise):
    async def scenario():
        h = Harness()
        h.board.failures[("a", 0)] = [surprise]
        h.scheduler.add(item("a", 0, "CREATED"))
        h.scheduler.add(item("a", 1))
        await h.settle(2)
        assert h.board.applied("a") == [0, 0, 1]
        retry = next(s for s in h.outcomes.states if s.status == DeliveryStatus.RETRYING)
        assert type(surprise).__name__ in (retry.last_error or "")

    run(scenario())


def test_a_delete_supersedes_a_queued_update_and_cuts_retries_short():
    async def scenario():
        h = Harness()
        h.board.failures[("a", 1)] = [RetryableError("429", retry_after_s=600)] * 100
        h.scheduler.add(item("a", 1))
        for _ in range(20):
            await asyncio.sleep(0)
        h.scheduler.add(item("a", 2))
        h.scheduler.add(item("a", 3, "DELETED"))
        h.scheduler.add(Item("a", None, 0, 4))  # the tombstone
        await h.settle(4)
        assert h.board.calls[-1] == ("close", "a", 3)
        assert 2 not in h.board.applied("a")
        assert h.last_state("a").status == DeliveryStatus.CLOSED
        assert [i.offset for i in h.finished] == [1, 2, 3, 4]
        settled = [(v, o) for v, o, _ in h.outcomes.timeline("a") if o != "RETRYING"]
        assert settled[-2:] == [(2, "SKIPPED"), (3, "CLOSED")]  # 2 never sent: the delete superseded it

    run(scenario())


def test_a_restarted_consumer_resumes_the_stored_budget():
    async def scenario():
        h = Harness()
        first = h.clock.now - 30_000
        h.states["a"] = DeliveryState(
            Destination.LINKEDIN, "a", DeliveryStatus.RETRYING, delivered_version=0, pending_version=1,
            attempts=5, first_attempt_at=first, next_attempt_at=h.clock.now + 10_000,
        )  # fmt: skip
        h.board.failures[("a", 1)] = [RetryableError("503")]
        h.scheduler.add(item("a", 0, "CREATED"))  # replayed after the restart: skipped
        h.scheduler.add(item("a", 1))
        await h.settle(2)
        assert h.clock.sleeps[0] == pytest.approx(10.0)  # the stored next attempt, not a fresh start
        assert h.clock.sleeps[1] == 60  # the 6th failure waits 60 s (3, 6, 12, 24, 48, 60)
        assert h.board.applied("a") == [1, 1]
        assert h.last_state("a").first_attempt_at == first
        assert h.last_state("a").attempts == 7

    run(scenario())


def test_a_version_already_dead_lettered_is_not_sent_again_after_a_restart():
    async def scenario():
        h = Harness()
        h.states["a"] = DeliveryState(
            Destination.LINKEDIN, "a", DeliveryStatus.FAILED, delivered_version=0, pending_version=1
        )
        h.scheduler.add(item("a", 1))
        h.scheduler.add(item("a", 2))
        await h.settle(2)
        assert h.board.applied("a") == [2]

    run(scenario())


def test_a_rebalance_drops_unfinished_work_of_lost_partitions_only():
    async def scenario():
        h = Harness()
        h.board.failures[("lost", 0)] = [RetryableError("503")] * 100
        h.scheduler.add(item("lost", 0, "CREATED", partition=1))
        h.scheduler.add(item("kept", 0, "CREATED", partition=2))
        for _ in range(50):
            await asyncio.sleep(0)
        h.scheduler.drop_partitions({1})
        await h.settle(1)
        assert [i.posting_id for i in h.finished] == ["kept"]
        assert "lost" not in h.scheduler.lanes

    run(scenario())
