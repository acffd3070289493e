"""How a destination's progress reads for the posting's current version."""

from producer_api.read.progress import Progress, ProgressStatus, progress, status_for
from schemas.deliveries import DeliveryState
from schemas.enums import DeliveryStatus
from schemas.model import Destination


def state(status: DeliveryStatus, delivered: int | None = None, pending: int | None = None) -> DeliveryState:
    return DeliveryState(Destination.INDEED, "p1", status, delivered, pending)


def test_delivered_older_version_means_the_current_one_is_pending():
    assert status_for(state(DeliveryStatus.DELIVERED, delivered=2), 2) == ProgressStatus.DELIVERED
    assert status_for(state(DeliveryStatus.DELIVERED, delivered=1), 2) == ProgressStatus.PENDING
    assert status_for(None, 0) == ProgressStatus.PENDING


def test_failed_counts_only_for_the_version_that_failed():
    failed = state(DeliveryStatus.FAILED, delivered=0, pending=1)
    assert status_for(failed, 1) == ProgressStatus.FAILED
    assert status_for(failed, 2) == ProgressStatus.PENDING


def test_retrying_pending_and_closed_read_as_they_are():
    assert status_for(state(DeliveryStatus.RETRYING, pending=3), 3) == ProgressStatus.RETRYING
    assert status_for(state(DeliveryStatus.PENDING, pending=3), 3) == ProgressStatus.PENDING
    assert status_for(state(DeliveryStatus.CLOSED, delivered=4), 4) == ProgressStatus.CLOSED


def test_every_destination_has_its_progress_pending_where_nothing_is_recorded():
    retrying = DeliveryState(
        Destination.LINKEDIN, "p1", DeliveryStatus.RETRYING, 1, 2, 3, 100, 200, "503 from the board"
    )
    assert progress({Destination.LINKEDIN: retrying}, 2) == [
        Progress(Destination.LINKEDIN, ProgressStatus.RETRYING, 1, 3, 100, 200, "503 from the board"),
        Progress(Destination.INDEED, ProgressStatus.PENDING),
        Progress(Destination.SEARCH, ProgressStatus.PENDING),
    ]
