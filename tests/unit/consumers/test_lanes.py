"""The lanes over a real SharedDestination with a fake board, a virtual clock and a fake
sink: order, retries, superseding, restarts. Milliseconds each."""

import itertools

import pytest

from consumers.boards.base import Rejected, Unsure
from consumers.items import Item
from consumers.lanes import superseded_by
from consumers.retry import RetrySettings
from schemas.deliveries import DeliveryState
from schemas.enums import DeliveryStatus
from schemas.model import Destination
from schemas.redrive import RedriveRequest
from tests.unit.consumers.fakes import Harness, item, scenario, update


def test_a_postings_versions_go_out_in_order_others_alongside_in_one_batch():
    async def body(h: Harness):
        for version in range(5):
            h.add(item("a", version, offset=2 * version), item("b", version, offset=2 * version + 1))
        await h.settle(10)
        assert h.board.sent("a") == [0, 1, 2, 3, 4]
        assert h.board.sent("b") == [0, 1, 2, 3, 4]
        assert all(sorted(p for p, _ in elements) == ["a", "b"] for _, elements in h.board.calls)
        assert (h.state("a").status, h.state("a").delivered_version) == (DeliveryStatus.DELIVERED, 4)

    scenario(body)


def test_a_batch_never_carries_two_versions_of_one_posting():
    async def body(h: Harness):
        for version in range(3):
            for n in range(30):
                h.add(item(f"p{n}", version, offset=version * 30 + n))
        await h.settle(90)
        for _, elements in h.board.calls:
            postings = [p for p, _ in elements]
            assert len(postings) == len(set(postings))
        assert len(h.board.calls) == 3  # 30 postings a call, one call per version

    scenario(body)


def test_the_limit_counts_calls_in_flight():
    async def body(h: Harness):
        for n in range(10):
            h.add(item(f"p{n}", 0, offset=n))
        await h.settle(10)
        assert h.board.most_in_flight == 3
        assert len(h.board.calls) == 10

    scenario(body, max_in_flight=3, max_batch=1)


def test_retry_waits_follow_the_policy_and_the_version_is_delivered_after():
    async def body(h: Harness):
        h.board.elements[("a", 0)] = [Unsure("503")] * 4
        h.add(item("a", 0))
        await h.settle(1)
        starts = [t for t, _ in h.board.calls]
        gaps = [round((b - a) / 1000) for a, b in itertools.pairwise(starts)]
        assert gaps == [3, 6, 12, 24]
        final = h.state("a")
        assert (final.status, final.attempts, final.delivered_version) == (DeliveryStatus.DELIVERED, 5, 0)
        assert h.outcomes.timeline("a") == [(0, "RETRYING", n) for n in (1, 2, 3, 4)] + [(0, "DELIVERED", 5)]
        first_retry = h.outcomes.events[0]
        assert (first_retry.error, first_retry.next_attempt_at) == ("503", first_retry.at + 3000)

    scenario(body, retry=RetrySettings())


def test_a_failing_posting_holds_no_call():
    async def body(h: Harness):
        h.board.elements[("stuck", 0)] = [Unsure("503")] * 50
        h.add(item("stuck", 0, offset=0), *(item(f"fine{n}", 0, offset=n + 1) for n in range(5)))
        await h.clock.run(lambda: all(h.board.sent(f"fine{n}") == [0] for n in range(5)), 60_000)

    scenario(body, max_in_flight=1, max_batch=1)


def test_a_rejection_is_dead_lettered_and_later_versions_proceed():
    async def body(h: Harness):
        h.board.elements[("a", 1)] = [Rejected("400 bad title")]
        h.add(*(item("a", v) for v in range(3)))
        await h.settle(3)
        assert h.outcomes.letters == [("a", 1, "400 bad title", 1)]
        assert h.board.sent("a") == [0, 1, 2]
        assert h.state("a").delivered_version == 2
        assert h.state("a").unresolved_letters == ()  # v2 delivered resolves the letter of v1
        assert h.outcomes.timeline("a") == [(0, "DELIVERED", 1), (1, "DEAD_LETTERED", 1), (2, "DELIVERED", 1)]

    scenario(body)


def test_a_dead_letter_stays_unresolved_until_a_version_at_or_above_it_is_delivered():
    async def body(h: Harness):
        h.board.elements[("a", 0)] = [Rejected("400")]
        h.add(item("a", 0))
        await h.settle(1)
        (letter,) = h.state("a").unresolved_letters
        assert letter.version == 0 and letter.dead_lettered_at == h.clock.now

    scenario(body)


def test_a_spent_budget_is_dead_lettered():
    async def body(h: Harness):
        h.board.elements[("a", 0)] = [Unsure("503")] * 10
        h.add(item("a", 0))
        await h.settle(1)
        assert h.outcomes.letters == [("a", 0, "retries spent: 503", 3)]
        assert h.state("a").status == DeliveryStatus.FAILED

    scenario(body, retry=RetrySettings(max_attempts=3))


def test_a_delete_supersedes_a_queued_update_and_cuts_retries_short():
    async def body(h: Harness):
        h.board.elements[("a", 1)] = [Unsure("later", retry_after_s=600)] * 100
        h.add(item("a", 1))
        await h.clock.run(lambda: h.board.sent("a") == [1], 10_000)
        h.add(item("a", 2), item("a", 3, "DELETED"), Item("a", None, 0, 4))  # and the tombstone
        await h.settle(4, limit_ms=10_000)
        assert h.board.sent("a") == [1, 3]  # 2 never sent: the delete superseded it
        assert h.state("a").status == DeliveryStatus.CLOSED
        assert [i.offset for i in h.finished] == [1, 2, 3, 4]
        settled = [(v, o) for v, o, _ in h.outcomes.timeline("a") if o != "RETRYING"]
        assert settled == [(1, "SKIPPED"), (2, "SKIPPED"), (3, "CLOSED")]

    scenario(body)


def test_a_restarted_consumer_resumes_the_stored_budget():
    async def body(h: Harness):
        first = h.clock.now - 30_000
        h.outcomes.latest["a"] = DeliveryState(
            Destination.LINKEDIN,
            "a",
            DeliveryStatus.RETRYING,
            delivered_version=0,
            pending_version=1,
            attempts=5,
            first_attempt_at=first,
            next_attempt_at=h.clock.now + 10_000,
        )
        h.board.elements[("a", 1)] = [Unsure("503")]
        start = h.clock.now
        h.add(item("a", 0), item("a", 1))  # version 0 is replayed after the restart: skipped
        await h.settle(2)
        (first_call, _), (second_call, _) = h.board.calls
        assert first_call - start == pytest.approx(10_000, abs=20)  # the stored next attempt
        assert second_call - first_call == pytest.approx(60_000, abs=20)  # the 6th failure waits 60 s
        assert h.board.sent("a") == [1, 1]
        assert (h.state("a").first_attempt_at, h.state("a").attempts) == (first, 7)

    scenario(body, retry=RetrySettings())


def test_a_version_already_dead_lettered_is_not_sent_again_after_a_restart():
    async def body(h: Harness):
        h.outcomes.latest["a"] = DeliveryState(
            Destination.LINKEDIN, "a", DeliveryStatus.FAILED, delivered_version=0, pending_version=1
        )
        h.add(item("a", 1), item("a", 2))
        await h.settle(2)
        assert h.board.sent("a") == [2]

    scenario(body)


def test_a_rebalance_drops_unfinished_work_of_lost_partitions_only():
    async def body(h: Harness):
        h.board.elements[("lost", 0)] = [Unsure("503")] * 100
        h.add(item("lost", 0, partition=1), item("kept", 0, partition=2))
        await h.clock.run(lambda: bool(h.finished), 10_000)
        h.scheduler.drop_partitions({1})
        assert [i.posting_id for i in h.finished] == ["kept"]
        assert "lost" not in h.scheduler.lanes

    scenario(body)


def test_conflation_sends_only_the_newest_queued_version_and_skips_the_others():
    async def body(h: Harness):
        h.add(*(item("a", v) for v in range(1, 6)), *(item("b", v, offset=10 + v) for v in range(1, 3)))
        await h.settle(7)
        assert h.board.sent("a") == [5] and h.board.sent("b") == [2]
        skipped = [(v, o) for v, o, _ in h.outcomes.timeline("a")]
        assert skipped == [(1, "SKIPPED"), (2, "SKIPPED"), (3, "SKIPPED"), (4, "SKIPPED"), (5, "DELIVERED")]
        assert h.outcomes.events[0].error == "superseded by v5, queued behind it"

    scenario(body, conflate=True)


def test_conflation_keeps_the_version_that_creates_the_posting():
    async def body(h: Harness):
        h.add(*(item("a", v) for v in range(4)))
        await h.settle(4)
        assert h.board.sent("a") == [0, 3]

    scenario(body, conflate=True)


def test_conflation_never_skips_a_delete_nor_the_create_it_closes():
    async def body(h: Harness):
        h.add(item("a", 0), item("a", 1, "DELETED"), Item("a", None, 0, 2))
        await h.settle(3)
        assert h.board.sent("a") == [0, 1]  # LinkedIn refuses to close a job it never created
        assert h.state("a").status == DeliveryStatus.CLOSED

    scenario(body, conflate=True)


def test_without_conflation_every_version_is_sent():
    async def body(h: Harness):
        h.add(*(item("a", v) for v in range(5)))
        await h.settle(5)
        assert h.board.sent("a") == [0, 1, 2, 3, 4]

    scenario(body)


def redrive(version: int) -> Item:
    request = RedriveRequest("r", "a", version, b"", 0, 0, "ops", 0)
    return Item("a", update("a", version), 0, 9, request=request)


def test_a_delete_supersedes_all_but_the_created_version_a_newer_version_only_a_redrive():
    later_update, later_delete = [item("a", 3)], [item("a", 3, "DELETED")]
    assert superseded_by(item("a", 2), later_update) is None  # taken up, it goes (conflation is before)
    assert superseded_by(item("a", 2), later_delete) == 3
    assert superseded_by(item("a", 0), later_delete) is None  # a board closes what it created
    assert superseded_by(item("a", 3, "DELETED"), []) is None
    assert superseded_by(item("a", 2), [redrive(1)]) is None  # a request is no newer version
    assert superseded_by(redrive(1), [item("a", 2)]) == 2
