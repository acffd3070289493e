"""Reading records off a topic: the key and value a reader can use, or a `PoisonRecord`.

Every reader goes through these functions, so a record nobody can use (undecodable value,
unexpected null, a key that is not UTF-8 or does not match the value) is recognised the
same way everywhere. What a reader then does with it is its own: a consumer group
dead-letters it, a view skips it; both count it (`jobpost_poison_records_total{reader}`)
and log it, and neither ever stops.
"""

from __future__ import annotations

import logging
from typing import TypeVar

from confluent_kafka import Message
from prometheus_client import Counter

from schemas import codec
from schemas.board_status import BoardStatus
from schemas.changelog import SequencerState
from schemas.codec import AvroRecord, RecordCodec, SerializationError
from schemas.deliveries import DeliveryState
from schemas.events import DeliveryEvent
from schemas.listing_events import ListingEvent
from schemas.model import Action, Command, Destination, PostingUpdate, Reply
from schemas.webhooks import WebhookDelivery, WebhookEndpoint, WebhookReplay

log = logging.getLogger(__name__)

POISON_RECORDS = Counter(
    "jobpost_poison_records_total", "Records a reader could not use (dead-lettered or skipped)", ["reader"]
)


class PoisonRecord(Exception):
    """A record its reader cannot use; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def note_poison(reader: str, message: Message, reason: str) -> None:
    """Count and log a poison record (the caller dead-letters or skips it)."""
    POISON_RECORDS.labels(reader).inc()
    where = f"{message.topic()}/{message.partition()}@{message.offset()}"
    log.error(
        "%s: unusable record at %s: %s",
        reader,
        where,
        reason,
        extra={"partition": message.partition(), "offset": message.offset()},
    )


def text_key(message: Message) -> str:
    key = message.key()
    if key is None:
        raise PoisonRecord("the record has no key")
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PoisonRecord(f"the key is not UTF-8: {key[:40]!r}") from exc


R = TypeVar("R", bound=AvroRecord)


def _decode(value: bytes | None, decoder: RecordCodec[R]) -> R:
    if value is None:
        raise PoisonRecord("the value is null where a record was expected")
    try:
        return decoder.decode(value)
    except SerializationError as exc:
        raise PoisonRecord(str(exc)) from exc


P = TypeVar("P", PostingUpdate, SequencerState, DeliveryEvent)


def _keyed_by_posting(message: Message, decoder: RecordCodec[P]) -> tuple[str, P | None]:
    """(posting id, the record) of a topic keyed by posting id; None for a tombstone."""
    posting_id = text_key(message)
    if message.value() is None:
        return posting_id, None
    record = _decode(message.value(), decoder)
    if record.posting_id != posting_id:
        raise PoisonRecord(f"key {posting_id!r} does not match posting_id {record.posting_id!r}")
    return posting_id, record


def posting_update(message: Message) -> tuple[str, PostingUpdate | None]:
    """(posting id, the PostingUpdate) of a `jobpost.postings` record; None for a tombstone."""
    return _keyed_by_posting(message, codec.posting_updates())


def command(message: Message) -> Command:
    posting_id = text_key(message)
    decoded = _decode(message.value(), codec.commands())
    if decoded.posting_id != posting_id:
        raise PoisonRecord(f"key {posting_id!r} does not match posting_id {decoded.posting_id!r}")
    if decoded.posting is None and decoded.action != Action.DELETE:
        raise PoisonRecord(f"a {decoded.action} command without a posting")
    return decoded


def reply(message: Message) -> Reply:
    return _decode(message.value(), codec.replies())


def delivery_state(message: Message) -> tuple[Destination, str, DeliveryState | None]:
    """(destination, posting id, the DeliveryState) of a `jobpost.deliveries` record;
    None for a tombstone."""
    name, slash, posting_id = text_key(message).partition("/")
    if not slash or not name or not posting_id:
        raise PoisonRecord("the key is not {destination}/{posting_id}")
    try:
        destination = Destination(name)
    except ValueError as exc:
        raise PoisonRecord(f"the key names no known destination: {name[:40]!r}") from exc
    if message.value() is None:
        return destination, posting_id, None
    state = _decode(message.value(), codec.delivery_states())
    if (state.destination, state.posting_id) != (destination, posting_id):
        raise PoisonRecord("the key does not match the delivery state's destination and posting")
    return destination, posting_id, state


def sequencer_state(message: Message) -> tuple[str, SequencerState | None]:
    """(posting id, the SequencerState) of a `jobpost.sequencer-state` record; None for a
    tombstone."""
    return _keyed_by_posting(message, codec.sequencer_states())


def delivery_event(message: Message) -> DeliveryEvent:
    """The DeliveryEvent of a `jobpost.delivery-events` record."""
    _, event = _keyed_by_posting(message, codec.delivery_events())
    if event is None:
        raise PoisonRecord("the value is null where a delivery event was expected")
    return event


def listing_event(message: Message) -> ListingEvent:
    """The ListingEvent of a `jobpost.listing-events` record (keyed by its posting id)."""
    posting_id = text_key(message)
    event = _decode(message.value(), codec.listing_events())
    if event.posting_id != posting_id:
        raise PoisonRecord(f"key {posting_id!r} does not match posting_id {event.posting_id!r}")
    return event


def webhook_endpoint(message: Message) -> tuple[str, WebhookEndpoint | None]:
    """(endpoint id, the WebhookEndpoint) of a `jobpost.webhooks` record; None for a tombstone."""
    endpoint_id = text_key(message)
    if message.value() is None:
        return endpoint_id, None
    endpoint = _decode(message.value(), codec.webhook_endpoints())
    if endpoint.id != endpoint_id:
        raise PoisonRecord(f"key {endpoint_id!r} does not match the endpoint's id {endpoint.id!r}")
    return endpoint_id, endpoint


def board_status(message: Message) -> tuple[str, BoardStatus | None]:
    """(`{board}/{member}`, the BoardStatus) of a `jobpost.board-status` record; None for a
    tombstone."""
    key = text_key(message)
    if message.value() is None:
        return key, None
    status = _decode(message.value(), codec.board_statuses())
    if status.key != key:
        raise PoisonRecord(f"key {key!r} does not match the status's {status.key!r}")
    return key, status


def webhook_delivery(message: Message) -> tuple[str, WebhookDelivery | None]:
    """(`{endpoint_id}/{event_id}`, the WebhookDelivery) of a `jobpost.webhook-pending` or
    `jobpost.webhooks.dlq` record; None for a tombstone."""
    key = text_key(message)
    if message.value() is None:
        return key, None
    delivery = _decode(message.value(), codec.webhook_deliveries())
    if delivery.key != key:
        raise PoisonRecord(f"key {key!r} does not match the delivery's {delivery.key!r}")
    return key, delivery


def webhook_replay(message: Message) -> WebhookReplay:
    """The WebhookReplay of a `jobpost.webhook-replays` record (keyed by its endpoint id)."""
    endpoint_id = text_key(message)
    replay = _decode(message.value(), codec.webhook_replays())
    if replay.endpoint_id != endpoint_id:
        raise PoisonRecord(f"key {endpoint_id!r} does not match the replay's endpoint {replay.endpoint_id!r}")
    return replay
