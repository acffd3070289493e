"""What a job board's adapter is to the board consumer: the one interface between the
board's wire (`consumers.boards.linkedin`, `.indeed`) and the lanes and the destination
that share the board (`consumers.lanes`, `consumers.destination`).

An adapter sends the next version of several postings in one call and says, per element,
what the board made of it; it classifies every failure once, here: about this element
(`Rejected`), unknown for this element (`Unsure`: retried, charged to the posting's
budget), or about the board as a whole (`BoardDown`, `Throttled`: the destination's,
charged to no posting). It knows nothing of retries, budgets, circuits, Kafka or offsets.

What a lane asks of the board is a `JobAction`: CREATE, UPDATE, RENEW or CLOSE of the
posting's job, chosen by what the board holds (`consumers.job_rules`), never by the version
number. An asynchronous board (LinkedIn's tasks) answers `Submitted(task_id)`: the version is
applied only once `confirm` reports the task `SUCCEEDED`; `FAILED` is a refusal of that
version, unless the board's words say the job exists after all (`JobExists`: a CREATE
repeated) or does not (`NoJob`: an UPDATE of a job never created), which the lane carries on
from. The board's own status of a job is read back with `listings`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from schemas.enums import ListingStatus
from schemas.model import Destination, PostingUpdate


class Operation(StrEnum):
    """What a board is asked to do with a posting's job (LinkedIn's jobPostingOperationType;
    Indeed upserts for CREATE and UPDATE and expires for CLOSE)."""

    CREATE = "CREATE"
    UPDATE = "UPDATE"
    RENEW = "RENEW"
    CLOSE = "CLOSE"


@dataclass(frozen=True, slots=True)
class JobAction:
    """One element of a call: what to do with the posting's job, the content to state (for a
    CLOSE or RENEW, the content the job holds, where the board wants it restated; None for a
    close by the job's id alone: Indeed's expiry), the board's id of the job, the job's
    first listing date, and the ids of jobs it replaced that are still to be expired (with
    the action, in the same delivery)."""

    operation: Operation
    posting_id: str
    employer: str
    update: PostingUpdate | None
    job_id: str | None = None
    listed_at: int | None = None  # epoch ms: LinkedIn's listedAt, Indeed's datePublished
    replaced_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Delivered:
    """The board applied the action (a synchronous board, or a close it had already:
    `gone`). `job_id`: the board's id of the job, where its answer names it (Indeed's
    sourcedPostingId; LinkedIn's job posting URN, from the task)."""

    job_id: str | None = None
    gone: bool = False  # a close of a job the board no longer holds open: nothing to close


@dataclass(frozen=True, slots=True)
class Submitted:
    """The board accepted the version for processing; `confirm(task_id)` tells the end."""

    task_id: str


@dataclass(frozen=True, slots=True)
class Rejected:
    """The board refused this element's content (a 4xx about it, Indeed's BAD_USER_INPUT, a
    LinkedIn task FAILED, an employer the board has no account for): dead-letter it.
    `job_closed`: the board said why, and it is that the job is closed (LinkedIn updates no
    closed or expired job). With `job_id`: the board applied the content as a new job of
    that id, and it is the expiry of the jobs it replaced (`unexpired`) that was refused."""

    reason: str
    job_closed: bool = False
    job_id: str | None = None
    unexpired: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class JobExists:
    """The board holds the job already (LinkedIn: a CREATE repeated after its answer was
    lost, "Trying to create a job with same partnerIdentifier already exists … LinkedIn job
    id: …"): the same content goes again as an UPDATE."""

    job_id: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class NoJob:
    """The board holds no such job (LinkedIn: "Operation type `UPDATE` is not allowed for a
    non-existing job"): the same content goes again as a CREATE."""

    reason: str


@dataclass(frozen=True, slots=True)
class Unsure:
    """What became of this element is unknown (a 5xx or 408 for it, an answer that does not
    say): try it again, charged to the posting's retry budget. With `job_id`: the board
    applied the content as a new job of that id, and it is the expiry of the jobs it replaced
    (`unexpired`) whose outcome is unknown."""

    reason: str
    retry_after_s: float | None = None
    job_id: str | None = None
    unexpired: tuple[str, ...] = ()


ElementOutcome = Delivered | Submitted | Rejected | Unsure | JobExists | NoJob


class TaskState(StrEnum):
    IN_PROGRESS = "IN_PROGRESS"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class TaskFailure(StrEnum):
    """What a FAILED task's error says of the job, where the board's words say it."""

    JOB_EXISTS = "JOB_EXISTS"  # a CREATE of a job the board holds
    NO_JOB = "NO_JOB"  # an UPDATE or RENEW of a job never created
    JOB_CLOSED = "JOB_CLOSED"  # an UPDATE or RENEW of a closed or expired job


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    state: TaskState
    error: str | None = None  # FAILED: the board's reason, for the dead letter
    job_id: str | None = (
        None  # SUCCEEDED: the job's id (LinkedIn's jobPosting URN); JOB_EXISTS: the one named
    )
    failure: TaskFailure | None = None  # FAILED: what the error says of the job, if anything


@dataclass(frozen=True, slots=True)
class JobRef:
    """A job whose status is read back: the posting, and the board's id where it has one."""

    posting_id: str
    job_id: str | None


@dataclass(frozen=True, slots=True)
class BoardListing:
    """A job as the board reports it (LinkedIn's job posting status, Indeed's job post
    status). `status` None: the board has not decided yet (LinkedIn IN_PROGRESS, Indeed
    PENDING), or said nothing this code knows. `closed_by_board`: not listed any more for a
    reason of the board's (the lane reads it as rejected for a job that was never live)."""

    status: ListingStatus | None
    url: str | None = None
    reason: str | None = None
    listed_at: int | None = None
    lifetime_ends_at: int | None = None  # when the board ends the job unless renewed (LinkedIn's expireAt)


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
    restates: bool  # True: a CLOSE or RENEW carries the job's whole content (LinkedIn)
    renews: bool  # True: the board ends a job after a lifetime unless it is renewed (LinkedIn)
    listings_per_call: int  # jobs whose status one `listings` call reads
    tasks_per_call: int  # task ids one request of `confirm` carries (it makes as many as it needs)

    async def send(self, actions: Sequence[JobAction], token: str) -> list[ElementOutcome]:
        """One call carrying `actions` (never two of one posting), one outcome per action in
        the same order. Raises BoardDown, Throttled, CallFailed or TokenRefused for the call
        as a whole."""
        ...

    async def listings(self, jobs: Sequence[JobRef], token: str) -> dict[str, BoardListing]:
        """What the board says of each job (by posting id); a job the answer leaves out is
        unknown. Raises as `send` does."""
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
