"""A posting's timeline from its versions, events and delivery states: what each cell says."""

from producer_api.read import timeline
from schemas.deliveries import delivery_event, delivery_state
from schemas.enums import DeliveryOutcome, DeliveryStatus, Destination

LI, IN, SE = Destination.LINKEDIN, Destination.INDEED, Destination.SEARCH


def versions(*ops: str) -> list[dict]:
    return [{"version": n, "op": op, "at": 1000 + n, "title": f"t{n}"} for n, op in enumerate(ops)]


def event(destination, version, outcome, attempt=1, at=0, **extra):
    return delivery_event(destination, "p", version, outcome, attempt, at=at, **extra)


def states(lane: dict) -> list[str]:
    return [cell["state"] for cell in lane["cells"]]


def test_every_version_delivered_everywhere_leaves_each_lane_waiting_for_the_next():
    events = [event(d, v, DeliveryOutcome.DELIVERED, at=v) for v in range(3) for d in (LI, IN, SE)]
    built = timeline.build("p", 2, False, versions("CREATED", "UPDATED", "UPDATED"), events, {})
    for lane in built["lanes"].values():
        assert states(lane) == ["delivered"] * 3
        assert (lane["waiting_for"], lane["closed"]) == (3, False)
    assert len(built["events"]) == 9 and built["events"][0]["outcome"] == "delivered"


def test_a_retrying_cell_says_how_many_attempts_the_last_error_and_when_the_next_is():
    events = [
        event(LI, 0, DeliveryOutcome.RETRYING, 1, at=10, error="503", next_attempt_at=3010),
        event(LI, 0, DeliveryOutcome.RETRYING, 2, at=3010, error="502", next_attempt_at=9010),
    ]
    lane = timeline.build("p", 0, False, versions("CREATED"), events, {})["lanes"]["linkedin"]
    assert lane["cells"][0] == {
        "version": 0, "state": "retrying", "at": 3010, "attempts": 2, "error": "502", "next_attempt_at": 9010,
    }  # fmt: skip
    assert lane["waiting_for"] is None  # not caught up: it is still on version 0


def test_dead_lettered_skipped_and_closed_versions():
    events = [
        event(LI, 0, DeliveryOutcome.DEAD_LETTERED, 1, error="400 bad title"),
        event(LI, 1, DeliveryOutcome.SKIPPED, 0),
        event(LI, 2, DeliveryOutcome.CLOSED, 1),
    ]
    lane = timeline.build("p", 2, True, versions("CREATED", "UPDATED", "DELETED"), events, {})["lanes"][
        "linkedin"
    ]
    assert states(lane) == ["dead_lettered", "skipped", "closed"]
    assert lane["cells"][0]["error"] == "400 bad title"
    assert (lane["waiting_for"], lane["closed"]) == (None, True)


def test_a_redriven_letter_shows_its_newest_outcome():
    events = [
        event(LI, 0, DeliveryOutcome.DEAD_LETTERED, 1, at=1),
        event(LI, 0, DeliveryOutcome.DELIVERED, 2, at=2),
    ]
    lane = timeline.build("p", 0, False, versions("CREATED"), events, {})["lanes"]["linkedin"]
    assert (lane["cells"][0]["state"], lane["cells"][0]["attempts"]) == ("delivered", 2)


def test_without_events_the_delivery_state_tells_delivered_from_never_sent_and_pending():
    state = delivery_state(IN, "p", status=DeliveryStatus.DELIVERED, delivered_version=1, attempts=1)
    built = timeline.build("p", 2, False, versions("CREATED", "UPDATED", "UPDATED"), [], {IN: state})
    assert states(built["lanes"]["indeed"]) == ["skipped", "delivered", "pending"]
    assert built["lanes"]["indeed"]["waiting_for"] is None
    assert states(built["lanes"]["search"]) == ["pending"] * 3


def test_a_posting_from_before_versions_were_kept_shows_its_newest_version():
    assert timeline.fallback_versions(4, False, "Engineer", 99) == [
        {"version": 4, "op": "UPDATED", "at": 99, "title": "Engineer"}
    ]
    assert timeline.fallback_versions(0, False, "x", None)[0]["op"] == "CREATED"
    assert timeline.fallback_versions(5, True, "", None)[0]["op"] == "DELETED"
