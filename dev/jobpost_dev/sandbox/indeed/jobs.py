"""A job as Indeed holds it: upserted by `jobPostingId` + `sourceName` and the OAuth client
("Submit the entire payload with updated fields using the same jobPostingId, sourceName, and
OAuth client ID": the older Job Sync guide), known by the `sourcedPostingId` Indeed gives it
("Make sure you always save the sourcedPostingId value. You need this value to either expire
jobs": createSourcedJobPostings). Indeed returns no URL for a job.

Received is not live: "Successful responses indicate that Indeed received the job posting.
Indeed indexes the job and makes it available, pending spam and fraud detection, in minutes
to hours" (createSourcedJobPostings). Here a job is received, then after `indexing_delay_s`
live, or rejected (`rejection_probability`, drawn when it is received; or a test's close
before it is live). Its status reads as Indeed's `JobPostStatus` (docs.indeed.com/api/job/
objects/JobPostStatus): `isRejected`, and `lifecycleStatus`, whose values the visible
documents do not list: PENDING, ACTIVE, INACTIVE here, as third-party clients have it.

Expired by the partner (`expireSourcedJobsBySourcedPostingId`), a job stays expired ("Jobs
don't auto-expire"); "You can reactivate a job for 30 days after it's expired" by upserting
it again: the same `sourcedPostingId`; after that, "the API will likely return a new
sourcedPostingId value": a new job."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

# What a test's close, or the draw, says of a job Indeed will not show (the documents give
# Indeed's reasons nowhere in the API: they stay on the sandbox's side).
DRAWN = "rejected at indexing (the sandbox's rejection_probability)"


@dataclass
class IndeedJob:
    sourced_id: str
    client: str
    source_name: str
    posting_id: str  # the jobPostingId
    content: dict[str, Any]
    version: int  # the content's number (`state.PostingRecord`)
    received_at_ms: int
    indexed_at_ms: int  # when indexing ends: live, or rejected
    rejects: bool  # what indexing will make of it
    state: Literal["open", "expired", "closed_by_board"] = "open"
    reason: str | None = None
    expired_at_ms: int | None = None
    since_ms: int = 0
    rejection_counted: bool = False  # in the board's stats

    def status(self, now_ms: int) -> str:
        """received, live, rejected (at indexing), closed (expired by the partner),
        closed_by_board (taken down after it was live)."""
        if self.state == "expired":
            return "closed"
        if self.state == "closed_by_board":
            return "closed_by_board"
        if now_ms < self.indexed_at_ms:
            return "received"
        return "rejected" if self.rejects else "live"

    def receive(self, now_ms: int, delay_s: float | None, rejects: bool) -> None:
        """Into indexing again: received now, live or rejected after the delay."""
        self.state, self.reason, self.expired_at_ms = "open", None, None
        self.received_at_ms = self.since_ms = now_ms
        self.indexed_at_ms = now_ms + round((delay_s or 0) * 1000)
        self.rejects, self.rejection_counted = rejects, False

    def node(self, now_ms: int) -> dict[str, Any]:
        """The job as a GraphQL `node(id: <sourcedPostingId>)` answers it."""
        status = self.status(now_ms)
        lifecycle = {"received": "PENDING", "live": "ACTIVE"}.get(status, "INACTIVE")
        return {
            "__typename": "SourcedJobPosting",
            "id": self.sourced_id,
            "sourcedPostingId": self.sourced_id,
            "status": {
                "lifecycleStatus": lifecycle,
                "isRejected": status in ("rejected", "closed_by_board"),
                "isIndeedApplyActive": False,
            },
        }

    def to_json(self, now_ms: int) -> dict[str, Any]:
        """`GET /_sandbox/indeed/jobs`."""
        status = self.status(now_ms)
        since = (
            self.indexed_at_ms if status in ("live", "rejected") and self.state == "open" else self.since_ms
        )
        return {
            "id": self.sourced_id,
            "url": None,
            "posting_id": self.posting_id,
            "source_name": self.source_name,
            "version": self.version,
            "status": status,
            "reason": self.reason or (DRAWN if status == "rejected" else None),
            "since": since,
            "title": _title(self.content),
        }


def _title(content: dict[str, Any]) -> Any:
    body = content.get("body")
    return body.get("title") if isinstance(body, dict) else None
