"""Indeed Job Sync API: GraphQL `POST {base}/graphql`. What is sent is built in `request`,
what Indeed answered is read in `answers`; the adapter here makes the calls.

What is sent follows from what Indeed holds (`consumers.job_rules`): every content is an
upsert (Indeed's own identity of a job, `jobPostingId` + `sourceName` + the client, makes a
repeat the same job: no `Idempotency-Key`, which Indeed does not read); a close expires the
job by the `sourcedPostingId` kept from its upsert, so a job is expired even after its
employer's `sourceName` changed. Only a job whose id was never kept (a delivery state from
before v3) is upserted first, in the same call as the batch's other jobs, to learn it. An
upsert Indeed answers with another id than the one held (the `sourceName` changed: Indeed made
a new job) expires the held job in the same delivery; a job whose expiry failed is kept in the
posting's state (`BoardJob.replaced_ids`) and expired with its next call, never left live. Time
out after 5 s ("initiate a timeout after 5,000 milliseconds").

Jobs per call: Indeed's create limits fall with the batch (1 job: 4,000 calls a minute; 2 to
10: 800; more than 10: 40, per its Job Sync rate-limit table), so 10 a call — 8,000 jobs a
minute — is the default; its FAQ allows up to 100.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import aiohttp
from pydantic import Field

from consumers.boards import Answer, call, prepare, settled
from consumers.boards.base import (
    BoardDown,
    BoardListing,
    CallFailed,
    ElementOutcome,
    JobAction,
    JobRef,
    Operation,
    TaskOutcome,
    Throttled,
    TokenRefused,
    Unsure,
)
from consumers.boards.indeed import answers
from consumers.boards.indeed.request import (
    EXPIRE,
    EXPIRE_FIELD,
    STATUS,
    STATUS_IDS_PER_CALL,
    UPSERT,
    UPSERT_FIELD,
    job_for,
)
from consumers.boards.settings import BoardSettings
from listing.employers import EmployerRegistry, Employers, employers_for
from schemas.model import Destination


class IndeedSettings(BoardSettings):
    ENV: ClassVar[str] = "JOBPOST_CONSUMER_INDEED__"
    TOKEN_PATH: ClassVar[str] = "/oauth/v2/tokens"  # real: https://apis.indeed.com/oauth/v2/tokens

    base_url: str = "http://127.0.0.1:8090/indeed"  # real: https://apis.indeed.com
    """Indeed's API (default: the sandbox's; the real one is https://apis.indeed.com)"""
    max_batch: int = Field(default=10, ge=1, le=100, description="jobs per call")


class IndeedAdapter:
    """`consumers.boards.base.BoardAdapter` for Indeed (synchronous: nothing to confirm)."""

    destination = Destination.INDEED
    confirms = False
    restates = False  # a close is an expiry by id
    renews = False  # "Jobs don't auto-expire"
    listings_per_call = STATUS_IDS_PER_CALL
    tasks_per_call = 0  # no tasks

    def __init__(
        self,
        client: aiohttp.ClientSession,
        settings: IndeedSettings,
        employers: EmployerRegistry | Employers | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.max_batch = settings.max_batch
        self.employers = employers_for(employers, settings.employers_file)

    async def send(self, actions: Sequence[JobAction], token: str) -> list[ElementOutcome]:
        """The batch's upserts in one call (a close of a job whose id was never kept among
        them, to learn it), then its expiries by id in a second call: each close's job, and
        every job an upsert replaced (`_replaced`) that is still live."""
        outcomes, jobs = prepare(actions, lambda action: job_for(action, self.employers.current()))
        expiring = [
            (i, sourced_id)
            for i, a in enumerate(actions)
            if a.operation == Operation.CLOSE and a.job_id
            for sourced_id in (a.job_id, *a.replaced_ids)
        ]
        if jobs:
            answer = await self._mutate(UPSERT, {"jobPostings": [job for _, job in jobs]}, token)
            for (index, _), (outcome, sourced_id) in zip(
                jobs, answers.results(answer, len(jobs), UPSERT_FIELD), strict=True
            ):
                action = actions[index]
                if action.operation != Operation.CLOSE:
                    outcomes[index] = outcome
                    if sourced_id is not None:
                        expiring.extend((index, old) for old in _replaced(action, sourced_id))
                elif sourced_id is None:
                    outcomes[index] = answers.closing(outcome)
                else:
                    expiring.extend((index, old) for old in (sourced_id, *action.replaced_ids))
        if expiring:
            expired = await self._expire([sourced_id for _, sourced_id in expiring], token)
            for index in dict.fromkeys(i for i, _ in expiring):
                mine = [(sid, o) for (i, sid), o in zip(expiring, expired, strict=True) if i == index]
                outcomes[index] = answers.after_expiry(actions[index], outcomes[index], mine)
        return settled(outcomes)

    async def confirm(self, task_ids: Sequence[str], token: str) -> dict[str, TaskOutcome]:
        return {}  # Indeed answers synchronously: nothing is ever submitted

    async def listings(self, jobs: Sequence[JobRef], token: str) -> dict[str, BoardListing]:
        """Each job's post status, by posting id; a job without a kept id is not asked about."""
        ids = {job.job_id: job.posting_id for job in jobs if job.job_id}
        found: dict[str, BoardListing] = {}
        asked = list(ids)
        for start in range(0, len(asked), STATUS_IDS_PER_CALL):
            chunk = asked[start : start + STATUS_IDS_PER_CALL]
            answer = await self._post({"query": STATUS, "variables": {"ids": chunk}}, token)
            for sourced_id, listing in answers.statuses(answer, chunk).items():
                found[ids[sourced_id]] = listing
        return found

    async def _expire(self, sourced_ids: list[str], token: str) -> list[ElementOutcome]:
        """The expiry call: a failure of it as a whole leaves the upserts' outcomes standing
        and makes each close unknown (retried)."""
        jobs = {"jobs": [{"sourcedPostingId": sourced_id} for sourced_id in sourced_ids]}
        try:
            answer = await self._mutate(EXPIRE, jobs, token)
            return [outcome for outcome, _ in answers.results(answer, len(sourced_ids), EXPIRE_FIELD)]
        except Throttled as exc:
            return [Unsure(f"the expire call: {exc}", exc.retry_after_s) for _ in sourced_ids]
        except (BoardDown, CallFailed, TokenRefused) as exc:
            return [Unsure(f"the expire call: {exc}") for _ in sourced_ids]

    async def _mutate(self, query: str, given: dict[str, Any], token: str) -> Answer:
        return await self._post({"query": query, "variables": {"input": given}}, token)

    async def _post(self, body: dict[str, Any], token: str) -> Answer:
        return await call(
            self.client,
            self.destination,
            "POST",
            f"{self.settings.base_url}/graphql",
            headers={"Authorization": f"Bearer {token}"},
            timeout_s=self.settings.timeout_s,
            json_body=body,
        )


def _replaced(action: JobAction, sourced_id: str) -> tuple[str, ...]:
    """The jobs an upsert answered `sourced_id` replaced: those the posting's state keeps to
    expire, and the job it held when Indeed answers another id (the employer's `sourceName`
    changed, so Indeed made a new job and the held one would stay live for good)."""
    held = () if action.job_id is None else (action.job_id,)
    return tuple(old for old in dict.fromkeys((*action.replaced_ids, *held)) if old != sourced_id)
