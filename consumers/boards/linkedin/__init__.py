"""LinkedIn Job Posting API: `POST {base}/rest/simpleJobPostings` as a Rest.li
batch_create, then `GET {base}/rest/simpleJobPostingTasks?ids=…` for what became of it, and
`GET {base}{status_path}?ids=…` for the job posting status. What is sent is built in
`request`, what LinkedIn answered is read in `answers`; the adapter here makes the calls.

What is sent follows from what LinkedIn holds (`consumers.job_rules`), never from the
version number: CREATE until a CREATE's task succeeded, UPDATE after, CLOSE only for a job it
holds; RENEW (a full job body, "extend the expiry date of the listed job by 30 days",
update-renew-jobs) before its lifetime lapses. A CLOSE and a RENEW restate the job's content:
"a copy of the Create … request with jobPostingOperationType set to CLOSE" (the OpenAPI file).
LinkedIn reads no `Idempotency-Key`; a repeat is judged by its identity of a job (the partner
and `externalJobPostingId`), as `answers` reads a failed task.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import aiohttp
from pydantic import Field

from consumers.boards import Answer, call, prepare, settled
from consumers.boards.base import BoardListing, ElementOutcome, JobAction, JobRef, TaskOutcome
from consumers.boards.linkedin import answers
from consumers.boards.linkedin.request import (
    MOST_PER_CALL,
    QUERY_MAX_BYTES,
    STATUS_IDS_PER_CALL,
    TASK_IDS_PER_CALL,
    element_for,
    id_chunks,
)
from consumers.boards.settings import BoardSettings
from listing.employers import EmployerRegistry, Employers, employers_for
from schemas.model import Destination


class LinkedInSettings(BoardSettings):
    ENV: ClassVar[str] = "JOBPOST_CONSUMER_LINKEDIN__"
    TOKEN_PATH: ClassVar[str] = "/oauth/v2/accessToken"  # real: https://www.linkedin.com/oauth/v2/accessToken

    base_url: str = "http://127.0.0.1:8090/linkedin"  # real: https://api.linkedin.com
    """LinkedIn's API (default: the sandbox's; the real one is https://api.linkedin.com)"""
    version: str = Field(default="202604", pattern=r"^\d{6}$", description="LinkedIn-Version, YYYYMM")
    status_path: str = Field(
        default="/v2/jobPostingStatus",
        description="the job posting status API under base_url (the path LinkedIn's SDK uses)",
    )
    job_lifetime_s: float = Field(
        default=180 * 86_400.0, gt=0, description="how long a basic job lives from its listedAt"
    )
    renewal_s: float = Field(default=30 * 86_400.0, gt=0, description="what a RENEW adds to a job's life")
    records_per_day: int | None = Field(
        default=60_000,
        ge=1,
        description="jobs posted a day, for the whole group (LinkedIn's premium sync limit: 60,000 records a "
        "day, reset at 00:00 UTC)",
    )
    requests_per_day: int | None = Field(
        default=100_000,
        ge=1,
        description="simpleJobPostings calls a day, for the whole group (LinkedIn's premium sync limit: "
        "100,000 requests a day)",
    )
    task_status_calls_per_day: int | None = Field(
        default=300_000,
        ge=1,
        description="simpleJobPostingTasks calls a day, for the whole group (LinkedIn's check job task "
        "status page: 300,000 calls a day)",
    )


class LinkedInAdapter:
    """`consumers.boards.base.BoardAdapter` for LinkedIn."""

    destination = Destination.LINKEDIN
    max_batch = MOST_PER_CALL
    confirms = True
    restates = True
    renews = True
    listings_per_call = STATUS_IDS_PER_CALL
    tasks_per_call = TASK_IDS_PER_CALL

    def __init__(
        self,
        client: aiohttp.ClientSession,
        settings: LinkedInSettings,
        employers: EmployerRegistry | Employers | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.employers = employers_for(employers, settings.employers_file)

    async def send(self, actions: Sequence[JobAction], token: str) -> list[ElementOutcome]:
        outcomes, sent = prepare(actions, lambda action: element_for(action, self.employers.current()))
        if sent:
            answer = await call(
                self.client,
                self.destination,
                "POST",
                f"{self.settings.base_url}/rest/simpleJobPostings",
                headers={
                    **self._headers(token),
                    "X-Restli-Protocol-Version": "2.0.0",
                    "x-restli-method": "batch_create",
                },
                timeout_s=self.settings.timeout_s,
                json_body={"elements": [element for _, element in sent]},
            )
            answered = answers.element_outcomes(answer, [actions[i] for i, _ in sent])
            for (index, _), outcome in zip(sent, answered, strict=True):
                outcomes[index] = outcome
        return settled(outcomes)

    async def listings(self, jobs: Sequence[JobRef], token: str) -> dict[str, BoardListing]:
        """The job posting status of each job, by its `externalJobPostingId` (the posting id)."""
        found: dict[str, BoardListing] = {}
        for chunk in id_chunks([job.posting_id for job in jobs], STATUS_IDS_PER_CALL, QUERY_MAX_BYTES):
            found.update(answers.listings(await self._by_ids(self.settings.status_path, chunk, token), chunk))
        return found

    async def confirm(self, task_ids: Sequence[str], token: str) -> dict[str, TaskOutcome]:
        found: dict[str, TaskOutcome] = {}
        for start in range(0, len(task_ids), TASK_IDS_PER_CALL):
            chunk = task_ids[start : start + TASK_IDS_PER_CALL]
            answer = await self._by_ids("/rest/simpleJobPostingTasks", chunk, token)
            found.update(answers.task_outcomes(answer, chunk))
        return found

    async def _by_ids(self, path: str, ids: Sequence[str], token: str) -> Answer:
        """A GET of LinkedIn's that names what it asks about as repeated `ids` parameters."""
        return await call(
            self.client,
            self.destination,
            "GET",
            f"{self.settings.base_url}{path}",
            headers=self._headers(token),
            timeout_s=self.settings.timeout_s,
            params=[("ids", one) for one in ids],
        )

    def _headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}", "LinkedIn-Version": self.settings.version}
