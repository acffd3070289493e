"""What a lane holds: one record of a posting."""

from __future__ import annotations

from dataclasses import dataclass, field

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
