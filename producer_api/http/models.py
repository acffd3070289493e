"""The HTTP shapes of a posting: what a client sends, and what it gets back."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from listing import iso
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
LegacyLocation = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="Deprecated: send `locations`. Free text read as one location when it can only mean "
        'one place ("City, Country" by name or ISO code, or "City, Region, Country"), refused '
        "(`location_unrecognized`) otherwise; never together with `locations`.",
    ),
    AfterValidator(_encodable),
    AfterValidator(_not_blank),
]
ApplyUrl = Annotated[
    str,
    Field(
        max_length=2_000, pattern=r"^https?://[^\s]+$", description="where candidates apply (http or https)"
    ),
]


def _country(code: str) -> str:
    found = iso.country(code)
    if found is None:
        raise ValueError("not an ISO 3166-1 alpha-2 country code (e.g. DE, US)")
    return found


def _currency(code: str) -> str:
    found = iso.currency(code)
    if found is None:
        raise ValueError("not an ISO 4217 currency code (e.g. EUR, USD)")
    return found


def _in_the_future(moment: datetime) -> datetime:
    if moment <= datetime.now(UTC):
        raise ValueError("must be in the future")
    return moment


Place = Annotated[
    str, Field(min_length=1, max_length=100), AfterValidator(_encodable), AfterValidator(_not_blank)
]
Country = Annotated[
    str,
    Field(min_length=2, max_length=2, description="ISO 3166-1 alpha-2, e.g. DE"),
    AfterValidator(_country),
]
Currency = Annotated[
    str, Field(min_length=3, max_length=3, description="ISO 4217, e.g. EUR"), AfterValidator(_currency)
]
Amount = Annotated[float, Field(gt=0, le=1_000_000_000, allow_inf_nan=False)]
Board = Literal["linkedin", "indeed"]
BOARD_NAMES: tuple[Board, ...] = ("linkedin", "indeed")
DescriptionFormatName = Literal["text", "html"]
WorkplaceName = Literal["on_site", "hybrid", "remote"]
EmploymentTypeName = Literal[
    "full_time", "part_time", "contract", "temporary", "internship", "volunteer", "other"
]
SalaryPeriodName = Literal["hour", "day", "week", "month", "year"]


class LocationIn(BaseModel):
    """One place the job is at: a country, and the city, region and postal code the boards
    need for a job that is not remote."""

    model_config = ConfigDict(extra="forbid")

    city: Place | None = None
    region: Place | None = Field(default=None, description="state, province or county")
    postal_code: Annotated[str, Field(min_length=1, max_length=20), AfterValidator(_not_blank)] | None = None
    country: Country


class SalaryIn(BaseModel):
    """A salary range in a currency's major unit (55000.0 EUR a year); no `max` is "from
    `min`"."""

    model_config = ConfigDict(extra="forbid")

    min: Amount
    max: Amount | None = None
    currency: Currency
    period: SalaryPeriodName

    @model_validator(mode="after")
    def _ordered(self) -> SalaryIn:
        if self.max is not None and self.max < self.min:
            raise ValueError("max must not be less than min")
        return self


def _unique(boards: list[Board]) -> list[Board]:
    if len(set(boards)) != len(boards):
        raise ValueError("names a board twice")
    return boards


_EXAMPLE: dict[str, Any] = {
    "title": "Senior Data Engineer",
    "description": "<p>Join the platform team that moves every order, payment and delivery event of "
    "our marketplace through Kafka.</p><ul><li>Design streaming pipelines in Python and SQL</li>"
    "<li>Own their reliability, from schema evolution to on-call</li></ul>",
    "description_format": "html",
    "locations": [{"city": "Berlin", "region": "Berlin", "postal_code": "10115", "country": "DE"}],
    "workplace": "hybrid",
    "employment_type": "full_time",
    "salary": {"min": 70000, "max": 90000, "currency": "EUR", "period": "year"},
    "apply_url": "https://careers.example.com/jobs/senior-data-engineer-berlin",
    "boards": ["linkedin", "indeed"],
}


class PostingIn(BaseModel):
    """A whole posting as a client writes it (create and replace). Each board in `boards`
    must be able to list it: what one would refuse answers 422 with one entry per problem
    (`POST /postings:validate` checks without writing)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [_EXAMPLE]})

    title: Title
    description: Description
    description_format: DescriptionFormatName = Field(
        default="text", description="html: cleaned to p br b strong i em u ul ol li h1-h6 when accepted"
    )
    notes: Notes = Field(default="", description="internal, never sent to a board")
    locations: list[LocationIn] | None = Field(
        default=None,
        min_length=1,
        max_length=8,
        description="where the job is, the first the primary one (required, unless the deprecated "
        "`location` is sent); a remote job: its country",
    )
    workplace: WorkplaceName = "on_site"
    employment_type: EmploymentTypeName = "full_time"
    salary: SalaryIn | None = None
    apply_url: ApplyUrl | None = None
    expires_at: Annotated[AwareDatetime, AfterValidator(_in_the_future)] | None = Field(
        default=None, description="RFC 3339, in the future: when the posting closes at its boards"
    )
    boards: Annotated[list[Board], Field(max_length=2), AfterValidator(_unique)] = Field(
        default_factory=lambda: list(BOARD_NAMES),
        description="the job boards it goes to (default both); [] for search only",
    )
    # Deprecated in the OpenAPI description only (pydantic's own flag warns on every read).
    location: LegacyLocation | None = Field(default=None, json_schema_extra={"deprecated": True})


class LocationOut(BaseModel):
    city: str | None
    region: str | None
    postal_code: str | None
    country: str


class SalaryOut(BaseModel):
    min: float
    max: float | None
    currency: str
    period: SalaryPeriodName


class PostingOut(BaseModel):
    id: str
    version: int
    title: str
    description: str
    description_format: DescriptionFormatName = "text"
    notes: str
    locations: list[LocationOut] = Field(default_factory=list)
    workplace: WorkplaceName = "on_site"
    employment_type: EmploymentTypeName = "full_time"
    salary: SalaryOut | None = None
    apply_url: str | None = None
    expires_at: datetime | None = None
    boards: list[Board] = Field(default_factory=lambda: list(BOARD_NAMES))
    location: str | None = Field(
        default=None, description="the free text of a posting written before `locations` (else null)"
    )
    status: Literal["active", "deleted"]
    last_update_time_millis: int | None
    employer: str | None = Field(default=None, description="whose posting it is (the creator's employer)")


class ListingProblemOut(BaseModel):
    board: Board | None = Field(description="the board that would refuse it (null: the request's own)")
    pointer: str = Field(description='RFC 6901, into the posting as sent, e.g. "/locations/0/city"')
    code: str = Field(
        description="required, too_short, too_long, too_many, location_format, location_unrecognized, "
        "must_be_positive, employer_not_configured"
    )
    detail: str


class BoardVerdictOut(BaseModel):
    listable: bool
    errors: list[ListingProblemOut]


class ValidationOut(BaseModel):
    boards: dict[Board, BoardVerdictOut] = Field(description="each board the posting targets")


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


ListingState = Literal["submitted", "received", "live", "closed", "closed_by_board", "expired", "rejected"]


class ListingOut(BaseModel):
    """The job the board holds for the posting, as the board consumer last learned it."""

    id: str | None = Field(
        description="the board's id of the job: LinkedIn's job posting URN, Indeed's sourcedPostingId"
    )
    url: str | None = Field(
        description="the job's public page, where the board gives one (LinkedIn, once listed)"
    )
    status: ListingState = Field(
        description="submitted: the board has yet to process the job; received: accepted, not listed "
        "yet; live: listed; closed: closed by us (a delete, a version leaving the board out); "
        "closed_by_board: the board closed it on its own (`reason`); expired: at the posting's expiry, "
        "or the board's lifetime lapsed; rejected: the board refused to list it (`reason`)"
    )
    reason: str | None = Field(description="the board's words for a status it chose")
    since: int | None = Field(description="epoch millis the job came to its status")


class DestinationProgress(BaseModel):
    delivered_version: int | None
    status: ProgressStatus = Field(
        description="where the posting's current version stands there; submitted: an asynchronous board "
        "(LinkedIn) accepted the pending version and has not confirmed it yet (`task_id`); paused: the "
        "destination holds it while the board as a whole is unavailable (`paused_reason`), charged to no "
        "retry budget; not_targeted: the posting's `boards` leave this board out, and the board holds no "
        "open job of it (a job it held is closed first: pending, then closed)"
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
    listing: ListingOut | None = Field(
        default=None, description="the job at the board (its id, page, status): null until the board answered"
    )


class DeliveriesOut(BaseModel):
    posting_id: str
    version: int
    destinations: dict[Destination, DestinationProgress] = Field(description="linkedin, indeed, search")
