"""What a job board's adapter is to the board consumer: the one interface between the
board's wire (`consumers.boards.linkedin`, `.indeed`) and the lanes and the destination
that share the board (`consumers.lanes`, `consumers.destination`).

An adapter sends the next version of several postings in one call and says, per element,
what the board made of it; it classifies every failure once, here: about this element
(`Rejected`), unknown for this element (`Unsure`: retried, charged to the posting's
budget), or about the board as a whole (`BoardDown`, `Throttled`: the destination's,
charged to no posting). It knows nothing of retries, budgets, circuits, Kafka or offsets.

An asynchronous board (LinkedIn's tasks) answers `Submitted(task_id)`: the version is live
only once `confirm` reports the task `SUCCEEDED`; `FAILED` is a rejection of that version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from schemas.model import Destination, PostingUpdate


@dataclass(frozen=True, slots=True)
class Delivered:
    """The board applied the version (a synchronous board, or a close it had already)."""


@dataclass(frozen=True, slots=True)
class Submitted:
    """The board accepted the version for processing; `confirm(task_id)` tells the end."""

    task_id: str


@dataclass(frozen=True, slots=True)
class Rejected:
    """The board refused this element's content (a 4xx about it, Indeed's BAD_USER_INPUT, a
    LinkedIn task FAILED, an employer the board has no account for): dead-letter it."""

    reason: str


@dataclass(frozen=True, slots=True)
class Unsure:
    """What became of this element is unknown (a 5xx or 408 for it, an answer that does not
    say): try it again, charged to the posting's retry budget."""

    reason: str
    retry_after_s: float | None = None


ElementOutcome = Delivered | Submitted | Rejected | Unsure


class TaskState(StrEnum):
    IN_PROGRESS = "IN_PROGRESS"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    state: TaskState
    error: str | None = None  # FAILED: the board's reason, for the dead letter


class BoardDown(Exception):
    """The board as a whole did not take the call: connection refused, DNS or TLS errors, a
    token endpoint that fails, credentials refused with a fresh token. The destination's
    circuit counts it; no posting is charged."""


class Throttled(Exception):
    """429 for the whole call: the destination pauses every lane for `retry_after_s` (its
    own backoff when the board names none) and lowers its rate."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class CallFailed(Exception):
    """The call failed in a way that says nothing about one element (a timeout, a 5xx, an
    answer nobody can read): every element of it is `Unsure`, and the destination's
    circuit counts it (many of these across postings open it)."""


class TokenRefused(Exception):
    """401 to a token the token source gave: the caller expires that token, fetches a new
    one, and retries the call once; a 401 to the fresh token is `BoardDown`."""


class BoardAdapter(Protocol):
    destination: Destination
    max_batch: int  # elements per call at most (LinkedIn: 100; Indeed: a setting)
    confirms: bool  # True: versions are Submitted and confirmed later (LinkedIn's tasks)

    async def send(self, updates: Sequence[PostingUpdate], token: str) -> list[ElementOutcome]:
        """One call carrying `updates` (never two of one posting; a DELETED version closes
        the posting), one outcome per update in the same order. Raises BoardDown, Throttled,
        CallFailed or TokenRefused for the call as a whole."""
        ...

    async def confirm(self, task_ids: Sequence[str], token: str) -> dict[str, TaskOutcome]:
        """Where each task stands (one call for all of them); a task the answer leaves out
        is still unknown. Only for a board that `confirms`; raises as `send` does."""
        ...


class TokenSource(Protocol):
    """One access token per process for one board, shared by every call."""

    async def token(self) -> str:
        """A token that is valid now: cached, fetched again ahead of its expiry, one fetch at
        a time however many callers wait. Raises BoardDown when the token endpoint fails."""
        ...

    def expire(self, token: str) -> None:
        """The board refused `token` (401): the next `token()` fetches a new one, unless a
        newer one was fetched meanwhile."""
        ...
