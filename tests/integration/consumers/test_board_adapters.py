"""Both adapters and the token source against the real sandbox process (no Kafka): batches
with one element refused, tokens that expire, a budget answering 429, LinkedIn's tasks, an
outage. What a board shows is read from the sandbox's control surface."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace

import aiohttp
import httpx
import pytest

from consumers.board_tokens import ClientCredentials, token_source
from consumers.boards.base import (
    BoardAdapter,
    BoardDown,
    Delivered,
    ElementOutcome,
    JobAction,
    Rejected,
    Submitted,
    TaskState,
    Throttled,
    TokenRefused,
)
from consumers.boards.indeed import IndeedAdapter, IndeedSettings
from consumers.boards.linkedin import LinkedInAdapter, LinkedInSettings
from jobpost_dev.processes import wait_until
from listing.employers import (
    SANDBOX_REGISTRY,
    Employer,
    EmployerRegistry,
    IndeedIdentity,
    LinkedInIdentity,
)
from schemas.model import Op, PostingUpdate
from tests import postings
from tests.unit.consumers.board_server import action
from tests.unit.consumers.board_server import update as an_update

# `default` as the sandbox has it, and an employer with neither a location nor an apply URL:
# its records that name neither (written before postings had to) miss what both boards
# require, and each board refuses just those.
REGISTRY = EmployerRegistry(
    employers={
        **SANDBOX_REGISTRY.employers,
        "vague": Employer(
            company_name="Vague Inc",
            linkedin=LinkedInIdentity(organization="urn:li:organization:99"),
            indeed=IndeedIdentity(
                employer_id="v", employer_id_type="T", source_name="Vague Inc", country="US"
            ),
        ),
    }
)


def update(
    posting_id: str, version: int = 0, op: Op = Op.CREATED, employer: str = "default"
) -> PostingUpdate:
    """Version `version` of the posting (each version its own content), written now: a job
    listed at an old time would be past LinkedIn's lifetime, and closed, from the start."""
    now = time.time_ns() // 1_000_000
    if employer == "vague":  # a record from before locations, with no apply URL either
        posting = postings.posting(0, locations=(), apply_url=None)
    else:
        posting = postings.posting(version)
    return replace(
        an_update(posting_id, version, op, employer, posting), last_update_time_millis=now, accepted_at=now
    )


def actions(updates: Sequence[PostingUpdate], job_ids: dict[str, str] | None = None) -> list[JobAction]:
    """What a lane asks for each version while the board holds what was sent before: CREATE
    for version 0, UPDATE after, CLOSE for a delete (by the board's id of the job, where kept)."""
    return [action(u, job_id=(job_ids or {}).get(u.posting_id)) for u in updates]


@dataclass
class Board:
    """One board's adapter and token source, called as the destination calls them; the
    board's ids of the jobs it answered with, kept as the lane keeps them."""

    adapter: BoardAdapter
    tokens: ClientCredentials
    job_ids: dict[str, str] = field(default_factory=dict)

    async def send(self, updates: Sequence[PostingUpdate]) -> list[ElementOutcome]:
        sent = actions(updates, self.job_ids)
        token = await self.tokens.token()
        try:
            outcomes = await self.adapter.send(sent, token)
        except TokenRefused:  # expire it, fetch one, try once more
            self.tokens.expire(token)
            outcomes = await self.adapter.send(sent, await self.tokens.token())
        for update, outcome in zip(updates, outcomes, strict=True):
            if isinstance(outcome, Delivered) and outcome.job_id:
                self.job_ids[update.posting_id] = outcome.job_id
        return outcomes


@asynccontextmanager
async def boards(url: str) -> AsyncIterator[tuple[Board, Board]]:
    async with aiohttp.ClientSession() as client:
        li_settings = LinkedInSettings(base_url=f"{url}/linkedin")
        in_settings = IndeedSettings(base_url=f"{url}/indeed")
        li_tokens, in_tokens = (
            token_source(client, "linkedin", li_settings),
            token_source(client, "indeed", in_settings),
        )
        assert isinstance(li_tokens, ClientCredentials) and isinstance(in_tokens, ClientCredentials)
        yield (
            Board(LinkedInAdapter(client, li_settings, REGISTRY), li_tokens),
            Board(IndeedAdapter(client, in_settings, REGISTRY), in_tokens),
        )


def control(sandbox, method: str, path: str, body: dict | None = None) -> dict:
    response = httpx.request(method, f"{sandbox.url}/_sandbox/{path}", json=body, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_batch_with_one_element_refused_sends_the_rest_to_both_boards(sandbox, unique):
    ids = [f"{unique}-{n}" for n in range(4)]
    batch = [update(p) for p in ids] + [update(f"{unique}-vague", employer="vague")]

    async def scenario():
        async with boards(sandbox.url) as (linkedin, indeed):
            li = await linkedin.send(batch)
            tasks = [o.task_id for o in li if isinstance(o, Submitted)]
            return (
                li,
                await linkedin.adapter.confirm(tasks, await linkedin.tokens.token()),
                await indeed.send(batch),
            )

    li, confirmed, ind = asyncio.run(scenario())
    assert [type(o) for o in li] == [Submitted] * 4 + [Rejected]
    # LinkedIn's rules, checked before sending: a job without its apply URL is never sent.
    assert "companyApplyUrl" in li[4].reason  # type: ignore[union-attr]
    assert {o.state for o in confirmed.values()} == {TaskState.SUCCEEDED} and len(confirmed) == 4
    assert all(isinstance(o, Delivered) and o.job_id for o in ind[:4]), ind  # each with Indeed's id
    assert isinstance(ind[4], Rejected) and "metadata.url" in ind[4].reason  # Indeed's rules, likewise
    for board in ("linkedin", "indeed"):
        assert [sandbox.posting(board, p)["versions"] for p in ids] == [[0]] * 4
        assert sandbox.posting(board, f"{unique}-vague") is None  # refused by its rules: never sent
        assert control(sandbox, "GET", f"{board}/stats")["max_records_per_call"] == 4


def test_a_delete_closes_the_job_at_both_boards(sandbox, unique):
    posting = f"{unique}-closing"

    async def scenario():
        async with boards(sandbox.url) as (linkedin, indeed):
            for board in (linkedin, indeed):
                assert len(await board.send([update(posting)])) == 1
                closed = await board.send([update(posting, 1, Op.DELETED)])
                assert isinstance(closed[0], Submitted | Delivered), closed
                if isinstance(closed[0], Submitted):
                    await board.adapter.confirm([closed[0].task_id], await board.tokens.token())

    asyncio.run(scenario())
    for board in ("linkedin", "indeed"):
        seen = sandbox.posting(board, posting)
        assert (seen["versions"], seen["status"], seen["duplicates"]) == ([0, 1], "closed", 0)


def test_tokens_that_expire_every_2_s_are_renewed_ahead_and_a_refused_one_once(sandbox, unique):
    for board in ("linkedin", "indeed"):
        control(sandbox, "PUT", f"{board}/limits", {"token_ttl_s": 2})

    async def steady(board: Board, posting: str) -> list[ElementOutcome]:
        outcomes, version, started = [], 0, time.monotonic()
        while time.monotonic() - started < 6:
            outcomes += await board.send(
                [update(posting, version, Op.CREATED if version == 0 else Op.UPDATED)]
            )
            version += 1
            await asyncio.sleep(0.1)  # the pace of the writes, not a wait for an outcome
        return outcomes

    async def scenario():
        async with boards(sandbox.url) as (linkedin, indeed):
            li, ind = await asyncio.gather(steady(linkedin, f"{unique}-li"), steady(indeed, f"{unique}-in"))
            return li, ind, linkedin.tokens.fetches, indeed.tokens.fetches

    li, ind, li_fetches, in_fetches = asyncio.run(scenario())
    assert li and all(isinstance(o, Submitted) for o in li)
    assert ind and all(isinstance(o, Delivered) for o in ind)
    for board, fetches in (("linkedin", li_fetches), ("indeed", in_fetches)):
        stats = control(sandbox, "GET", f"{board}/stats")
        assert stats["expired_token_calls"] == 0, stats  # renewed at half of 2 s, never used expired
        assert stats["tokens_issued"] == fetches and 5 <= fetches <= 8, stats

    control(sandbox, "PUT", "linkedin/limits", {"token_ttl_s": 1800})

    async def refused_once():
        async with boards(sandbox.url) as (linkedin, _):
            first = await linkedin.tokens.token()
            control(sandbox, "PUT", "linkedin/limits", {"token_ttl_s": 0.001})  # ends tokens issued before
            with pytest.raises(TokenRefused):
                await linkedin.adapter.send(actions([update(f"{unique}-late")]), first)
            linkedin.tokens.expire(first)
            control(sandbox, "PUT", "linkedin/limits", {"token_ttl_s": 1800})
            return await linkedin.send([update(f"{unique}-late")]), linkedin.tokens.fetches

    outcome, fetches = asyncio.run(refused_once())
    assert isinstance(outcome[0], Submitted) and fetches == 2
    assert control(sandbox, "GET", "linkedin/stats")["expired_token_calls"] == 1


def test_a_budget_of_records_and_requests_per_minute_answers_honest_429s(sandbox, unique):
    control(sandbox, "PUT", "linkedin/limits", {"records_per_minute": 6})
    control(sandbox, "PUT", "indeed/limits", {"requests_per_minute": 2})

    async def scenario():
        async with boards(sandbox.url) as (linkedin, indeed):
            await linkedin.tokens.token()
            await indeed.tokens.token()
            first = time.monotonic()
            for n in range(3):
                await linkedin.send([update(f"{unique}-{n}-a"), update(f"{unique}-{n}-b")])
            with pytest.raises(Throttled) as li:
                await linkedin.send([update(f"{unique}-late")])
            li_elapsed = time.monotonic() - first
            first = time.monotonic()
            for n in range(2):
                await indeed.send([update(f"{unique}-{n}-c")])
            with pytest.raises(Throttled) as ind:
                await indeed.send([update(f"{unique}-late")])
            return li.value.retry_after_s, li_elapsed, ind.value.retry_after_s, time.monotonic() - first

    li_after, li_elapsed, in_after, in_elapsed = asyncio.run(scenario())
    # When the first call leaves the 60 s window, to the second it is rounded up to.
    assert li_after is not None and abs(li_after - math.ceil(60 - li_elapsed)) <= 1
    assert in_after is not None and abs(in_after - math.ceil(60 - in_elapsed)) <= 1
    li_stats, in_stats = control(sandbox, "GET", "linkedin/stats"), control(sandbox, "GET", "indeed/stats")
    assert (li_stats["max_records_in_60s"], li_stats["throttled"], li_stats["calls"]) == (6, 1, 4)
    assert (in_stats["records"], in_stats["throttled"], in_stats["calls"]) == (2, 1, 3)
    assert sandbox.posting("linkedin", f"{unique}-late")["versions"] == []


def test_linkedin_tasks_confirm_only_once_they_ended_and_a_failed_task_says_why(sandbox, unique):
    control(sandbox, "PUT", "linkedin/limits", {"task_delay_s": 1})
    ids = [f"{unique}-{n}" for n in range(3)]

    async def scenario():
        async with boards(sandbox.url) as (linkedin, _):
            outcomes = await linkedin.send([update(p) for p in ids])
            tasks = [o.task_id for o in outcomes if isinstance(o, Submitted)]
            token = await linkedin.tokens.token()
            at_once = await linkedin.adapter.confirm(tasks, token)
            applied_meanwhile = [sandbox.posting("linkedin", p)["versions"] for p in ids]
            ended: dict = {}
            deadline = time.monotonic() + 15
            while not (len(ended) == 3 and all(o.state != TaskState.IN_PROGRESS for o in ended.values())):
                assert time.monotonic() < deadline, f"tasks still in progress: {ended}"
                await asyncio.sleep(0.1)  # polling, as the destination's poller does
                ended = await linkedin.adapter.confirm(tasks, token)
            control(sandbox, "PUT", "linkedin/limits", {"task_delay_s": 0, "task_fail_probability": 1})
            (failing,) = await linkedin.send([update(ids[0], 1, Op.UPDATED)])
            assert isinstance(failing, Submitted)
            return at_once, applied_meanwhile, ended, await linkedin.adapter.confirm([failing.task_id], token)

    at_once, meanwhile, ended, failed = asyncio.run(scenario())
    assert {o.state for o in at_once.values()} == {TaskState.IN_PROGRESS}
    assert meanwhile == [[]] * 3  # a receipt is not a delivery
    assert {o.state for o in ended.values()} == {TaskState.SUCCEEDED}
    (outcome,) = failed.values()
    assert outcome.state == TaskState.FAILED and outcome.error and "was dropped" in outcome.error
    seen = sandbox.posting("linkedin", ids[0])
    assert seen["versions"] == [0]
    first, second = seen["log"]
    assert first["ended_at"] - first["submitted_at"] >= 1000 and second["submitted_at"] >= first["ended_at"]
    assert (second["state"], second["version"]) == ("FAILED", 1)


def test_an_outage_is_the_board_down_its_token_endpoint_included_and_the_other_board_unharmed(
    sandbox, unique
):
    sandbox.faults("linkedin", "outage")

    async def scenario():
        async with boards(sandbox.url) as (linkedin, indeed):
            with pytest.raises(BoardDown):
                await linkedin.tokens.token()
            with pytest.raises(BoardDown):
                await linkedin.adapter.send(actions([update(f"{unique}-a")]), "any-token")
            during = await indeed.send([update(f"{unique}-b")])
            sandbox.faults("linkedin", "none")
            return during, await linkedin.send([update(f"{unique}-a")])

    during, after = asyncio.run(scenario())
    assert [type(o) for o in during] == [Delivered] and isinstance(after[0], Submitted)
    wait_until(
        lambda: sandbox.posting("linkedin", f"{unique}-a")["versions"] == [0], 10, "LinkedIn after the outage"
    )
    assert control(sandbox, "GET", "linkedin/stats")["calls"] == 2  # the one in the outage, the one after
