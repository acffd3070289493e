"""The audit record: who did what, when, with what result (the value of `jobpost.audit`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class AuditAction(StrEnum):
    CREATE = "postings.create"
    REPLACE = "postings.replace"
    DELETE = "postings.delete"
    REDRIVE = "ops.redrive"
    REDRIVE_REFUSED = "ops.redrive_refused"  # a board consumer refused a request unlike its letter
    FAULTS = "ops.faults"
    SNAPSHOT = "ops.snapshot"  # a replica's stores copied (every employer's postings)
    WEBHOOK_REGISTER = "webhooks.register"
    WEBHOOK_DELETE = "webhooks.delete"
    WEBHOOK_ROTATE = "webhooks.rotate"
    WEBHOOK_REPLAY = "webhooks.replay"


@dataclass(frozen=True, slots=True)
class AuditEvent:
    at: int  # epoch millis
    actor: str  # the credential's name
    employer: str  # the credential's employer
    action: AuditAction
    posting_id: str | None = None
    version: int | None = None  # a write's resulting version; a redrive's dead-lettered one
    detail: str | None = None

    @property
    def key(self) -> str:
        """A posting's events in order on one partition; an operator's action by its actor."""
        return self.posting_id or self.actor

    def to_avro(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "actor": self.actor,
            "employer": self.employer,
            "action": self.action.value,
            "posting_id": self.posting_id,
            "version": self.version,
            "detail": self.detail,
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> AuditEvent:
        return AuditEvent(
            record["at"],
            record["actor"],
            record["employer"],
            AuditAction(record["action"]),
            record["posting_id"],
            record["version"],
            record["detail"],
        )
