"""jobpost's promise written on Restate, for issue 40's side-by-side (`python -m bench restate`):
the same checks of a body, the same record, the same adapters and token sources calling the
same sandbox, with Restate's durable execution where jobpost has Kafka, the sequencer and
the board consumers. Served by hypercorn, registered with a `restate-server`; not part of
jobpost (it needs `restate-sdk` and `hypercorn`, which jobpost does not).

- `Posting/{id}/put` (a virtual object: one writer per posting, as the sequencer is) checks
  the body as the API does (`PostingIn`, its limits, what the boards would refuse: 400 from
  Restate's ingress where the API answers 422), gives it the posting's next version, keeps
  the record as the object's state and sends it to both boards' objects; it answers once
  Restate has journalled that, as the API answers once the record is committed;
- `LinkedIn/{id}/deliver` and `Indeed/{id}/deliver` (one object per posting per board, so a
  board's versions of a posting go in order and a slow board or posting holds up no other)
  CREATE until a CREATE succeeded and UPDATE after (what the board holds decides, as
  `consumers.job_rules` does, without renewals or closes, which the loads never ask for),
  one version per call, and for LinkedIn poll its task until it ends (at once, then every
  `TASK_POLL_S`). Each call is a `ctx.run` retried as jobpost retries (3 s first, 60 s at
  most between tries, 100 tries, one hour), so a version is delivered once it has been
  accepted. Versions are not conflated: each one reaches the board.
"""

from __future__ import annotations

import dataclasses
import os
from datetime import timedelta
from typing import Any

import aiohttp
import restate
from pydantic import ValidationError
from restate import ObjectContext, RunOptions, TerminalError, VirtualObject

import listing
from consumers.board_tokens import token_source
from consumers.boards.base import (
    BoardAdapter,
    Delivered,
    JobAction,
    JobExists,
    NoJob,
    Operation,
    Rejected,
    Submitted,
    TaskState,
    TokenSource,
    Unsure,
)
from consumers.boards.indeed import IndeedAdapter
from consumers.boards.linkedin import LinkedInAdapter
from consumers.config import ConsumerSettings
from listing.employers import SANDBOX_REGISTRY
from producer_api.config import ApiSettings
from producer_api.http.models import PostingIn
from producer_api.http.posting_body import check_limits, to_posting
from schemas.model import DEFAULT_EMPLOYER, Destination, Op, PostingUpdate

TASK_POLL_S = 2.0  # jobpost's task_poll_interval_s
RETRY: RunOptions[Any] = RunOptions(
    max_attempts=100,
    max_duration=timedelta(hours=1),
    initial_retry_interval=timedelta(seconds=3),
    max_retry_interval=timedelta(seconds=60),
    retry_interval_factor=2.0,
)

posting = VirtualObject("Posting")
linkedin = VirtualObject("LinkedIn")
indeed = VirtualObject("Indeed")
_api = ApiSettings()
_boards: dict[Destination, tuple[BoardAdapter, TokenSource]] = {}


def _board(destination: Destination) -> tuple[BoardAdapter, TokenSource]:
    """The board's adapter and its one token source in this process (built on first use,
    inside the server's event loop, as the consumer builds them)."""
    if destination not in _boards:
        sandbox = os.environ["JOBPOST_BENCH_SANDBOX"]
        settings = ConsumerSettings(
            destination=destination,
            linkedin={"base_url": f"{sandbox}/linkedin"},
            indeed={"base_url": f"{sandbox}/indeed"},
        )
        client = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        if destination == Destination.LINKEDIN:
            adapter: BoardAdapter = LinkedInAdapter(client, settings.linkedin)
            board = settings.linkedin
        else:
            adapter, board = IndeedAdapter(client, settings.indeed), settings.indeed
        _boards[destination] = (adapter, token_source(client, destination, board))
    return _boards[destination]


@posting.handler()
async def put(ctx: ObjectContext, body: dict[str, Any]) -> dict[str, Any]:
    try:
        parsed = PostingIn.model_validate(body)
        check_limits(parsed, _api)
        written = to_posting(parsed)
    except (ValidationError, ValueError) as exc:
        raise TerminalError(str(exc), status_code=400) from None
    refused = listing.problems_by_board(written, DEFAULT_EMPLOYER, SANDBOX_REGISTRY)
    if any(refused.values()):
        raise TerminalError(f"a board would not list it: {refused}", status_code=400)
    version = (await ctx.get("version") or 0) + 1
    now = round(await ctx.time() * 1000)
    key = ctx.key()
    update = PostingUpdate(
        posting_id=key,
        version=version,
        op=Op.CREATED if version == 1 else Op.UPDATED,
        idempotency_key=f"{key}:{version}",
        request_id=str(ctx.uuid()),
        posting=written,
        last_update_time_millis=now,
        accepted_at=now,
    )
    record = update.to_avro()
    ctx.set("version", version)
    ctx.set("posting", record)
    ctx.object_send(deliver_linkedin, key, record)
    ctx.object_send(deliver_indeed, key, record)
    return {"id": key, "version": version}


def _outcome(found: object) -> dict[str, Any]:
    return {"kind": type(found).__name__, **dataclasses.asdict(found)}  # type: ignore[call-overload]


async def _deliver(ctx: ObjectContext, destination: Destination, record: dict[str, Any]) -> None:
    adapter, tokens = _board(destination)
    update = PostingUpdate.from_avro(record)
    job = await ctx.get("job")  # {"job_id", "listed_at"} once a CREATE took
    operation = Operation.CREATE if job is None else Operation.UPDATE
    while True:
        action = JobAction(
            operation,
            update.posting_id,
            update.employer,
            update,
            None if job is None else job["job_id"],
            None if job is None else job["listed_at"],
        )

        async def send(action: JobAction = action) -> dict[str, Any]:
            (found,) = await adapter.send([action], await tokens.token())
            if isinstance(found, Unsure):
                raise RuntimeError(found.reason)  # retried
            return _outcome(found)

        sent = await ctx.run_typed("send", send, RETRY)
        if sent["kind"] == JobExists.__name__:
            operation, job = Operation.UPDATE, {"job_id": sent["job_id"], "listed_at": None}
            continue
        if sent["kind"] == NoJob.__name__:
            operation, job = Operation.CREATE, None
            continue
        if sent["kind"] == Rejected.__name__:
            raise TerminalError(sent["reason"], status_code=422)  # the dead letter
        job_id = sent.get("job_id")
        if sent["kind"] == Submitted.__name__:
            job_id = await _confirmed(ctx, adapter, tokens, sent["task_id"])
        if sent["kind"] in (Delivered.__name__, Submitted.__name__):
            if job is None:
                ctx.set("job", {"job_id": job_id, "listed_at": round(await ctx.time() * 1000)})
            return


async def _confirmed(
    ctx: ObjectContext, adapter: BoardAdapter, tokens: TokenSource, task_id: str
) -> str | None:
    """The job's id once the task SUCCEEDED; a FAILED task is the version refused."""
    while True:

        async def poll() -> dict[str, Any]:
            found = (await adapter.confirm([task_id], await tokens.token())).get(task_id)
            return {"state": None} if found is None else _outcome(found)

        task = await ctx.run_typed("confirm", poll, RETRY)
        if task["state"] == TaskState.SUCCEEDED:
            return task.get("job_id")
        if task["state"] == TaskState.FAILED:
            raise TerminalError(task.get("error") or "the task failed", status_code=422)
        await ctx.sleep(timedelta(seconds=TASK_POLL_S))


@linkedin.handler("deliver")
async def deliver_linkedin(ctx: ObjectContext, record: dict[str, Any]) -> None:
    await _deliver(ctx, Destination.LINKEDIN, record)


@indeed.handler("deliver")
async def deliver_indeed(ctx: ObjectContext, record: dict[str, Any]) -> None:
    await _deliver(ctx, Destination.INDEED, record)


app = restate.app(services=[posting, linkedin, indeed])
