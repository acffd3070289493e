"""A posting's body, from what a client sent to what is written, and back to what it is
told: the settings' limits, the deprecated free-text `location` read as one location, the
HTML description cleaned, and the boards' problems pointed at the body as it was sent.

The create, replace and batch routes and `POST /postings:validate` all go through here, so a
body is refused, or accepted as the same posting, whichever route it came by."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from listing import description, places
from listing.problems import Code
from listing.problems import Problem as ListingProblem
from producer_api.config import ApiSettings
from producer_api.http.models import BoardVerdictOut, LocationIn, PostingIn, SalaryIn, ValidationOut
from producer_api.http.problems import Problem, validation_problem
from schemas.enums import (
    DescriptionFormat,
    Destination,
    EmploymentType,
    SalaryPeriod,
    Workplace,
)
from schemas.model import Posting, PostingLocation, Salary

NOT_LISTABLE = "Not listable"


def check_limits(body: PostingIn, settings: ApiSettings) -> None:
    """Settings may lower the contract's limits; the model enforces the contract's own."""
    limits = {
        "title": settings.title_max_chars,
        "description": settings.description_max_chars,
        "notes": settings.notes_max_chars,
    }
    errors = [
        {"loc": ["body", field], "msg": f"at most {limit} characters", "type": "string_too_long"}
        for field, limit in limits.items()
        if len(getattr(body, field)) > limit
    ]
    if errors:
        raise validation_problem(errors)


def to_posting(body: PostingIn) -> Posting:
    """The posting the body describes (422 for one that names no location, or whose
    deprecated `location` says no place for sure)."""
    fmt = DescriptionFormat(body.description_format.upper())
    return Posting(
        title=body.title,
        description=description.clean(body.description, fmt),
        notes=body.notes,
        apply_url=body.apply_url,
        description_format=fmt,
        locations=_locations(body),
        workplace=Workplace(body.workplace.upper()),
        employment_type=EmploymentType(body.employment_type.upper()),
        salary=None if body.salary is None else _salary(body.salary),
        expires_at=None if body.expires_at is None else int(body.expires_at.timestamp() * 1000),
        boards=tuple(Destination(board) for board in body.boards),
    )


def _locations(body: PostingIn) -> tuple[PostingLocation, ...]:
    if body.locations is not None and body.location is not None:
        raise validation_problem(
            [
                {
                    "loc": ["body", "location"],
                    "msg": "send either locations or the deprecated location, not both",
                    "type": "extra_forbidden",
                }
            ]
        )
    if body.locations is not None:
        return tuple(_place(place) for place in body.locations)
    if body.location is None:
        raise validation_problem([{"loc": ["body", "locations"], "msg": "Field required", "type": "missing"}])
    place = places.structured(body.location)
    if place is None:
        refused = ListingProblem(
            None,
            "/location",
            Code.LOCATION_UNRECOGNIZED,
            f"{body.location!r} does not name one place for sure: send `locations` instead, e.g. "
            '[{"city": "Berlin", "country": "DE"}], or for a remote job its country with workplace '
            '"remote". The free-text location is read only as "City, Country" or "City, Region, Country".',
        )
        raise Problem(
            422, "Invalid request", "the location cannot be read as one place", errors=[refused.to_json()]
        )
    return (place,)


def _place(place: LocationIn) -> PostingLocation:
    return PostingLocation(place.country, place.city, place.region, place.postal_code)


def _salary(salary: SalaryIn) -> Salary:
    return Salary(salary.min, salary.currency, SalaryPeriod(salary.period.upper()), salary.max)


def refusal(by_board: Mapping[Destination, Sequence[ListingProblem]], body: PostingIn) -> Problem | None:
    """The 422 for a posting a board it targets would refuse, or None when each would list it."""
    found = [_as_sent(problem, body) for problems in by_board.values() for problem in problems]
    if not found:
        return None
    boards = sorted({str(p["board"]) for p in found})
    return Problem(
        422,
        NOT_LISTABLE,
        f"{' and '.join(boards)} would refuse this posting: each entry of errors says where and why; "
        "nothing was written",
        errors=found,
    )


def verdicts(by_board: Mapping[Destination, Sequence[ListingProblem]], body: PostingIn) -> ValidationOut:
    """`POST /postings:validate`'s answer: each targeted board, listable or why not."""
    return ValidationOut.model_validate(
        {
            "boards": {
                board.value: BoardVerdictOut.model_validate(
                    {"listable": not problems, "errors": [_as_sent(p, body) for p in problems]}
                )
                for board, problems in by_board.items()
            }
        }
    )


def _as_sent(problem: ListingProblem, body: PostingIn) -> dict[str, str | None]:
    """The problem pointing into the body as sent: a location read from the deprecated
    `location` is pointed at it."""
    found = problem.to_json()
    if body.location is not None and problem.pointer.startswith("/locations"):
        found["pointer"] = "/location"
    return found


def expires_at(millis: int | None) -> datetime | None:
    return None if millis is None else datetime.fromtimestamp(millis / 1000, UTC)
