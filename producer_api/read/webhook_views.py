"""The API's views of webhooks: the registered endpoints (`jobpost.webhooks`, one partition,
read whole) and each endpoint's dead letters (`jobpost.webhooks.dlq`), both in local stores
like the other views (`producer_api.read.log_view`).

An endpoint's letters lie on the partitions of the postings they are about, so listing them
reads every partition's store, each holding the endpoint's newest `KEPT` letters in time
order. Keys: `<endpoint id> NUL <dead-lettered at, 8 bytes> <event id>` -> the letter as JSON.
"""

from __future__ import annotations

import bisect
import json
import struct
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, Message

from producer_api.read.log_view import LogView
from runtime import records
from runtime.kafka import KafkaSettings, coordinates
from runtime.stores import Put, StateSettings
from schemas import codec
from schemas.dead_letters import DeadLetterHeaders
from schemas.topics import Component, Topics
from schemas.webhooks import WebhookEndpoint

KEPT = 1000  # an endpoint's newest letters per partition
_MILLIS = struct.Struct(">q")


class EndpointsView(LogView):
    """Every registered endpoint by id (a deleted one is gone)."""

    reader = "webhooks-view"

    def __init__(self, kafka: KafkaSettings, state: StateSettings | None = None) -> None:
        super().__init__(kafka, Topics(kafka.topic_prefix).webhooks, state)
        self._partition_count = 1  # the topic has one partition (schemas.topics)

    def get(self, endpoint_id: str) -> WebhookEndpoint | None:
        value = self._stored(endpoint_id)
        return None if value is None else codec.webhook_endpoints().decode(value)

    def all(self) -> list[WebhookEndpoint]:
        with self._lock:
            stores = list(self.stores.open.values())
            raw = [value for store in stores for _, value in store.items()]
        return [codec.webhook_endpoints().decode(value) for value in raw]

    def apply(self, message: Message) -> list[Put]:
        endpoint_id, endpoint = records.webhook_endpoint(message)
        gone = endpoint is None or endpoint.deleted
        return [(endpoint_id.encode(), None if gone else message.value())]


@dataclass(frozen=True)
class WebhookLetter:
    """One event whose deliveries to an endpoint were given up, as the API lists it."""

    endpoint_id: str
    event_id: str
    posting_id: str
    type: str | None  # None: the event cannot be read
    version: int | None
    board: str | None
    attempts: int
    error: str
    first_attempt_at: int | None
    dead_lettered_at: int
    event: dict[str, Any] | None  # the webhook's body, as it was sent

    def to_json(self) -> bytes:
        return json.dumps(self.__dict__).encode()

    @classmethod
    def from_json(cls, value: bytes) -> WebhookLetter:
        return cls(**json.loads(value))


class WebhookLettersView(LogView):
    """Each endpoint's dead letters (its newest KEPT per partition)."""

    reader = "webhook-letters-view"
    gathered = True  # no answer waits on it: a read of letters takes what it has

    def __init__(self, kafka: KafkaSettings, state: StateSettings | None = None) -> None:
        super().__init__(kafka, Topics(kafka.topic_prefix).dlq(Component.WEBHOOKS), state)
        self._kept: dict[tuple[int, str], list[bytes]] = {}  # (partition, endpoint) -> its keys, oldest first

    def newest(self, endpoint_id: str, limit: int) -> list[WebhookLetter]:
        prefix = endpoint_id.encode() + b"\x00"
        with self._lock:
            found = [value for store in list(self.stores.open.values()) for _, value in store.items(prefix)]
        letters = [WebhookLetter.from_json(value) for value in found]
        return sorted(letters, key=lambda letter: (letter.dead_lettered_at, letter.event_id), reverse=True)[
            :limit
        ]

    def apply(self, message: Message) -> list[Put]:
        _, partition, _ = coordinates(message)
        letter = _letter(message)
        key = (
            letter.endpoint_id.encode()
            + b"\x00"
            + _MILLIS.pack(letter.dead_lettered_at)
            + letter.event_id.encode()
        )
        kept = self._keys(partition, letter.endpoint_id)
        puts: list[Put] = [(key, letter.to_json())]
        if key not in kept:
            bisect.insort(kept, key)
        while len(kept) > KEPT:
            puts.append((kept.pop(0), None))
        return puts

    def _keys(self, partition: int, endpoint_id: str) -> list[bytes]:
        kept = self._kept.get((partition, endpoint_id))
        if kept is None:
            store = self.stores.open.get(partition)
            entries = [] if store is None else store.items(endpoint_id.encode() + b"\x00")
            kept = self._kept[(partition, endpoint_id)] = sorted(key for key, _ in entries)
        return kept

    def _open_stores(self, consumer: Consumer, partitions: list[int]) -> None:
        self._kept.clear()  # stores opened (or rebuilt) again: read their keys again
        super()._open_stores(consumer, partitions)


def _letter(message: Message) -> WebhookLetter:
    _, delivery = records.webhook_delivery(message)
    if delivery is None:
        raise records.PoisonRecord("a tombstone where a dead letter was expected")
    headers = DeadLetterHeaders.parse(message.headers())
    try:
        event = codec.listing_events().decode(delivery.event)
    except codec.SerializationError:
        event = None
    return WebhookLetter(
        endpoint_id=delivery.endpoint_id,
        event_id=delivery.event_id,
        posting_id=delivery.posting_id,
        type=None if event is None else event.type,
        version=None if event is None else event.version,
        board=None if event is None else event.board,
        attempts=delivery.attempts,
        error=headers.error or delivery.last_error or "",
        first_attempt_at=delivery.first_attempt_at,
        dead_lettered_at=headers.last_attempt_ms or message.timestamp()[1],
        event=None if event is None else event.webhook(),
    )
