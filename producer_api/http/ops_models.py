"""The HTTP shapes of the playground's data: a posting's timeline and the operations panel."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from producer_api.http.models import ListingOut
from producer_api.read.timeline import CellState
from schemas.enums import Destination, Op


class Board(StrEnum):
    """A job board."""

    # The destinations that are job boards (schemas.topics.BOARDS; a unit test checks it),
    # as a closed set for the HTTP schema.

    LINKEDIN = Destination.LINKEDIN.value
    INDEED = Destination.INDEED.value


FaultMode = Literal["none", "error", "timeout", "rate_limit", "reject", "lose_response", "malformed"]


class VersionOut(BaseModel):
    version: int
    op: Op
    at: int | None = Field(description="epoch millis the version was accepted")
    title: str


class CellOut(BaseModel):
    version: int
    state: CellState = Field(
        description="closed: a delete delivered; skipped: superseded, never sent; pending: not tried yet; "
        "submitted: accepted by an asynchronous board (LinkedIn), its task not ended yet; paused: held while "
        "the board as a whole is unavailable (its circuit open), charged to no retry budget"
    )
    at: int | None = Field(description="epoch millis of the newest event")
    attempts: int
    error: str | None
    next_attempt_at: int | None = Field(description="while retrying: epoch millis of the next attempt")


class LaneOut(BaseModel):
    cells: list[CellOut] = Field(description="one per version, in the order of `versions`")
    waiting_for: int | None = Field(description="the version the lane waits for next, once it has caught up")
    closed: bool = Field(description="the posting's delete was delivered here")
    listing: ListingOut | None = Field(
        default=None,
        description="the job the board holds: its id, public page and status (as in /deliveries)",
    )


class EventOut(BaseModel):
    posting_id: str
    version: int
    destination: Destination
    attempt: int
    outcome: CellState = Field(description="what the attempt came to (never pending)")
    error: str | None = Field(
        description="why: the failure or refusal; for skipped, what superseded the version (e.g. "
        "'superseded by v17 while the board was confirming v12')"
    )
    next_attempt_at: int | None
    at: int
    task_id: str | None = Field(default=None, description="submitted: the board's task")
    request_id: str | None = Field(default=None, description="the redrive request this attempt answers")


class TimelineOut(BaseModel):
    posting_id: str
    version: int
    deleted: bool
    versions: list[VersionOut] = Field(description="the posting's last 50 versions, oldest first")
    lanes: dict[Destination, LaneOut] = Field(description="linkedin, indeed, search")
    events: list[EventOut] = Field(description="delivery events of the last 7 days, in order")


class LetterOut(BaseModel):
    partition: int
    offset: int
    posting_id: str | None = Field(description="null for a letter that cannot be decoded")
    version: int | None
    op: str | None
    error: str
    attempts: int
    at: int | None = Field(description="epoch millis of the last attempt before it was dead-lettered")
    resolved: bool = Field(description="its version, or a newer one, has been delivered since")


class LettersOut(BaseModel):
    board: Board
    letters: list[LetterOut] = Field(description="newest first; the newest letter of each posting version")


class RedriveIn(BaseModel):
    """One letter (partition and offset), or `{}` for every unresolved letter."""

    model_config = ConfigDict(extra="forbid", strict=True)

    partition: int | None = Field(default=None, ge=0)
    offset: int | None = Field(default=None, ge=0)


class RedriveRequestOut(BaseModel):
    request_id: str = Field(description="carried by the delivery events of the attempt (the timeline)")
    posting_id: str
    version: int
    partition: int = Field(description="where the letter lies in the board's dead-letter topic")
    offset: int


class RedriveOut(BaseModel):
    requests: list[RedriveRequestOut] = Field(description="written; their outcomes follow in the timeline")


class GroupLag(BaseModel):
    group: str
    destination: Destination
    lag: int = Field(description="records of jobpost.postings not yet committed by the group")


class LagOut(BaseModel):
    groups: list[GroupLag]


class FaultsIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    mode: FaultMode
    probability: float = Field(default=1.0, ge=0, le=1)


CircuitState = Literal["closed", "open", "probing"]


class MinuteBudgetOut(BaseModel):
    kind: Literal["records", "requests"]
    per_minute: float | None = Field(
        description="the consumer group's budget a minute (a setting); null: none configured"
    )
    used: int = Field(description="what the board's live members sent within the last 60 s")


class DailyBudgetOut(BaseModel):
    kind: Literal["records", "requests", "task_status_calls"]
    per_day: int | None = Field(description="the consumer group's cap a day (a setting); null: no cap")
    used: int = Field(description="what the board's members used since the last reset")
    reset_at: int = Field(description="the next reset (epoch millis)")


class BoardMemberOut(BaseModel):
    member: str = Field(description="the consumer member: its host and process id")
    last_status_at: int = Field(description="when the member last published its status (epoch millis)")
    stale: bool = Field(
        description="no status for longer than three of its publishing intervals: it died or cannot reach "
        "Kafka; what it last said is shown but no longer counted for the board (but for today's use)"
    )
    share: float = Field(description="its share of the group's partitions, hence of every budget (0 to 1)")
    circuit: CircuitState
    circuit_reason: str | None = Field(description="why its circuit opened")
    paused_reason: str | None = Field(
        description="why its lanes wait for the board as a whole; null: not paused"
    )
    paused_until: int | None = Field(description="when it tries the board next, while paused (epoch millis)")
    records_this_minute: int
    requests_this_minute: int
    open_tasks: int = Field(description="its submitted versions whose board task has not ended (LinkedIn)")
    oldest_task_age_s: float | None = Field(description="age of its oldest unconfirmed task; null: none")


class BoardStatusOut(BaseModel):
    per_minute: list[MinuteBudgetOut] = Field(description="the rate budget: records and requests a minute")
    per_day: list[DailyBudgetOut] = Field(
        description="the daily quota: records, requests and task-status calls a day, and their reset"
    )
    circuit: CircuitState | None = Field(
        description="the worst circuit of the live members (open, probing, closed); null: no live member"
    )
    circuit_reason: str | None = Field(description="why it opened, in the board's words")
    paused: bool = Field(description="a live member holds its lanes for the board as a whole")
    paused_reason: str | None = Field(description="why (an open circuit, `daily quota: …`, a long 429)")
    open_tasks: int = Field(description="submitted versions whose board task has not ended (LinkedIn)")
    oldest_task_age_s: float | None = Field(
        description="age of the oldest unconfirmed task, in seconds; null: none"
    )
    members: list[BoardMemberOut] = Field(
        description="every consumer member that published a status, stale ones too"
    )


class BoardsOut(BaseModel):
    available: bool = Field(description="a job-board sandbox runs with this API")
    boards: dict[str, dict[str, object]] = Field(description="each sandbox board's fault settings")
    status: dict[Board, BoardStatusOut] = Field(
        description="each board as its consumer members last published it (jobpost.board-status)"
    )
