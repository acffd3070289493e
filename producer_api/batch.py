"""A batch of writes (`POST /postings:batch`): each one the service's own create, replace or
delete, exactly as the same request alone; the writes of one posting one after another in
the order given, those of different postings at once.

A write of a posting waits for the answer to the batch's previous write of that posting
before it is sent, so their order never depends on how the command client schedules its
sends; writes of different postings are sent together, so the sequencer takes most of a
batch in one poll, one transaction."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from producer_api.callers import Caller
from producer_api.commands import OutcomeUnknown
from producer_api.read.views import PostingView
from producer_api.service import PostingError, PostingService, Unavailable, create_id
from schemas.model import Action, Posting

log = logging.getLogger(__name__)

MAX_ITEMS = 100  # what LinkedIn's and Indeed's own APIs take per call

# What one write came to: the posting at its new version, a refusal, "not in time", or a
# failure of the server (logged), which the other writes of the batch do not share.
WriteResult = PostingView | PostingError | Unavailable | OutcomeUnknown | Exception


@dataclass(frozen=True)
class Write:
    """One validated item: the call the single route would make."""

    action: Action
    posting_id: str | None  # None for a create: its id follows from its key
    posting: Posting | None
    idempotency_key: str | None = None
    expected_version: int | None = None

    def target(self, caller: Caller, index: int) -> str:
        """The posting it writes, as far as ordering needs to know: a keyed create's id is
        known before it is sent; a create without a key makes a posting nobody else names."""
        if self.posting_id is not None:
            return self.posting_id
        if self.idempotency_key:
            return create_id(caller.employer, self.idempotency_key)
        return f"#{index}"

    async def apply(self, service: PostingService, caller: Caller) -> PostingView:
        key, expected = self.idempotency_key, self.expected_version
        if self.action == Action.CREATE:
            assert self.posting is not None
            return await service.create(caller, self.posting, key)
        assert self.posting_id is not None
        if self.action == Action.REPLACE:
            assert self.posting is not None
            return await service.replace(caller, self.posting_id, self.posting, key, expected)
        return await service.delete(caller, self.posting_id, key, expected)


async def apply(service: PostingService, caller: Caller, writes: Sequence[Write]) -> list[WriteResult]:
    """Every write's result, in the order given."""
    results: list[WriteResult | None] = [None] * len(writes)
    per_posting: dict[str, list[int]] = {}
    for index, write in enumerate(writes):
        per_posting.setdefault(write.target(caller, index), []).append(index)

    async def one_after_another(indices: list[int]) -> None:
        for index in indices:
            results[index] = await _result(writes[index], service, caller)

    await asyncio.gather(*(one_after_another(indices) for indices in per_posting.values()))
    return cast(list[WriteResult], results)  # every write has its result once gather returned


async def _result(write: Write, service: PostingService, caller: Caller) -> WriteResult:
    try:
        return await write.apply(service, caller)
    except (PostingError, Unavailable, OutcomeUnknown) as exc:
        return exc
    except Exception as exc:
        # The same request alone would have answered 500; the batch's other writes, some
        # of them applied already, are still answered for.
        log.exception("a batch write of posting %s failed", write.posting_id or "(new)")
        return exc
