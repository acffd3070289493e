"""The lane's rules, pure: done already, redrive skipped."""

from consumers.rules import done_already, redrive_skipped
from schemas.deliveries import DeliveryState
from schemas.enums import DeliveryStatus
from schemas.model import Destination
from tests.unit.consumers.fakes import item

LINKEDIN = Destination.LINKEDIN


def state(status: DeliveryStatus, **fields: object) -> DeliveryState:
    return DeliveryState(LINKEDIN, "a", status, **fields)  # type: ignore[arg-type]


def test_work_done_already_is_not_done_again():
    assert done_already(state(DeliveryStatus.DELIVERED, delivered_version=3), 3)
    assert not done_already(state(DeliveryStatus.DELIVERED, delivered_version=3), 4)
    assert done_already(state(DeliveryStatus.FAILED, delivered_version=3, finished_version=4), 4)
    assert done_already(state(DeliveryStatus.FAILED, pending_version=4), 4)  # a v1 state: no finished_version
    assert not done_already(state(DeliveryStatus.RETRYING, pending_version=4), 4)


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
