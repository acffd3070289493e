"""A redrive request in its posting's lane: skipped when the board has that version or a
newer one (or the lane does), otherwise attempted once more with a fresh budget; never a
lower `delivered_version`."""

from consumers.boards.base import Rejected, Unsure
from consumers.items import Item
from consumers.retry import RetrySettings
from schemas import codec
from schemas.deliveries import DeliveryState, UnresolvedLetter
from schemas.enums import DeliveryStatus
from schemas.model import Destination
from schemas.redrive import RedriveRequest
from tests.unit.consumers.fakes import Harness, item, scenario, update


def redrive(posting_id: str, version: int, offset: int = 100) -> Item:
    letter = update(posting_id, version)
    request = RedriveRequest(
        f"req-{posting_id}-{version}",
        posting_id,
        version,
        codec.posting_updates().encode(letter),
        0,
        7,
        "ops",
        1,
    )
    return Item(posting_id, letter, 0, offset, request=request)


def failed_at(version: int, delivered: int | None, attempts: int = 100) -> DeliveryState:
    return DeliveryState(
        Destination.LINKEDIN,
        "a",
        DeliveryStatus.FAILED,
        delivered_version=delivered,
        pending_version=version,
        attempts=attempts,
        finished_version=version,
        unresolved_letters=(UnresolvedLetter(version, 5),),
    )


def test_a_letter_nothing_superseded_is_attempted_with_a_fresh_budget_and_resolved():
    async def body(h: Harness):
        h.outcomes.latest["a"] = failed_at(1, delivered=0)
        h.board.elements[("a", 1)] = [Unsure("503")]
        h.add(redrive("a", 1))
        await h.settle(1)
        assert h.board.sent("a") == [1, 1]
        state = h.state("a")
        assert (state.status, state.delivered_version, state.attempts) == (DeliveryStatus.DELIVERED, 1, 2)
        assert state.unresolved_letters == ()
        assert {e.request_id for e in h.outcomes.events} == {"req-a-1"}
        assert [o for _, o, _ in h.outcomes.timeline("a")] == ["RETRYING", "DELIVERED"]

    scenario(body)


def test_a_letter_whose_version_or_a_newer_one_was_delivered_is_skipped_without_a_call():
    async def body(h: Harness):
        h.outcomes.latest["a"] = DeliveryState(
            Destination.LINKEDIN, "a", DeliveryStatus.DELIVERED, delivered_version=3, finished_version=3
        )
        h.add(redrive("a", 1))
        await h.settle(1)
        assert h.board.calls == []
        (event,) = h.outcomes.events
        assert (event.outcome, event.request_id) == ("SKIPPED", "req-a-1")
        assert event.error == "redrive: superseded: version 3 is delivered"
        assert h.state("a").delivered_version == 3

    scenario(body)


def test_a_letter_below_a_version_the_lane_finished_is_skipped():
    async def body(h: Harness):
        h.outcomes.latest["a"] = failed_at(2, delivered=0)
        h.add(redrive("a", 1))
        await h.settle(1)
        assert h.board.calls == []
        assert "the lane finished version 2" in (h.outcomes.events[0].error or "")

    scenario(body)


def test_a_letter_with_a_newer_version_queued_or_on_its_way_is_skipped():
    async def body(h: Harness):
        h.outcomes.latest["a"] = failed_at(1, delivered=0)
        h.board.elements[("a", 2)] = [Unsure("503")] * 3
        h.add(item("a", 2, offset=10))
        await h.clock.run(lambda: h.board.sent("a") == [2], 10_000)
        h.add(redrive("a", 1), item("a", 3, offset=11))
        await h.settle(3)
        assert h.board.sent("a") == [2, 2, 2, 2, 3]  # never 1 after 2
        skip = next(e for e in h.outcomes.events if e.request_id == "req-a-1")
        assert skip.outcome == "SKIPPED"
        assert h.state("a").delivered_version == 3

    scenario(body)


def test_a_redrive_refused_again_is_dead_lettered_again_and_keeps_its_first_time():
    async def body(h: Harness):
        h.outcomes.latest["a"] = failed_at(1, delivered=0)
        h.board.elements[("a", 1)] = [Rejected("400 still bad")]
        h.add(redrive("a", 1))
        await h.settle(1)
        assert h.outcomes.letters == [("a", 1, "400 still bad", 1)]
        assert h.state("a").unresolved_letters == (UnresolvedLetter(1, 5),)
        assert h.outcomes.events[-1].outcome == "DEAD_LETTERED"

    scenario(body)


def test_the_redrive_of_a_delete_closes_the_posting():
    async def body(h: Harness):
        h.outcomes.latest["a"] = failed_at(4, delivered=3)
        request = redrive("a", 4)
        deleted = Item("a", update("a", 4, "DELETED"), 0, 100, request=request.request)
        h.add(deleted)
        await h.settle(1)
        assert h.state("a").status == DeliveryStatus.CLOSED

    scenario(body, retry=RetrySettings(max_attempts=1))
