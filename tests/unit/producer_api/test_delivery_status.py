"""How a destination's progress reads for the posting's current version."""

from producer_api.service import _status_for
from schemas.model import DeliveryState, DeliveryStatus, Destination


def state(status: DeliveryStatus, delivered: int | None = None, pending: int | None = None) -> DeliveryState:
    return DeliveryState(Destination.INDEED, "p1", status, delivered, pending)


def test_delivered_older_version_means_the_current_one_is_pending():
    assert _status_for(state(DeliveryStatus.DELIVERED, delivered=2), 2) == "delivered"
    assert _status_for(state(DeliveryStatus.DELIVERED, delivered=1), 2) == "pending"
    assert _status_for(None, 0) == "pending"


def test_failed_counts_only_for_the_version_that_failed():
    failed = state(DeliveryStatus.FAILED, delivered=0, pending=1)
    assert _status_for(failed, 1) == "failed"
    assert _status_for(failed, 2) == "pending"


def test_retrying_and_closed_read_as_they_are():
    assert _status_for(state(DeliveryStatus.RETRYING, pending=3), 3) == "retrying"
    assert _status_for(state(DeliveryStatus.CLOSED, delivered=4), 4) == "closed"
