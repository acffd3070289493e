"""A board call with the process's one access token: a 401 (`TokenRefused`) expires the
token, fetches one and tries the call once more; a 401 to the fresh token is the board
refusing our credentials, which is the board's failure (`BoardDown`), not the posting's."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from consumers.boards.base import BoardDown, TokenRefused, TokenSource

log = logging.getLogger(__name__)

R = TypeVar("R")


async def with_token(tokens: TokenSource, board: str, make: Callable[[str], Awaitable[R]]) -> R:
    token = await tokens.token()
    try:
        return await make(token)
    except TokenRefused as exc:
        log.warning("%s refused the access token; fetching a new one: %s", board, exc)
        tokens.expire(token)
    token = await tokens.token()
    try:
        return await make(token)
    except TokenRefused as exc:
        raise BoardDown(f"{board} refused a fresh access token: {exc}") from exc
