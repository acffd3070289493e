"""Asking for a redrive, and learning what came of it: what `jobpost dlq redrive` and the
API's operations panel share, so neither calls a board nor holds its credentials.

A request (`schemas.redrive.RedriveRequest`) goes to `jobpost.<board>.redrive`, keyed by
posting id on the posting's partition number; the board's consumer handles it in the
posting's lane, in order with everything else (`consumers.rules.redrive_skipped`), and
publishes what became of it as delivery events carrying the request id. `outcomes` reads
those events back from where the topic ended before the requests were written.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import KafkaError, TopicPartition

from runtime import records
from runtime.dead_letters import DeadLetter
from runtime.kafka import KafkaSettings, end_offset
from runtime.kafka_clients import KafkaClients
from runtime.outbox import Outgoing
from schemas import codec
from schemas.enums import DeliveryOutcome, Destination
from schemas.events import DeliveryEvent
from schemas.partitioning import partition_for
from schemas.redrive import RedriveRequest
from schemas.topics import ReaderGroup, Topics

# What a redrive ends in: the lane moved past the request.
FINAL = {
    DeliveryOutcome.DELIVERED,
    DeliveryOutcome.CLOSED,
    DeliveryOutcome.SKIPPED,
    DeliveryOutcome.DEAD_LETTERED,
}


@dataclass(frozen=True)
class Requested:
    request: RedriveRequest
    partition: int  # of the posting: where its lane and its events are

    def record(self, topics: Topics, board: Destination) -> Outgoing:
        value = codec.redrive_requests().encode(self.request)
        return Outgoing(topics.redrive(board), self.request.posting_id, value, partition=self.partition)


def requests_for(letters: Iterable[DeadLetter], requested_by: str, partitions: int) -> list[Requested]:
    """One request per letter that carries a version (an undecodable letter has none to
    attempt: it stays listed)."""
    now = time.time_ns() // 1_000_000
    made = []
    for letter in letters:
        update, value = letter.update, letter.message.value()
        if update is None or value is None:
            continue
        request = RedriveRequest(
            request_id=uuid.uuid4().hex,
            posting_id=update.posting_id,
            version=update.version,
            update=b"",  # a reference, not the text: the consumer reads the letter it names
            letter_partition=letter.partition,
            letter_offset=letter.offset,
            requested_by=requested_by,
            requested_at=now,
        )
        made.append(Requested(request, partition_for(update.posting_id, partitions)))
    return made


def events_end(kafka: KafkaSettings, topics: Topics, partitions: Iterable[int]) -> dict[int, int]:
    """Where `jobpost.delivery-events` ends now on these partitions (read the outcomes from
    there: take it before the requests are written)."""
    probe = KafkaClients(kafka).probe(topics.reader_group(ReaderGroup.REDRIVE_PROBE))
    try:
        return {p: end_offset(probe, topics.delivery_events, p) for p in sorted(set(partitions))}
    finally:
        probe.close()


def outcomes(
    kafka: KafkaSettings, topics: Topics, wanted: Iterable[str], start: dict[int, int], timeout_s: float
) -> dict[str, DeliveryEvent]:
    """The final delivery event of each wanted request id, read from `start` on, waiting
    at most `timeout_s` for all of them (a request whose consumer is not running, or whose
    event was lost, is missing from the answer)."""
    left = set(wanted)
    found: dict[str, DeliveryEvent] = {}
    if not left or not start:
        return found
    reader = KafkaClients(kafka).reader(topics.reader_group(ReaderGroup.REDRIVE_OUTCOMES))
    try:
        reader.assign([TopicPartition(topics.delivery_events, p, offset) for p, offset in start.items()])
        deadline = time.monotonic() + timeout_s
        while left and time.monotonic() < deadline:
            message = reader.poll(0.2)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF and not error.retriable():
                    raise RuntimeError(f"reading delivery events: {error}")
                continue
            try:
                event = records.delivery_event(message)
            except records.PoisonRecord:
                continue
            if event.request_id in left and event.outcome in FINAL:
                found[event.request_id] = event
                left.discard(event.request_id)
    finally:
        reader.close()
    return found


def describe(event: DeliveryEvent | None) -> str:
    """What a redrive came to, in words."""
    if event is None:
        return "no outcome yet (is the board's consumer running?)"
    if event.outcome == DeliveryOutcome.SKIPPED:
        return f"skipped ({event.error or 'superseded'})"
    if event.outcome == DeliveryOutcome.DEAD_LETTERED:
        return f"failed again, dead-lettered again: {event.error}"
    return event.outcome.lower()
