"""A board's access token: OAuth 2.0 client credentials (RFC 6749 §4.4), one token per
process shared by every call, fetched again ahead of its expiry, one fetch at a time; and a
board call made with it (`with_token`): a 401 (`TokenRefused`) expires the token, fetches
one and tries the call once more; a 401 to the fresh token is the board refusing our
credentials, which is the board's failure (`BoardDown`), not the posting's.

LinkedIn: "use same access token for all concurrent and consecutive calls. An access token
has a lifespan of 30 mins" (learn.microsoft.com/linkedin/talent/job-postings/api/create-jobs);
its token answer shows `expires_in` as a string ("1800"). Indeed: tokens "expire after one
hour" (docs.indeed.com/job-sync-api/faq). Both take the form body
`grant_type=client_credentials&client_id=…&client_secret=…`.

Written here rather than taken from authlib: its asynchronous client is httpx's (the aiohttp
one, authlib/aiohttp-oauth-client, stopped at a preview in 2019), and what the destination
needs beyond the form POST — one fetch for every waiting caller, `expire` after a 401, a
failing endpoint as `BoardDown` — would be ours to write around it anyway.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import aiohttp
from pydantic import SecretStr

from consumers.boards import Answer, call
from consumers.boards.base import BoardDown, CallFailed, TokenRefused, TokenSource
from consumers.boards.settings import BoardSettings

log = logging.getLogger(__name__)

R = TypeVar("R")

UNSTATED_LIFETIME_S = 300.0  # `expires_in` is only RECOMMENDED (RFC 6749 §5.1): assume little


def refresh_after(expires_in: float) -> float:
    """When to fetch the next token: at 80 % of its lifetime or a minute before its end,
    whichever is earlier, but not before half of it (so a 2 s test token is not fetched
    again on every call)."""
    return max(min(0.8 * expires_in, expires_in - 60.0), 0.5 * expires_in)


class ClientCredentials:
    """The token source of one board (`consumers.boards.base.TokenSource`)."""

    def __init__(
        self,
        client: aiohttp.ClientSession,
        board: str,
        url: str,
        client_id: str,
        client_secret: SecretStr,
        *,
        scope: str | None = None,
        timeout_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.board = board
        self.url = url
        self.client_id = client_id
        self.client_secret = client_secret
        self.scope = scope
        self.timeout_s = timeout_s
        self.clock = clock
        self.fetches = 0  # tokens asked for, for tests and logs
        self._token: str | None = None
        self._fresh_until = 0.0
        self._fetching: asyncio.Future[str] | None = None

    async def token(self) -> str:
        if self._token is not None and self.clock() < self._fresh_until:
            return self._token
        if self._fetching is None:  # the first caller fetches; the others wait for its fetch
            self._fetching = asyncio.ensure_future(self._fetch())
            self._fetching.add_done_callback(self._fetched)
        return await asyncio.shield(self._fetching)

    def expire(self, token: str) -> None:
        if token == self._token:  # a token fetched since is still good
            self._token = None

    def _fetched(self, done: asyncio.Future[str]) -> None:
        self._fetching = None
        if not done.cancelled():
            done.exception()  # retrieved here too, should every waiter have gone

    async def _fetch(self) -> str:
        form = {
            "grant_type": "client_credentials",
            "client_id": self.client_id,
            "client_secret": self.client_secret.get_secret_value(),
        }
        if self.scope:
            form["scope"] = self.scope
        where = f"{self.board} token endpoint"
        self.fetches += 1
        asked_at = self.clock()
        try:
            answer = await call(
                self.client,
                where,
                "POST",
                self.url,
                headers={"Accept": "application/json"},
                timeout_s=self.timeout_s,
                form=form,
            )
        except (BoardDown, CallFailed) as exc:
            raise BoardDown(str(exc)) from exc
        token, expires_in = _granted(answer)
        self._token, self._fresh_until = token, asked_at + refresh_after(expires_in)
        return token


def _granted(answer: Answer) -> tuple[str, float]:
    """The token and its lifetime from a token endpoint's answer; BoardDown otherwise (a
    refused client is refused for every posting). A token endpoint's body is never quoted:
    it may hold a token under a name we do not read, or echo what we sent; what is said is
    its status, its length and OAuth's `error` code (RFC 6749 §5.2) when it gives one."""
    if answer.status != 200:
        raise BoardDown(_described(answer, "refused to grant a token"))
    try:
        body = json.loads(answer.raw.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError is a ValueError too
        raise BoardDown(_described(answer, "is not UTF-8 JSON")) from None
    token = body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token:
        raise BoardDown(_described(answer, "has no access_token"))
    if str(body.get("token_type", "bearer")).lower() != "bearer":
        raise BoardDown(_described(answer, "gives a token that is not a bearer token"))
    try:
        expires_in = float(body.get("expires_in", UNSTATED_LIFETIME_S))  # an integer, or "1800"
    except (TypeError, ValueError):
        raise BoardDown(_described(answer, "has an expires_in that is not a number")) from None
    if expires_in <= 0:
        raise BoardDown(_described(answer, "gives a token that has expired already"))
    return token, expires_in


_OAUTH_ERROR = re.compile(r"[a-z_]{1,40}")  # RFC 6749 §5.2: invalid_client, invalid_grant, …


def _described(answer: Answer, why: str) -> str:
    said = f"{answer.board} answered {answer.status} ({len(answer.raw)} bytes) and {why}"
    try:
        code = json.loads(answer.raw.decode("utf-8")).get("error")
    except (ValueError, AttributeError):
        return said
    return f"{said}: {code}" if isinstance(code, str) and _OAUTH_ERROR.fullmatch(code) else said


class StaticToken:
    """One token from the settings, never fetched again (tests; a proxy that injects the
    board's credentials)."""

    def __init__(self, token: SecretStr) -> None:
        self._token = token

    async def token(self) -> str:
        return self._token.get_secret_value()

    def expire(self, token: str) -> None:
        """Nothing to fetch: the destination's second 401 makes it BoardDown."""


def token_source(client: aiohttp.ClientSession, board: str, settings: BoardSettings) -> TokenSource:
    """The board's token source as its settings say: the static token if one is set, else
    client credentials against `settings.token_endpoint`."""
    if settings.access_token is not None:
        return StaticToken(settings.access_token)
    if not settings.client_id or settings.client_secret is None:
        env = settings.ENV
        raise ValueError(f"{board}: set {env}CLIENT_ID and {env}CLIENT_SECRET, or {env}ACCESS_TOKEN")
    return ClientCredentials(
        client,
        board,
        settings.token_endpoint,
        settings.client_id,
        settings.client_secret,
        scope=settings.scope,
        timeout_s=settings.timeout_s,
    )


async def with_token(tokens: TokenSource, board: str, make: Callable[[str], Awaitable[R]]) -> R:
    """`make(token)`, the call, with the process's token; once more with a fresh one after a
    401."""
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
