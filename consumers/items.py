"""What a lane holds: one record of a posting, read from `jobpost.postings` (a version, or
the tombstone after a DELETED one) or from `jobpost.<board>.redrive` (a redrive request
carrying a dead-lettered version: `schemas.redrive.RedriveRequest`; whoever asks only writes
the request, `runtime.redrive`), or news of the posting's job that the consumer learned
itself (`JobNews`: the board's status read back, the posting's expiry reached, the board's
lifetime about to lapse), queued in the lane like a record so that the lane stays the only
writer of the posting's state. A record nobody can read raises `PoisonRecord`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from confluent_kafka import Message

from consumers.boards.base import BoardListing
from runtime import records
from runtime.kafka import coordinates
from schemas import codec
from schemas.codec import SerializationError
from schemas.model import Op, PostingUpdate
from schemas.redrive import RedriveRequest


class NewsKind(StrEnum):
    STATUS = "status"  # the board's status of the job, read back (`listing`)
    EXPIRE = "expire"  # the posting's expiry date came: close the job
    RENEW = "renew"  # the board's lifetime of the job ends soon: renew it


@dataclass(frozen=True)
class JobNews:
    kind: NewsKind
    listing: BoardListing | None = None  # STATUS: what the board said


@dataclass(frozen=True)
class Item:
    """One record of a posting, as the lane sees it: a version from `jobpost.postings`, a
    redrive request (`request`) carrying a dead-lettered version, or news of its job
    (`news`: no record of Kafka's, nothing to commit)."""

    posting_id: str
    update: PostingUpdate | None  # None: a tombstone
    partition: int
    offset: int
    source: object = field(default=None, compare=False)  # the Kafka message, for a dead letter
    request: RedriveRequest | None = None
    timestamp_ms: int = 0  # when Kafka took the record (how old unfinished work is)
    news: JobNews | None = None

    @property
    def version(self) -> int:
        return -1 if self.update is None else self.update.version

    @property
    def deletes(self) -> bool:
        return self.update is not None and self.update.op == Op.DELETED

    @property
    def request_id(self) -> str | None:
        return None if self.request is None else self.request.request_id


def news_item(posting_id: str, partition: int, news: JobNews) -> Item:
    """News of the posting's job, for its lane (on the posting's partition, so it goes when
    the partition does)."""
    return Item(posting_id, None, partition, -1, news=news)


def posting_item(message: Message) -> Item:
    """A record of `jobpost.postings` as a lane item."""
    posting_id, update = records.posting_update(message)
    _, partition, offset = coordinates(message)
    return Item(posting_id, update, partition, offset, message, timestamp_ms=message.timestamp()[1])


def request_item(message: Message) -> Item:
    """A redrive request as a lane item, without its version yet: that is read from the dead
    letter the request names (`consumers.letter_check`). PoisonRecord when it cannot be read,
    or when it names another posting than its key."""
    posting_id = records.text_key(message)
    value = message.value()
    if value is None:
        raise records.PoisonRecord("a redrive request without a value")
    try:
        request = codec.redrive_requests().decode(value)
    except SerializationError as exc:
        raise records.PoisonRecord(str(exc)) from exc
    if request.posting_id != posting_id:
        raise records.PoisonRecord(f"the request for {request.posting_id!r} under key {posting_id!r}")
    _, partition, offset = coordinates(message)
    return Item(
        posting_id, None, partition, offset, message, request=request, timestamp_ms=message.timestamp()[1]
    )
