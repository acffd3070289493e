"""The record of `jobpost.delivery-events`: what each delivery attempt came to, for the
timeline of a posting (`GET /postings/{id}/timeline`). Written by the board consumers and
the indexer beside their delivery states; informational, so a lost event never holds a
delivery back (the delivery state stays the source of truth)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schemas.enums import _DELIVERY_OUTCOMES, _DESTINATIONS, DeliveryOutcome, Destination


@dataclass(frozen=True, slots=True)
class DeliveryEvent:
    posting_id: str
    version: int
    destination: Destination
    attempt: int
    outcome: DeliveryOutcome
    at: int
    error: str | None = None
    next_attempt_at: int | None = None

    def to_avro(self) -> dict[str, Any]:
        return {
            "posting_id": self.posting_id,
            "version": self.version,
            "destination": self.destination,
            "attempt": self.attempt,
            "outcome": self.outcome,
            "error": self.error,
            "next_attempt_at": self.next_attempt_at,
            "at": self.at,
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> DeliveryEvent:
        return DeliveryEvent(
            record["posting_id"],
            record["version"],
            _DESTINATIONS[record["destination"]],
            record["attempt"],
            _DELIVERY_OUTCOMES[record["outcome"]],
            record["at"],
            record["error"],
            record["next_attempt_at"],
        )
