"""The job boards' wire: one package per board (`linkedin`, `indeed`: its adapter, which
implements `consumers.boards.base.BoardAdapter` and makes the calls; what it asks of the
board, `request`; how it reads the board's answers, `answers`), a posting as any board is sent
it (`content`), the boards' shared settings (`settings`), and here the one HTTP call they all
make and what its failures mean.

A failure is classified once, here or in the adapter (DESIGN.md, "A destination is a shared
resource"):
- nothing reached the board, or it dropped the connection before any answer (connection
  refused or reset, DNS, TLS, a connect timeout): `BoardDown`. Every element an adapter
  sends is safe to repeat by the board's own identity of a job (LinkedIn's UPDATE and CLOSE
  restate the job and a repeated CREATE fails as a duplicate, which the lane reads as the
  job existing; Indeed's create is an upsert), so a call that may have arrived unanswered
  is safe to send again once the board is back, and no posting pays for the board's outage;
- 401: `TokenRefused` (the destination expires the token and tries once more);
- 403 for the whole call: `BoardDown`. It says the application's credentials are not
  allowed (LinkedIn: "the application is not authorized", job_posting_v2.yaml), which no
  retry of a posting can change and which holds for every posting: an operator's problem,
  paused as an outage is, not a reason to dead-letter the batch;
- 429: `Throttled`, with the board's Retry-After;
- a timeout, 408, a 5xx, an answer that broke off or that nobody can read: `CallFailed`,
  whose message quotes the start of what came;
- any other 4xx for the whole call: a refusal of what was sent — `Rejected` when the call
  carried one element, `Unsure` for each when it carried several (which element was wrong
  is not said).

The HTTP client is aiohttp: against the sandbox it made 3,755 calls/s where httpx made 235
with the same 32 connections (measured; see bench/README.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from consumers.boards.base import (
    BoardDown,
    CallFailed,
    ElementOutcome,
    JobAction,
    Rejected,
    Throttled,
    TokenRefused,
    Unsure,
)

# Failures before any answer began: the board was not reached, or it hung up first.
_UNREACHED = (
    aiohttp.ClientConnectorError,  # refused, DNS, TLS
    aiohttp.ServerDisconnectedError,
    aiohttp.ClientConnectionResetError,
    aiohttp.ClientOSError,  # a reset while the request was sent
)


@dataclass(frozen=True)
class Answer:
    """What a board answered: status, Retry-After, and the body as text."""

    board: str
    status: int
    retry_after_s: float | None
    raw: bytes

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", errors="replace")

    def json(self) -> Any:
        try:
            return json.loads(self.raw.decode("utf-8"))
        except ValueError as exc:  # UnicodeDecodeError is a ValueError too
            raise self.unintelligible("is not UTF-8 JSON") from exc

    def unintelligible(self, why: str) -> CallFailed:
        """An answer the adapter cannot interpret: worth another try, with what came quoted."""
        quoted = excerpt(self.text)
        return CallFailed(f"{self.board} answered {self.status} with a body that {why}: {quoted!r}")


async def call(
    session: aiohttp.ClientSession,
    board: str,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    timeout_s: float,
    json_body: Any = None,
    form: Mapping[str, str] | None = None,
    params: Sequence[tuple[str, str]] | None = None,
) -> Answer:
    """One HTTP call; raises BoardDown when no answer began, CallFailed when it timed out
    or broke off. The status is the caller's to judge (`whole_call`)."""
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    try:
        response = await session.request(
            method,
            url,
            json=json_body,
            data=form,
            params=params,
            headers=dict(headers),
            timeout=timeout,
            allow_redirects=False,
        )
    except aiohttp.ConnectionTimeoutError as exc:  # never connected: nothing was sent
        raise BoardDown(f"{board}: no connection within {timeout_s} s: {exc}") from exc
    except TimeoutError as exc:
        raise CallFailed(f"{board}: no answer within {timeout_s} s") from exc
    except (*_UNREACHED, aiohttp.InvalidURL) as exc:
        raise BoardDown(f"{board}: {type(exc).__name__}: {exc}") from exc
    except aiohttp.ClientError as exc:
        raise CallFailed(f"{board}: {type(exc).__name__}: {exc}") from exc
    async with response:
        try:
            raw = await response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            broke = type(exc).__name__
            raise CallFailed(f"{board} answered {response.status}, then broke off: {broke}") from exc
    return Answer(board, response.status, _retry_after(response.headers.get("Retry-After")), raw)


def whole_call(answer: Answer, count: int) -> list[ElementOutcome] | None:
    """None for a 2xx (its body says the rest); raises or refuses for every other status."""
    status = answer.status
    if 200 <= status < 300:
        return None
    detail = f"{answer.board} answered {status}: {excerpt(answer.text)}"
    if status == 401:
        raise TokenRefused(detail)
    if status == 403:
        raise BoardDown(detail)
    if status == 429:
        raise Throttled(detail, answer.retry_after_s)
    if status == 408 or status >= 500 or status < 400:
        raise CallFailed(detail)
    return refused(detail, count)


def refused(reason: str, count: int) -> list[ElementOutcome]:
    """A refusal of a whole call: that element's when it was the only one, unknown for
    each of several (the board did not say which was wrong)."""
    if count == 1:
        return [Rejected(reason)]
    return [Unsure(f"{reason} (the call as a whole, {count} jobs)") for _ in range(count)]


def excerpt(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: the destination's own backoff


Element = dict[str, Any]  # one job, as the board's API takes it


def prepare(
    actions: Sequence[JobAction], build: Callable[[JobAction], Element | Rejected | None]
) -> tuple[list[ElementOutcome | None], list[tuple[int, Element]]]:
    """The outcomes known before any call (an action the adapter refuses, never sent) and
    the elements to send, each with its action's index (`build` answers None for an action
    the adapter carries otherwise)."""
    outcomes: list[ElementOutcome | None] = [None] * len(actions)
    elements: list[tuple[int, Element]] = []
    for index, action in enumerate(actions):
        built = build(action)
        if isinstance(built, Rejected):
            outcomes[index] = built
        elif built is not None:
            elements.append((index, built))
    return outcomes, elements


def settled(outcomes: list[ElementOutcome | None]) -> list[ElementOutcome]:
    """Every update's outcome, in order, once each one has its own."""
    assert all(o is not None for o in outcomes), outcomes
    return [o for o in outcomes if o is not None]
