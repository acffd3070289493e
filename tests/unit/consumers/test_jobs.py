"""The job at the board, through the lanes, with a fake board and a virtual clock: what is
sent follows from what the board holds (CREATE until it holds the job, UPDATE after, CLOSE
only what it holds, nothing to a board a posting leaves out), a repeat is read in the board's
own terms, the first listing date stays the first, and the job is followed between versions
(its status read back, its expiry, its renewal)."""

from __future__ import annotations

import dataclasses

from consumers.boards.base import (
    BoardListing,
    Delivered,
    Operation,
    Rejected,
    TaskFailure,
    TaskOutcome,
    TaskState,
    Unsure,
)
from consumers.items import Item
from consumers.job_rules import JobTerms
from schemas.deliveries import BoardJob, DeliveryState
from schemas.enums import DeliveryStatus, JobHeld, ListingStatus
from schemas.model import Destination, Op, PostingUpdate
from tests import postings
from tests.unit.consumers.fakes import Harness, scenario

DUPLICATE = (
    "Job processing failed due to a client-side error. ... Trying to create a job with same "
    "partnerIdentifier already exists. ... LinkedIn job id: 4200000009, externalJobPostingId: a"
)


def version(posting_id: str, number: int, op: Op | None = None, at: int = 1_000, **changes: object) -> Item:
    kind = op or (Op.CREATED if number == 0 else Op.UPDATED)
    update = PostingUpdate(
        posting_id, number, kind, f"{posting_id}:{number}", "r", postings.posting(number, **changes), at, at
    )
    return Item(posting_id, update, 0, number)


def test_a_refused_create_is_followed_by_a_create_of_the_corrected_version_then_updates():
    async def body(h: Harness):
        refused = TaskOutcome(TaskState.FAILED, "Job {…} was dropped: true\n\nInvalid Field: /city; ")
        fine = TaskOutcome(TaskState.SUCCEEDED, job_id="urn:li:jobPosting:7")
        h.board.task_outcome = lambda _p, v: refused if v == 0 else fine
        h.add(version("a", 0), version("a", 1), version("a", 2))
        await h.settle(3)
        assert h.board.ops("a") == ["CREATE", "CREATE", "UPDATE"]
        assert [letter[1] for letter in h.outcomes.letters] == [0]
        job = h.state("a").job
        assert job is not None and (job.held, job.job_id, job.status) == (
            JobHeld.OPEN,
            "urn:li:jobPosting:7",
            ListingStatus.RECEIVED,
        )
        rejected = [c for c in h.outcomes.changes if c.type == "listing.refused"]
        assert (
            rejected
            and rejected[0].job is not None
            and "Invalid Field: /city" in (rejected[0].job.reason or "")
        )

    scenario(body, confirms=True)


def test_a_create_the_board_holds_already_goes_again_as_an_update_uncharged():
    async def body(h: Harness):
        answers = iter(
            [TaskOutcome(TaskState.FAILED, DUPLICATE, "urn:li:jobPosting:4200000009", TaskFailure.JOB_EXISTS)]
        )
        h.board.task_outcome = lambda _p, _v: next(answers, TaskOutcome(TaskState.SUCCEEDED))
        h.add(version("a", 0))
        await h.settle(1)
        assert h.board.ops("a") == ["CREATE", "UPDATE"]
        assert h.outcomes.letters == []  # the board's identity of the job: no failure
        state = h.state("a")
        assert (state.status, state.delivered_version, state.attempts) == (DeliveryStatus.DELIVERED, 0, 1)
        assert state.job is not None and state.job.job_id == "urn:li:jobPosting:4200000009"

    scenario(body, confirms=True)


def test_an_update_of_a_job_the_board_does_not_hold_goes_as_a_create():
    async def body(h: Harness):
        # A state from before v3: a delivered version, so an open job whose id is unknown.
        h.outcomes.latest["a"] = DeliveryState(Destination.LINKEDIN, "a", DeliveryStatus.DELIVERED, 0)
        missing = TaskOutcome(
            TaskState.FAILED, "… is not allowed for a non-existing job …", failure=TaskFailure.NO_JOB
        )
        answers = iter([missing])
        h.board.task_outcome = lambda _p, _v: next(
            answers, TaskOutcome(TaskState.SUCCEEDED, job_id="urn:li:jobPosting:1")
        )
        h.add(version("a", 1))
        await h.settle(1)
        assert h.board.ops("a") == ["UPDATE", "CREATE"]
        assert h.outcomes.letters == [] and h.state("a").job.held == JobHeld.OPEN  # type: ignore[union-attr]

    scenario(body, confirms=True)


def test_a_board_a_posting_leaves_out_never_hears_of_it_and_its_job_closes_when_a_version_drops_it():
    indeed_only = (Destination.INDEED,)

    async def body(h: Harness):
        h.add(version("a", 0, boards=indeed_only))
        await h.settle(1)
        assert h.board.ops("a") == []
        assert (h.state("a").status, h.state("a").delivered_version) == (DeliveryStatus.DELIVERED, 0)
        assert "leave linkedin out" in (h.outcomes.events[-1].error or "")
        h.add(version("a", 1), version("a", 2, boards=indeed_only))
        await h.settle(3)
        assert h.board.ops("a") == ["CREATE", "CLOSE"]
        state = h.state("a")
        assert state.status == DeliveryStatus.CLOSED and state.job is not None
        assert (state.job.held, state.job.status) == (JobHeld.CLOSED, ListingStatus.CLOSED)

    scenario(body)


def test_a_delete_of_a_posting_the_board_holds_nothing_for_calls_nothing():
    async def body(h: Harness):
        h.board.elements[("a", 0)] = [Rejected("422 no")]
        h.add(version("a", 0), version("a", 1, Op.DELETED), Item("a", None, 0, 2))
        await h.settle(3)
        assert h.board.ops("a") == ["CREATE"]
        assert h.state("a").status == DeliveryStatus.CLOSED

    scenario(body)


def test_a_create_whose_outcome_is_unknown_when_a_delete_supersedes_it_is_closed_all_the_same():
    async def body(h: Harness):
        h.board.elements[("a", 1)] = [Unsure("502 for this job", retry_after_s=600)] * 10
        h.board.elements[("a", 0)] = [Rejected("422 no")]
        h.add(version("a", 0), version("a", 1))
        await h.clock.run(lambda: h.board.sent("a") == [0, 1], 10_000)
        h.add(version("a", 2, Op.DELETED))
        await h.settle(3, limit_ms=60_000)
        # v1's CREATE may have reached the board: its job is taken as held, and closed.
        assert h.board.ops("a") == ["CREATE", "CREATE", "CLOSE"]

    scenario(body)


def test_the_first_listing_date_stays_the_first():
    async def body(h: Harness):
        h.add(version("a", 0, at=1_000), version("a", 1, at=5_000), version("a", 2, at=9_000))
        await h.settle(3)
        assert [a.listed_at for a in h.board.actions] == [1_000, 1_000, 1_000]
        assert h.state("a").job.listed_at == 1_000  # type: ignore[union-attr]

    scenario(body)


def test_a_job_the_board_closes_on_its_own_shows_within_one_interval():
    async def body(h: Harness):
        h.add(version("a", 0))
        await h.settle(1)
        assert h.state("a").job.status == ListingStatus.RECEIVED  # type: ignore[union-attr]
        h.board.listing["a"] = BoardListing(ListingStatus.LIVE, "https://jobs.example/a")
        start = h.clock.now
        await h.clock.run(lambda: h.state("a").job.status == ListingStatus.LIVE, 10_000)  # type: ignore[union-attr]
        assert h.clock.now - start <= 1_100 and h.state("a").job.url == "https://jobs.example/a"  # type: ignore[union-attr]
        reason = "LinkedIn automatically closes jobs that are reported multiple times"
        h.board.listing["a"] = BoardListing(ListingStatus.CLOSED_BY_BOARD, reason=reason)
        start = h.clock.now
        await h.clock.run(lambda: h.state("a").job.status == ListingStatus.CLOSED_BY_BOARD, 60_000)  # type: ignore[union-attr]
        assert h.clock.now - start <= 5_100
        assert h.state("a").job.reason == reason  # type: ignore[union-attr]
        assert [c.type for c in h.outcomes.changes] == [
            "listing.received",
            "listing.live",
            "listing.closed_by_board",
        ]
        reads = len(h.board.reads)
        await h.clock.run(lambda: h.clock.now - start > 60_000, 120_000)
        assert len(h.board.reads) == reads  # a job closed by the board is read back no more

    scenario(body, terms=JobTerms(check_received_ms=1_000, check_live_ms=5_000))


def test_a_job_indexing_rejects_is_rejected_with_the_boards_reason():
    async def body(h: Harness):
        h.add(version("a", 0))
        await h.settle(1)
        h.board.listing["a"] = BoardListing(ListingStatus.CLOSED_BY_BOARD, reason="spam")
        await h.clock.run(lambda: h.state("a").job.status == ListingStatus.REJECTED, 10_000)  # type: ignore[union-attr]

    scenario(body, terms=JobTerms(check_received_ms=1_000))


def test_a_posting_is_closed_at_its_expiry():
    async def body(h: Harness):
        expires = h.clock.now + 30_000
        h.add(version("a", 0, expires_at=expires))
        await h.settle(1)
        await h.clock.run(lambda: h.board.ops("a") == ["CREATE", "CLOSE"], 60_000)
        ((when, _),) = [(t, e) for t, e in h.board.calls[1:]]
        assert expires <= when <= expires + 1_000
        await h.clock.run(lambda: h.state("a").status == DeliveryStatus.CLOSED, 1_000)
        job = h.state("a").job
        assert job is not None and (job.held, job.status) == (JobHeld.CLOSED, ListingStatus.EXPIRED)

    scenario(body)


def test_a_linkedin_job_is_renewed_ahead_of_its_lifetime_while_the_posting_lasts():
    terms = JobTerms(
        restates=True,
        lifetime_ms=100_000,
        renewal_ms=50_000,
        renew_ahead_ms=20_000,
        check_received_ms=600_000,
    )

    async def body(h: Harness):
        created_at = h.clock.now
        h.add(version("a", 0, at=created_at))
        await h.settle(1)
        await h.clock.run(lambda: h.board.ops("a") == ["CREATE", "RENEW", "RENEW"], 200_000)
        renewals = [t for t, e in h.board.calls if e == [("a", 0)]][1:]
        assert created_at + 79_000 <= renewals[0] <= created_at + 82_000  # 20 s before its 100 s end
        assert created_at + 129_000 <= renewals[1] <= created_at + 135_000  # renewed: 50 s more
        renew = h.board.actions[1]
        assert renew.update is not None and renew.update.posting == postings.posting(
            0
        )  # the content it holds
        assert renew.listed_at == created_at

    scenario(body, confirms=True, terms=terms)


def test_a_posting_expiring_before_the_lifetime_ends_is_not_renewed():
    terms = JobTerms(restates=True, lifetime_ms=100_000, renewal_ms=50_000, renew_ahead_ms=20_000)

    async def body(h: Harness):
        h.add(version("a", 0, at=h.clock.now, expires_at=h.clock.now + 90_000))
        await h.settle(1)
        await h.clock.run(lambda: h.board.ops("a") == ["CREATE", "CLOSE"], 200_000)

    scenario(body, confirms=True, terms=terms)


def test_an_old_state_read_as_open_is_updated_and_closed_with_the_version_at_hand():
    async def body(h: Harness):
        h.outcomes.latest["a"] = DeliveryState(Destination.LINKEDIN, "a", DeliveryStatus.DELIVERED, 3)
        h.add(version("a", 4))
        await h.settle(1)
        h.add(version("a", 5, Op.DELETED))
        await h.settle(2)
        assert h.board.ops("a") == ["UPDATE", "CLOSE"]

    scenario(body)


def test_status_news_of_a_job_the_lane_no_longer_holds_open_changes_nothing():
    async def body(h: Harness):
        h.add(version("a", 0), version("a", 1, Op.DELETED))
        await h.settle(2)
        closed = h.state("a")
        h.board.listing["a"] = BoardListing(ListingStatus.LIVE, "https://jobs.example/a")
        await h.clock.run(lambda: h.clock.now > 10_000_000, 20_000_000)
        assert dataclasses.replace(h.state("a"), updated_at=0) == dataclasses.replace(closed, updated_at=0)
        assert Delivered  # the close was delivered

    scenario(body, terms=JobTerms(check_received_ms=1_000))


def test_a_job_replaced_by_a_new_one_is_kept_to_expire_until_its_expiry_is_done():
    """Indeed made the update a new job (the employer's sourceName changed) and expiring the
    job it held failed: the new job is held, the replaced one kept in the state; the retry,
    and a delete behind it, expire it by its id, and only then is it forgotten."""
    not_yet = Unsure("the expire call: 503", job_id="s2", unexpired=("s1",))

    async def body(h: Harness):
        h.board.elements[("a", 0)] = [Delivered("s1")]
        h.board.elements[("a", 1)] = [not_yet, not_yet]
        h.add(version("a", 0), version("a", 1))
        await h.clock.run(lambda: h.board.sent("a") == [0, 1], 10_000)
        await h.clock.run(lambda: h.state("a").status == DeliveryStatus.RETRYING, 10_000)
        job = h.state("a").job
        assert job is not None and (job.job_id, job.replaced_ids) == ("s2", ("s1",))
        assert (job.status, job.url) == (ListingStatus.RECEIVED, None)  # a new job, not yet live
        h.add(version("a", 2, Op.DELETED))
        await h.settle(3, limit_ms=60_000)
        close = h.board.actions[-1]
        assert (close.operation, close.job_id, close.replaced_ids) == (Operation.CLOSE, "s2", ("s1",))
        closed = h.state("a").job
        assert closed is not None and (closed.held, closed.replaced_ids) == (JobHeld.CLOSED, ())

    scenario(body)


def test_a_job_kept_to_expire_goes_with_the_next_version_and_is_forgotten_once_expired():
    async def body(h: Harness):
        # A restarted consumer's state: the new job held, the one it replaced not yet expired.
        job = BoardJob(JobHeld.OPEN, "s2", status=ListingStatus.RECEIVED, replaced_ids=("s1",))
        h.outcomes.latest["a"] = DeliveryState(Destination.INDEED, "a", DeliveryStatus.FAILED, 1, job=job)
        h.board.elements[("a", 2)] = [Delivered("s2")]
        h.add(version("a", 2))
        await h.settle(1)
        (update,) = h.board.actions
        assert (update.operation, update.job_id, update.replaced_ids) == (Operation.UPDATE, "s2", ("s1",))
        after = h.state("a").job
        assert after is not None and (after.job_id, after.replaced_ids) == ("s2", ())

    scenario(body)
