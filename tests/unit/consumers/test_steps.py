"""A version's way written out, pure: the next state, the progress a restart resumes."""

from consumers.steps import Progress, next_state
from schemas.deliveries import DeliveryState, UnresolvedLetter
from schemas.enums import DeliveryStatus
from schemas.model import Destination
from tests.unit.consumers.fakes import item

LINKEDIN = Destination.LINKEDIN


def state(status: DeliveryStatus, **fields: object) -> DeliveryState:
    return DeliveryState(LINKEDIN, "a", status, **fields)  # type: ignore[arg-type]


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
