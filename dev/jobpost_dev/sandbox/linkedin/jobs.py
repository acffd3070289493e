"""A job as LinkedIn holds it: identified by the partner and its `externalJobPostingId`
("Job {partner=urn:li:jobPostingPartner:…, partnerJobCode=<externalJobPostingId>}",
check-job-taskstatus), with LinkedIn's own id (`urn:li:jobPosting:<n>`, the task's
`jobPosting`) and page (`https://www.linkedin.com/jobs/view/<n>`), its lifetime, and its
listing status as the job posting status API reports it.

Status (LinkedIn's Java SDK, models and fixture of `GET /v2/jobPostingStatus`, linked to
check-job-posting-status): `listingStatus` LISTED | NOT_LISTED | IN_PROGRESS, with
`listingStatusDetail` {errorCode?, errorType: CUSTOMER_ERROR | PARTNER_ERROR |
LINKEDIN_ERROR, statusMessage}; `jobPostingUrl` "Will only be present if job is listed on
LinkedIn". LinkedIn closes jobs itself (its help page "Job posting status errors":
MEMBER_REPORTED "LinkedIn automatically closes jobs that are reported multiple times", …),
and a job lives 180 days unless renewed (`limits`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal

JOB_URN = "urn:li:jobPosting:"
JOB_PAGE = "https://www.linkedin.com/jobs/view/"
PARTNER_URN = "urn:li:jobPostingPartner:"
# What LinkedIn says of a reason it closes a job for, where a document words it (the help
# page's MEMBER_REPORTED; the others are check-job-taskstatus's messages); any other reason
# (BLOCKED_COUNTRY, CUSTOMER_EXCLUDED, …) is reported as its code.
BOARD_REASONS = {
    "MEMBER_REPORTED": "LinkedIn automatically closes jobs that are reported multiple times",
    "INVALID_LOCATION": "This job has an invalid location.",
    "MISSING_LOCATION": "This job is missing location data.",
    "SPAM": "This job was determine to be spam.",
}
CLOSED_BY_POSTER = "This job was closed by original poster."  # check-job-taskstatus
EXPIRED = "This job has expired."  # the sandbox's words: the documents give none


def partner_urn(client_id: str) -> str:
    """The partner a client is at LinkedIn: a number of its own, stable for the client."""
    return f"{PARTNER_URN}{int(hashlib.sha256(client_id.encode()).hexdigest()[:12], 16) % 10**8}"


@dataclass
class Job:
    number: int  # LinkedIn's job id
    partner: str  # the client (application) that made it
    external_id: str
    content: dict[str, Any]  # the last content applied, without its operation
    version: int  # that content's number (`state.PostingRecord`)
    listed_at_ms: int
    expires_at_ms: int | None
    state: Literal["open", "closed", "closed_by_board"] = "open"
    reason: str | None = None  # the board's, when it closed the job
    since_ms: int = 0  # when the job came to its status

    @property
    def urn(self) -> str:
        return f"{JOB_URN}{self.number}"

    @property
    def url(self) -> str:
        return f"{JOB_PAGE}{self.number}"

    def expired(self, now_ms: int) -> bool:
        return self.state == "open" and self.expires_at_ms is not None and now_ms >= self.expires_at_ms

    def status(self, now_ms: int) -> str:
        """The sandbox's word for it: live, closed (by the partner), closed_by_board, expired."""
        if self.expired(now_ms):
            return "expired"
        return "live" if self.state == "open" else self.state

    def listing(self, now_ms: int) -> dict[str, Any]:
        """The job as `GET /v2/jobPostingStatus` reports it."""
        status = self.status(now_ms)
        found: dict[str, Any] = {
            "externalJobPostingId": self.external_id,
            "jobPostingInfo": {
                "listedAt": self.listed_at_ms,
                "expireAt": self.expires_at_ms,
                "location": self.content.get("location"),
                "alternateLocations": self.content.get("alternateLocations", []),
            },
            "listingStatus": "LISTED" if status == "live" else "NOT_LISTED",
            "linkedInApplyStatus": "NOT_ENABLED",
            "promotionStatus": "NOT_PROMOTED",
        }
        if status == "live":
            found["jobPostingUrl"] = self.url
        elif status == "closed":
            found["listingStatusDetail"] = {"errorType": "CUSTOMER_ERROR", "statusMessage": CLOSED_BY_POSTER}
        elif status == "expired":
            found["listingStatusDetail"] = {
                "errorCode": "EXPIRED",
                "errorType": "LINKEDIN_ERROR",
                "statusMessage": EXPIRED,
            }
        else:
            reason = self.reason or "MEMBER_REPORTED"
            found["listingStatusDetail"] = {
                "errorCode": reason,
                "errorType": "LINKEDIN_ERROR",
                "statusMessage": BOARD_REASONS.get(reason, reason),
            }
        return found

    def to_json(self, now_ms: int) -> dict[str, Any]:
        """`GET /_sandbox/linkedin/jobs`."""
        status = self.status(now_ms)
        since = self.expires_at_ms if status == "expired" else self.since_ms
        return {
            "id": self.urn,
            "url": self.url,
            "posting_id": self.external_id,
            "partner": self.partner,
            "version": self.version,
            "status": status,
            "reason": self.reason if status == "closed_by_board" else None,
            "since": since,
            "listed_at": self.listed_at_ms,
            "expires_at": self.expires_at_ms,
            "title": self.content.get("title"),
        }
