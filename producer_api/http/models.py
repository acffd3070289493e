"""The HTTP shapes of a posting: what a client sends, and what it gets back."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from producer_api.read.progress import ProgressStatus
from schemas.enums import Destination


def _encodable(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("text contains characters that cannot be encoded (e.g. a lone surrogate)") from exc
    return text


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("must contain a non-blank character")
    return text


Title = Annotated[
    str, Field(min_length=1, max_length=200), AfterValidator(_encodable), AfterValidator(_not_blank)
]
Description = Annotated[str, Field(max_length=25_000), AfterValidator(_encodable)]
Notes = Annotated[str, Field(max_length=2_000), AfterValidator(_encodable)]
Location = Annotated[
    str,
    Field(min_length=1, max_length=200, description='where the job is, e.g. "Berlin, Germany" or "Remote"'),
    AfterValidator(_encodable),
    AfterValidator(_not_blank),
]
ApplyUrl = Annotated[
    str,
    Field(
        max_length=2_000, pattern=r"^https?://[^\s]+$", description="where candidates apply (http or https)"
    ),
]


class PostingIn(BaseModel):
    """A whole posting as a client writes it (create and replace)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "title": "Senior Data Engineer",
                    "description": "Build streaming pipelines.",
                    "notes": "remote",
                }
            ]
        },
    )

    title: Title
    description: Description
    notes: Notes = ""
    location: Location | None = None
    apply_url: ApplyUrl | None = None


class PostingOut(BaseModel):
    id: str
    version: int
    title: str
    description: str
    notes: str
    location: str | None = None
    apply_url: str | None = None
    status: Literal["active", "deleted"]
    last_update_time_millis: int | None
    employer: str | None = Field(default=None, description="whose posting it is (the creator's employer)")


class DeletedOut(BaseModel):
    id: str
    version: int
    status: Literal["deleted"] = "deleted"


class ProblemOut(BaseModel):
    type: str
    title: str
    status: int
    detail: str
    errors: list[dict[str, object]] | None = None


class ReadinessOut(BaseModel):
    status: Literal["ready", "not ready"] = Field(description="of the capabilities asked for (`for`)")
    capabilities: dict[str, bool] = Field(description="writes, reads, search: ready or not")
    checks: dict[str, bool] = Field(description="kafka, sequencer, elasticsearch: ready or not")
    reasons: dict[str, str] = Field(description="why each check and capability that failed is not ready")


class SearchPage(BaseModel):
    items: list[PostingOut]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null on the last page")


class DestinationProgress(BaseModel):
    delivered_version: int | None
    status: ProgressStatus = Field(
        description="where the posting's current version stands there; submitted: an asynchronous board "
        "(LinkedIn) accepted the pending version and has not confirmed it yet (`task_id`); paused: the "
        "destination holds it while the board as a whole is unavailable (`paused_reason`), charged to no "
        "retry budget"
    )
    attempts: int
    first_attempt_at: int | None = Field(
        description="epoch millis of the first attempt of the pending version"
    )
    next_attempt_at: int | None = Field(
        description="epoch millis of what comes next for a version that waits: retrying, its next attempt; "
        "submitted, when it is sent again unless the board said its task ended (once the board answers); "
        "paused, when the board is tried next (it moves later while the board stays unavailable)"
    )
    last_error: str | None
    task_id: str | None = Field(default=None, description="while submitted: the board's task for the version")
    paused_reason: str | None = Field(default=None, description="while paused: why the board is unavailable")


class DeliveriesOut(BaseModel):
    posting_id: str
    version: int
    destinations: dict[Destination, DestinationProgress] = Field(description="linkedin, indeed, search")
