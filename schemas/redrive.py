"""A request to attempt a dead-lettered version once more: the value of
`jobpost.<board>.redrive`, keyed by posting id, on the posting's partition number. It names
its dead letter (partition, offset, version) and carries none of its text. The
board's consumer handles it in the posting's lane (never below what it delivered); whoever
asks (`jobpost dlq redrive`, the playground) only writes it and reads the outcome from the
delivery events."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RedriveRequest:
    request_id: str
    posting_id: str
    version: int
    # Empty: the version is the one the letter at (letter_partition, letter_offset) holds, so
    # no request keeps a posting's text. A request of an older release carries the letter's
    # bytes here; the consumer takes it only if they are exactly the letter's.
    update: bytes
    letter_partition: int
    letter_offset: int
    requested_by: str
    requested_at: int

    def to_avro(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "posting_id": self.posting_id,
            "version": self.version,
            "update": self.update,
            "letter_partition": self.letter_partition,
            "letter_offset": self.letter_offset,
            "requested_by": self.requested_by,
            "requested_at": self.requested_at,
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> RedriveRequest:
        return RedriveRequest(
            record["request_id"],
            record["posting_id"],
            record["version"],
            record["update"],
            record["letter_partition"],
            record["letter_offset"],
            record["requested_by"],
            record["requested_at"],
        )
