"""The destination under daily caps, through the lanes, with a fake board and a virtual
clock: never a call beyond a cap, the lanes paused with the reason until the reset, nothing
charged to any posting, every version in order after it."""

from consumers.destination import metrics
from consumers.destination.access import A_SEND, A_TASK_POLL, BoardAccess
from consumers.destination.budget import RateBudget
from consumers.destination.circuit import Circuit
from consumers.destination.quota import DailyQuota, QuotaKind
from schemas.enums import DeliveryStatus
from schemas.model import Destination
from tests.unit.consumers.fakes import FakeTokens, Harness, item, scenario

DAY_MS = 60_000  # a scaled day: the virtual clock starts at 1,000,000 ms, the first reset is at 1,020,000
FIRST_RESET = 1_020_000


def per_day(calls: list[tuple[int, int]]) -> dict[int, int]:
    """Records (or calls) per day of the scaled clock."""
    days: dict[int, int] = {}
    for at, n in calls:
        days[at // DAY_MS] = days.get(at // DAY_MS, 0) + n
    return days


def test_a_daily_cap_of_records_pauses_every_lane_until_the_reset_then_every_version_goes_in_order():
    async def body(h: Harness):
        postings = ["a", "b", "c"]
        for version in range(4):
            h.add(*(item(p, version, offset=version * 3 + n) for n, p in enumerate(postings)))
        await h.clock.run(lambda: any(s.status == DeliveryStatus.PAUSED for s in h.outcomes.states))
        assert h.clock.now < FIRST_RESET
        paused = next(s for s in h.outcomes.states if s.status == DeliveryStatus.PAUSED)
        assert (paused.paused_reason or "").startswith("daily quota: 5 records a day used")
        assert (paused.paused_reason or "").endswith("calls resume at the reset, 1970-01-01T00:17:00Z")
        assert paused.next_attempt_at == FIRST_RESET
        await h.settle(12, limit_ms=10 * DAY_MS)

        records = per_day([(t, len(e)) for t, e in h.board.calls])
        assert list(records.values()) == [5, 5, 2]  # never beyond the cap, the next day's at its reset
        assert FIRST_RESET <= min(t for t, _ in h.board.calls if t >= FIRST_RESET) < FIRST_RESET + 100
        for posting_id in postings:
            assert h.board.sent(posting_id) == [0, 1, 2, 3]
            assert h.state(posting_id).delivered_version == 3
        assert h.outcomes.letters == []
        # The hold charged nobody: each version one attempt.
        delivered = [s for s in h.outcomes.states if s.status == DeliveryStatus.DELIVERED]
        assert delivered and all(s.attempts == 1 for s in delivered)
        assert h.destination.access.quota.used(QuotaKind.RECORDS, h.clock.now) == 2

    scenario(body, quota=DailyQuota({QuotaKind.RECORDS: 5}, day_ms=DAY_MS))


def test_a_version_queued_during_the_hold_shows_paused_at_once():
    async def body(h: Harness):
        h.add(item("a", 0), item("b", 0))
        await h.clock.run(lambda: "b" in h.outcomes.latest and h.state("b").status == DeliveryStatus.PAUSED)
        h.add(item("late", 0))
        await h.clock.run(lambda: "late" in h.outcomes.latest)
        late = h.state("late")
        assert late.status == DeliveryStatus.PAUSED and (late.paused_reason or "").startswith("daily quota")
        assert late.next_attempt_at == FIRST_RESET
        await h.settle(3, limit_ms=10 * DAY_MS)
        assert h.board.sent("late") == [0]

    scenario(body, quota=DailyQuota({QuotaKind.RECORDS: 1}, day_ms=DAY_MS))


def test_a_daily_cap_of_requests_holds_the_sending_too():
    async def body(h: Harness):
        h.add(*(item(f"p{n}", 0, offset=n) for n in range(6)))
        await h.settle(6, limit_ms=10 * DAY_MS)
        calls = per_day([(t, 1) for t, _ in h.board.calls])
        assert max(calls.values()) <= 2

    scenario(body, quota=DailyQuota({QuotaKind.REQUESTS: 2}, day_ms=DAY_MS), max_batch=1)


def test_task_status_polls_stay_within_their_daily_cap_and_every_task_is_confirmed():
    async def body(h: Harness):
        h.board.task_delay_ms = 5_000
        h.add(*(item(f"p{n}", v, offset=v * 60 + n) for v in range(2) for n in range(60)))
        await h.settle(120, limit_ms=20 * DAY_MS)
        polls = per_day([(t, -(-len(ids) // h.board.tasks_per_call)) for t, ids in h.board.polls])
        assert max(polls.values()) <= 4, polls
        assert h.outcomes.letters == []
        assert all(h.board.sent(f"p{n}") == [0, 1] for n in range(60))  # no task timed out and sent again

    scenario(body, confirms=True, quota=DailyQuota({QuotaKind.TASK_STATUS_CALLS: 4}, day_ms=DAY_MS))


def test_a_hold_of_task_polls_leaves_the_sending_free_and_is_counted_once_per_reset():
    quota = DailyQuota({QuotaKind.TASK_STATUS_CALLS: 1}, day_ms=DAY_MS)
    access = BoardAccess(Destination.LINKEDIN, FakeTokens(), RateBudget(None, None), Circuit(), quota)
    holds = metrics.DAILY_QUOTA_HOLDS.labels(Destination.LINKEDIN)
    before = holds._value.get()
    now = FIRST_RESET - 10_000
    assert access.held_for_the_day(now, A_TASK_POLL) == 0
    access.spend(now, 0, A_TASK_POLL)
    assert access.held_for_the_day(now, A_TASK_POLL) == 10_000
    assert access.held_for_the_day(now + 1_000, A_TASK_POLL) == 9_000
    assert holds._value.get() == before + 1  # one hold, however often it is asked about
    assert access.held_for_the_day(now, A_SEND) == 0 and access.hold(now) is None  # versions still go
    assert access.held_for_the_day(FIRST_RESET, A_TASK_POLL) == 0
