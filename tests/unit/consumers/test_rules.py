"""The lane's rules, pure: done already, superseded, redrive skipped, the next state."""

from consumers.items import Item
from consumers.rules import Progress, done_already, next_state, redrive_skipped, superseded_by
from schemas.model import DeliveryState, DeliveryStatus, Destination, UnresolvedLetter
from schemas.redrive import RedriveRequest
from tests.unit.consumers.fakes import item, update

LINKEDIN = Destination.LINKEDIN


def state(status: DeliveryStatus, **fields: object) -> DeliveryState:
    return DeliveryState(LINKEDIN, "a", status, **fields)  # type: ignore[arg-type]


def redrive(version: int) -> Item:
    request = RedriveRequest("r", "a", version, b"", 0, 0, "ops", 0)
    return Item("a", update("a", version), 0, 9, request=request)


def test_work_done_already_is_not_done_again():
    assert done_already(state(DeliveryStatus.DELIVERED, delivered_version=3), 3)
    assert not done_already(state(DeliveryStatus.DELIVERED, delivered_version=3), 4)
    assert done_already(state(DeliveryStatus.FAILED, delivered_version=3, finished_version=4), 4)
    assert done_already(state(DeliveryStatus.FAILED, pending_version=4), 4)  # a v1 state: no finished_version
    assert not done_already(state(DeliveryStatus.RETRYING, pending_version=4), 4)


def test_a_delete_supersedes_all_but_the_created_version_a_newer_version_only_when_conflating():
    later_update, later_delete = [item("a", 3)], [item("a", 3, "DELETED")]
    assert superseded_by(item("a", 2), later_update, conflate=False) is None
    assert superseded_by(item("a", 2), later_update, conflate=True) == 3
    assert superseded_by(item("a", 2), later_delete, conflate=False) == 3
    assert superseded_by(item("a", 0), later_update, conflate=True) is None  # the CREATED version goes
    assert superseded_by(item("a", 0), later_delete, conflate=False) is None  # a board closes what it created
    assert superseded_by(item("a", 3, "DELETED"), [], conflate=True) is None
    assert superseded_by(item("a", 2), [redrive(1)], conflate=True) is None  # a request is no newer version
    assert superseded_by(redrive(1), [item("a", 2)], conflate=False) == 2


def test_a_redrive_is_skipped_whenever_the_board_or_the_lane_is_past_it():
    assert redrive_skipped(1, state(DeliveryStatus.DELIVERED, delivered_version=1), []) is not None
    assert redrive_skipped(1, state(DeliveryStatus.FAILED, delivered_version=0, finished_version=2), [])
    assert redrive_skipped(1, state(DeliveryStatus.RETRYING, delivered_version=0, pending_version=2), [])
    assert redrive_skipped(
        1, state(DeliveryStatus.FAILED, delivered_version=0, finished_version=1), [item("a", 2)]
    )
    assert (
        redrive_skipped(1, state(DeliveryStatus.FAILED, delivered_version=0, finished_version=1), []) is None
    )


def test_delivered_version_never_decreases_and_a_delivery_resolves_the_letters_below_it():
    before = state(
        DeliveryStatus.DELIVERED,
        delivered_version=5,
        finished_version=5,
        unresolved_letters=(UnresolvedLetter(6, 1), UnresolvedLetter(8, 2)),
    )
    older = next_state(LINKEDIN, item("a", 3), before, DeliveryStatus.DELIVERED, Progress(), now=10)
    assert (older.delivered_version, older.finished_version) == (5, 5)
    newer = next_state(LINKEDIN, item("a", 7), before, DeliveryStatus.DELIVERED, Progress(), now=10)
    assert newer.delivered_version == 7 and newer.unresolved_letters == (UnresolvedLetter(8, 2),)
    failed = next_state(LINKEDIN, item("a", 9), newer, DeliveryStatus.FAILED, Progress(attempts=1), now=20)
    assert failed.unresolved_letters == (UnresolvedLetter(8, 2), UnresolvedLetter(9, 20))
    assert (failed.delivered_version, failed.finished_version, failed.pending_version) == (7, 9, 9)


def test_the_uncharged_time_survives_a_restart_and_is_not_spent():
    paused = state(
        DeliveryStatus.PAUSED,
        pending_version=2,
        attempts=3,
        first_attempt_at=1_000,
        uncharged_ms=500,
        paused_since=4_000,
    )
    progress = Progress.resume(paused, 2, now=10_000)
    assert (progress.attempts, progress.first_attempt_at, progress.uncharged_ms) == (3, 1_000, 6_500)
    assert progress.charged_s(10_000) == 2.5  # 9 s since the first attempt, 6.5 of them the board's
