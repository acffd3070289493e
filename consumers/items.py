"""What a lane holds: one record of a posting, read from `jobpost.postings` (a version, or
the tombstone after a DELETED one) or from `jobpost.<board>.redrive` (a redrive request
carrying a dead-lettered version: `schemas.redrive.RedriveRequest`; whoever asks only writes
the request, `runtime.redrive`). A record nobody can read raises `PoisonRecord`."""

from __future__ import annotations

from dataclasses import dataclass, field

from confluent_kafka import Message

from runtime import records
from runtime.kafka import coordinates
from schemas import codec
from schemas.codec import SerializationError
from schemas.model import Op, PostingUpdate
from schemas.redrive import RedriveRequest


@dataclass(frozen=True)
class Item:
    """One record of a posting, as the lane sees it: a version from `jobpost.postings`, or
    a redrive request (`request`) carrying a dead-lettered version."""

    posting_id: str
    update: PostingUpdate | None  # None: a tombstone
    partition: int
    offset: int
    source: object = field(default=None, compare=False)  # the Kafka message, for a dead letter
    request: RedriveRequest | None = None
    timestamp_ms: int = 0  # when Kafka took the record (how old unfinished work is)

    @property
    def version(self) -> int:
        return -1 if self.update is None else self.update.version

    @property
    def deletes(self) -> bool:
        return self.update is not None and self.update.op == Op.DELETED

    @property
    def request_id(self) -> str | None:
        return None if self.request is None else self.request.request_id


def posting_item(message: Message) -> Item:
    """A record of `jobpost.postings` as a lane item."""
    posting_id, update = records.posting_update(message)
    _, partition, offset = coordinates(message)
    return Item(posting_id, update, partition, offset, message, timestamp_ms=message.timestamp()[1])


def request_item(message: Message) -> Item:
    """A redrive request as a lane item; PoisonRecord when it cannot be read, or when the
    version it carries is not the posting and version it names."""
    posting_id = records.text_key(message)
    value = message.value()
    if value is None:
        raise records.PoisonRecord("a redrive request without a value")
    try:
        request = codec.redrive_requests().decode(value)
        update = codec.posting_updates().decode(request.update)
    except SerializationError as exc:
        raise records.PoisonRecord(str(exc)) from exc
    if (request.posting_id, update.posting_id, update.version) != (posting_id, posting_id, request.version):
        raise records.PoisonRecord(
            f"the request for {request.posting_id!r} v{request.version} carries {update.posting_id!r} "
            f"v{update.version} under key {posting_id!r}"
        )
    _, partition, offset = coordinates(message)
    return Item(
        posting_id, update, partition, offset, message, request=request, timestamp_ms=message.timestamp()[1]
    )
