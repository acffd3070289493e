"""Reading records off a topic: the typed record, or a PoisonRecord saying why not."""

import pytest
from confluent_kafka import Message

from runtime import records
from runtime.deliveries import state_record
from schemas import codec
from schemas.changelog import KeyUse, SequencerState
from schemas.deliveries import DeliveryState, delivery_state
from schemas.enums import DeliveryStatus
from schemas.model import Action, Command, Destination, Op, Posting, PostingUpdate

STATE = DeliveryState(Destination.SEARCH, "p1", DeliveryStatus.DELIVERED, delivered_version=3, updated_at=5)


def on_deliveries(key: bytes, value: bytes | None) -> Message:
    return Message(topic="jobpost.deliveries", partition=0, offset=0, key=key, value=value)


def test_a_delivery_state_is_keyed_destination_slash_posting_on_the_postings_partition():
    state = delivery_state(Destination.SEARCH, "p1", status=DeliveryStatus.CLOSED, delivered_version=4)
    record = state_record("jobpost.deliveries", 5, state)
    assert (record.key, record.partition) == ("search/p1", 5)
    assert codec.delivery_states().decode(record.value or b"") == state
    assert state.updated_at > 0


def test_a_delivery_state_reads_back_typed():
    message = on_deliveries(b"search/p1", codec.delivery_states().encode(STATE))
    assert records.delivery_state(message) == (Destination.SEARCH, "p1", STATE)


def test_a_tombstone_names_its_destination():
    assert records.delivery_state(on_deliveries(b"indeed/p1", None)) == (Destination.INDEED, "p1", None)


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        (b"search-indexer/p1", "no known destination"),
        (b"indeed/p1", "does not match"),
        (b"no-slash", "not {destination}/{posting_id}"),
    ],
)
def test_unusable_delivery_states_are_poison(key, reason):
    with pytest.raises(records.PoisonRecord, match=reason):
        records.delivery_state(on_deliveries(key, codec.delivery_states().encode(STATE)))


UPDATE = PostingUpdate("p1", 0, Op.CREATED, "p1:0", "r", Posting("T", "d"), 1, 1)


def on_topic(key: bytes | None, value: bytes | None) -> Message:
    return Message(topic="t", partition=0, offset=0, key=key, value=value)


def test_a_posting_update_reads_back_typed_and_a_tombstone_as_none():
    assert records.posting_update(on_topic(b"p1", codec.posting_updates().encode(UPDATE))) == ("p1", UPDATE)
    assert records.posting_update(on_topic(b"p1", None)) == ("p1", None)


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        (b"p2", codec.posting_updates().encode(UPDATE), "does not match"),
        (None, codec.posting_updates().encode(UPDATE), "no key"),
        (b"\xff", codec.posting_updates().encode(UPDATE), "not UTF-8"),
        (b"p1", b"junk", "bad magic"),
    ],
)
def test_unusable_posting_updates_are_poison(key, value, reason):
    with pytest.raises(records.PoisonRecord, match=reason):
        records.posting_update(on_topic(key, value))


def test_a_command_reads_back_typed():
    command = Command("r", "p1", Action.REPLACE, 5, Posting("T", "d"), 2, "c", "f")
    assert records.command(on_topic(b"p1", codec.commands().encode(command))) == command


@pytest.mark.parametrize("action", [Action.CREATE, Action.REPLACE])
def test_a_create_or_replace_without_a_posting_is_poison_not_a_stuck_sequencer(action):
    value = codec.commands().encode(Command("r", "p1", action, 5))
    with pytest.raises(records.PoisonRecord, match="without a posting"):
        records.command(on_topic(b"p1", value))


def test_a_sequencer_state_reads_back_typed_and_unusable_ones_are_poison():
    state = SequencerState("p1", 4, False, 9, 120, (KeyUse("k", Action.REPLACE, "f", 4, False, 9),))
    value = codec.sequencer_states().encode(state)

    def on_changelog(key: bytes, value: bytes | None) -> Message:
        return Message(topic="jobpost.sequencer-state", partition=0, offset=0, key=key, value=value)

    assert records.sequencer_state(on_changelog(b"p1", value)) == ("p1", state)
    assert records.sequencer_state(on_changelog(b"p1", None)) == ("p1", None)
    for key, bad, reason in (
        (b"p2", value, "does not match"),
        (b"p1", b"\x00junk", None),
        (b"\xff", value, "UTF-8"),
    ):
        with pytest.raises(records.PoisonRecord, match=reason):
            records.sequencer_state(on_changelog(key, bad))
