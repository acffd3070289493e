"""The runner on main calls `upsert(update)` / `close(update)` and expects RetryableError or
RejectedError: this carries one element through an adapter's `send` for it, until the
destination (batches, the shared token, the circuit, task confirmation) replaces that
runner. Then this module and `consumers.errors` go.

One element per call, the token source's token, one fresh token after a 401. A LinkedIn
receipt (`Submitted`) counts as delivered here, as it did before tasks were confirmed."""

from __future__ import annotations

from consumers.boards.base import (
    BoardAdapter,
    BoardDown,
    CallFailed,
    ElementOutcome,
    Rejected,
    Throttled,
    TokenRefused,
    TokenSource,
    Unsure,
)
from consumers.errors import RejectedError, RetryableError
from schemas.model import PostingUpdate


class OneAtATime:
    def __init__(self, adapter: BoardAdapter, tokens: TokenSource) -> None:
        self.adapter = adapter
        self.tokens = tokens

    async def upsert(self, update: PostingUpdate) -> None:
        _raise_for(await self._send(update))

    async def close(self, update: PostingUpdate) -> None:
        _raise_for(await self._send(update))

    async def _send(self, update: PostingUpdate) -> ElementOutcome:
        try:
            for _ in range(2):
                token = await self.tokens.token()
                try:
                    (outcome,) = await self.adapter.send([update], token)
                    return outcome
                except TokenRefused:
                    self.tokens.expire(token)
            raise RetryableError(f"{self.adapter.destination}: a fresh token was refused too")
        except Throttled as exc:
            raise RetryableError(str(exc), exc.retry_after_s) from exc
        except (BoardDown, CallFailed, TokenRefused) as exc:
            raise RetryableError(str(exc)) from exc


def _raise_for(outcome: ElementOutcome) -> None:
    if isinstance(outcome, Rejected):
        raise RejectedError(outcome.reason)
    if isinstance(outcome, Unsure):
        raise RetryableError(outcome.reason, outcome.retry_after_s)
