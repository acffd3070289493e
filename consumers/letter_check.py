"""A redrive request is taken only for what the dead letter it names holds.

A request carries a reference, not the posting: where its letter lies in the board's
dead-letter topic (`letter_partition`, `letter_offset`) and the version it names, so no
redrive request keeps a posting's text (erasure). Before a request joins its posting's
lane, the consumer reads the record at that place and takes the version from it: the
letter must be there, be that posting's and hold the version the request names. A request
of an older release carries the letter's bytes as well (`update`): those must be exactly
the letter's, so a request cannot hand the consumer a posting nobody accepted. A request
that does not match is refused: its outcome is a SKIPPED delivery event saying why (so `jobpost dlq redrive`
and the API's operations panel see it) and an audit record `ops.redrive_refused` naming
who asked; it is never attempted.

The letter is read by a reader of its own, on one worker thread (a redrive is an
operator's action: rare, and never on the path of a version).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from runtime.deliveries import event_record, publish
from schemas import codec
from schemas.audit import AuditAction, AuditEvent
from schemas.codec import SerializationError
from schemas.enums import DeliveryOutcome
from schemas.events import DeliveryEvent
from schemas.model import Destination, PostingUpdate
from schemas.redrive import RedriveRequest
from schemas.topics import Topics

log = logging.getLogger(__name__)

READ_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Letter:
    """What the dead-letter topic holds at a place: its key and value (None: nothing there
    a read_committed reader can see)."""

    key: bytes | None
    value: bytes | None


class Refused(Exception):
    """The request does not name its letter truly; the message says why."""


def the_version(request: RedriveRequest, letter: Letter | None) -> PostingUpdate:
    """The version the request is to attempt: the one its dead letter holds (Refused when
    the letter is not there, not the posting's, not the version named, or not what an
    older request carries)."""
    where = f"{request.letter_partition}@{request.letter_offset}"
    if letter is None or letter.value is None:
        raise Refused(f"no dead letter at {where}")
    if letter.key is None or letter.key.decode("utf-8", errors="replace") != request.posting_id:
        raise Refused(f"the dead letter at {where} is not posting {request.posting_id!r}'s")
    if request.update and letter.value != request.update:
        raise Refused(f"the request carries a version other than the dead letter at {where} holds")
    try:
        update = codec.posting_updates().decode(letter.value)
    except SerializationError as exc:
        raise Refused(f"the dead letter at {where} holds no readable version ({exc})") from exc
    if (update.posting_id, update.version) != (request.posting_id, request.version):
        raise Refused(f"the dead letter at {where} holds version {update.version}, not {request.version}")
    return update


class LetterReader:
    """Reads one record of a board's dead-letter topic at a time (on a worker thread)."""

    def __init__(self, reader: Consumer, topic: str) -> None:
        self.reader = reader
        self.topic = topic

    def at(self, partition: int, offset: int) -> Letter | None:
        if partition < 0 or offset < 0:
            return None
        self.reader.assign([TopicPartition(self.topic, partition, offset)])
        try:
            deadline = time.monotonic() + READ_TIMEOUT_S
            while time.monotonic() < deadline:
                message = self.reader.poll(0.2)
                if message is None:
                    continue
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF or not error.retriable():
                        return None  # the partition ends before it, or there is no such partition
                    continue
                if message.offset() != offset:
                    return None  # compacted away, or a transaction marker's place
                return Letter(message.key(), message.value())
            raise TimeoutError(f"{self.topic} [{partition}] @{offset} not read in {READ_TIMEOUT_S:.0f} s")
        finally:
            self.reader.unassign()

    def close(self) -> None:
        self.reader.close()


def refuse(
    producer: Producer,
    topics: Topics,
    board: Destination,
    request: RedriveRequest,
    partition: int,
    why: str,
) -> None:
    """Say that the request was refused: a SKIPPED delivery event carrying its id, and an
    audit record naming who asked."""
    now = time.time_ns() // 1_000_000
    log.warning("%s redrive request %s refused: %s", board, request.request_id, why)
    event = DeliveryEvent(
        request.posting_id,
        request.version,
        board,
        0,
        DeliveryOutcome.SKIPPED,
        now,
        error=f"refused: {why}",
        request_id=request.request_id,
    )
    publish(producer, event_record(topics.delivery_events, partition, event))
    audit = AuditEvent(
        now,
        request.requested_by,  # as the request claims it: unverified
        "-",  # no credential: the request came through Kafka, not the API
        AuditAction.REDRIVE_REFUSED,
        request.posting_id,
        request.version,
        f"{board.value}: {why} (request {request.request_id})",
    )
    try:
        producer.produce(topics.audit, codec.audit_events().encode(audit), audit.key.encode())
    except (BufferError, KafkaException) as exc:  # the event above says it as well
        log.error("audit record of a refused redrive not produced: %s", exc)
