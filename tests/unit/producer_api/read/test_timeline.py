"""A posting's timeline from its versions, events and delivery states: what each cell says."""

from producer_api.read import timeline
from producer_api.read.timeline import STATE_OF_OUTCOME, Cell, CellState, Lane, VersionLine
from schemas.deliveries import delivery_event, delivery_state
from schemas.enums import DeliveryOutcome, DeliveryStatus, Destination, Op

LI, IN, SE = Destination.LINKEDIN, Destination.INDEED, Destination.SEARCH
DELIVERED, SKIPPED, PENDING = CellState.DELIVERED, CellState.SKIPPED, CellState.PENDING


def versions(*ops: Op) -> list[VersionLine]:
    return [VersionLine(n, op, 1000 + n, f"t{n}") for n, op in enumerate(ops)]


def event(destination, version, outcome, attempt=1, at=0, **extra):
    return delivery_event(destination, "p", version, outcome, attempt, at=at, **extra)


def states(lane: Lane) -> list[CellState]:
    return [cell.state for cell in lane.cells]


def test_every_version_delivered_everywhere_leaves_each_lane_waiting_for_the_next():
    events = [event(d, v, DeliveryOutcome.DELIVERED, at=v) for v in range(3) for d in (LI, IN, SE)]
    built = timeline.build("p", 2, False, versions(Op.CREATED, Op.UPDATED, Op.UPDATED), events, {})
    assert list(built.lanes) == [LI, IN, SE]
    for lane in built.lanes.values():
        assert states(lane) == [DELIVERED] * 3
        assert (lane.waiting_for, lane.closed) == (3, False)
    assert len(built.events) == 9 and built.events[0].outcome == DeliveryOutcome.DELIVERED


def test_a_retrying_cell_says_how_many_attempts_the_last_error_and_when_the_next_is():
    events = [
        event(LI, 0, DeliveryOutcome.RETRYING, 1, at=10, error="503", next_attempt_at=3010),
        event(LI, 0, DeliveryOutcome.RETRYING, 2, at=3010, error="502", next_attempt_at=9010),
    ]
    lane = timeline.build("p", 0, False, versions(Op.CREATED), events, {}).lanes[LI]
    assert lane.cells[0] == Cell(
        0, CellState.RETRYING, at=3010, attempts=2, error="502", next_attempt_at=9010
    )
    assert lane.waiting_for is None  # not caught up: it is still on version 0


def test_dead_lettered_skipped_and_closed_versions():
    events = [
        event(LI, 0, DeliveryOutcome.DEAD_LETTERED, 1, error="400 bad title", next_attempt_at=5),
        event(LI, 1, DeliveryOutcome.SKIPPED, 0),
        event(LI, 2, DeliveryOutcome.CLOSED, 1),
    ]
    built = timeline.build("p", 2, True, versions(Op.CREATED, Op.UPDATED, Op.DELETED), events, {})
    lane = built.lanes[LI]
    assert states(lane) == [CellState.DEAD_LETTERED, SKIPPED, CellState.CLOSED]
    assert (lane.cells[0].error, lane.cells[0].next_attempt_at) == ("400 bad title", None)  # no next attempt
    assert (lane.waiting_for, lane.closed) == (None, True)


def test_a_redriven_letter_shows_its_newest_outcome():
    events = [
        event(LI, 0, DeliveryOutcome.DEAD_LETTERED, 1, at=1),
        event(LI, 0, DeliveryOutcome.DELIVERED, 2, at=2),
    ]
    lane = timeline.build("p", 0, False, versions(Op.CREATED), events, {}).lanes[LI]
    assert (lane.cells[0].state, lane.cells[0].attempts) == (DELIVERED, 2)


def test_without_events_the_delivery_state_tells_delivered_from_never_sent_and_pending():
    state = delivery_state(IN, "p", status=DeliveryStatus.DELIVERED, delivered_version=1, attempts=1)
    built = timeline.build("p", 2, False, versions(Op.CREATED, Op.UPDATED, Op.UPDATED), [], {IN: state})
    assert states(built.lanes[IN]) == [SKIPPED, DELIVERED, PENDING]
    assert built.lanes[IN].cells[1] == Cell(1, DELIVERED, at=state.updated_at, attempts=1)
    assert built.lanes[IN].waiting_for is None
    assert states(built.lanes[SE]) == [PENDING] * 3


def test_a_delete_recorded_as_closed_reads_closed_without_an_event():
    state = delivery_state(LI, "p", status=DeliveryStatus.CLOSED, delivered_version=1)
    built = timeline.build("p", 1, True, versions(Op.CREATED, Op.DELETED), [], {LI: state})
    assert states(built.lanes[LI]) == [SKIPPED, CellState.CLOSED]
    assert built.lanes[LI].closed


def test_every_outcome_an_event_can_carry_has_a_cell_state():
    assert set(STATE_OF_OUTCOME) == set(DeliveryOutcome)


def test_a_posting_from_before_versions_were_kept_shows_its_newest_version():
    assert timeline.fallback_versions(4, False, "Engineer", 99) == [
        VersionLine(4, Op.UPDATED, 99, "Engineer")
    ]
    assert timeline.fallback_versions(0, False, "x", None)[0].op == Op.CREATED
    assert timeline.fallback_versions(5, True, "", None)[0].op == Op.DELETED
