"""The records of the write side as types: a posting and what `jobpost.postings`,
`.commands` and `.replies` carry (their enums are in schemas.enums; the delivery side's
records, `jobpost.deliveries`, are schemas.deliveries).

Field names and enum symbols are exactly the Avro ones (`schemas/avro/*.avsc`). Each type
turns itself into the dict fastavro writes (`to_avro`) and back (`from_avro`, from what
the newest reader schema gives), so the codec converts at the edge and nothing else sees
a dict. The conversions are written out by hand: `dataclasses.asdict` deep-copies and is
several times slower.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schemas.enums import (
    _ACTIONS,
    _DESCRIPTION_FORMATS,
    _DESTINATIONS,
    _EMPLOYMENT_TYPES,
    _OPS,
    _OUTCOMES,
    _SALARY_PERIODS,
    _WORKPLACES,
    Action,
    DescriptionFormat,
    Destination,
    EmploymentType,
    Op,
    Outcome,
    SalaryPeriod,
    Workplace,
)

DEFAULT_EMPLOYER = "default"  # whose postings development tokens and records before employers write


@dataclass(frozen=True, slots=True)
class PostingLocation:
    """One place the job is at (Avro `PostingLocation`): an ISO 3166 alpha-2 country, and
    the city, region and postal code where the boards need them."""

    country: str
    city: str | None = None
    region: str | None = None
    postal_code: str | None = None

    def to_avro(self) -> dict[str, Any]:
        return {
            "city": self.city,
            "region": self.region,
            "postal_code": self.postal_code,
            "country": self.country,
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> PostingLocation:
        return PostingLocation(record["country"], record["city"], record["region"], record["postal_code"])


@dataclass(frozen=True, slots=True)
class Salary:
    """A salary range (Avro `Salary`): amounts in the ISO 4217 currency's major unit, per
    period; no `max` is "from `min`"."""

    min: float
    currency: str
    period: SalaryPeriod
    max: float | None = None

    def to_avro(self) -> dict[str, Any]:
        return {"min": self.min, "max": self.max, "currency": self.currency, "period": self.period}

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> Salary:
        return Salary(record["min"], record["currency"], _SALARY_PERIODS[record["period"]], record["max"])


BOTH_BOARDS = (Destination.LINKEDIN, Destination.INDEED)


@dataclass(frozen=True, slots=True)
class Posting:
    """The posting's content (Avro `PostingSnapshot`): its text, where and how the job is
    done, and the boards it goes to. `location` is the free text of records and clients
    before `locations`; a posting accepted since carries `locations` instead."""

    title: str
    description: str
    notes: str = ""
    location: str | None = None
    apply_url: str | None = None
    description_format: DescriptionFormat = DescriptionFormat.TEXT
    locations: tuple[PostingLocation, ...] = ()
    workplace: Workplace = Workplace.ON_SITE
    employment_type: EmploymentType = EmploymentType.FULL_TIME
    salary: Salary | None = None
    expires_at: int | None = None  # epoch millis
    boards: tuple[Destination, ...] = BOTH_BOARDS

    @classmethod
    def erased(cls) -> Posting:
        """What a DELETED version carries: no text, no place, no pay, no board (a delete
        closes the job on every board that holds it)."""
        return cls("", "", boards=())

    def to_avro(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "description": self.description,
            "notes": self.notes,
            "location": self.location,
            "apply_url": self.apply_url,
            "description_format": self.description_format,
            "locations": [place.to_avro() for place in self.locations],
            "workplace": self.workplace,
            "employment_type": self.employment_type,
            "salary": None if self.salary is None else self.salary.to_avro(),
            "expires_at": self.expires_at,
            "boards": list(self.boards),
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> Posting:
        salary = record["salary"]
        return Posting(
            record["title"],
            record["description"],
            record["notes"],
            record["location"],
            record["apply_url"],
            _DESCRIPTION_FORMATS[record["description_format"]],
            tuple(PostingLocation.from_avro(place) for place in record["locations"]),
            _WORKPLACES[record["workplace"]],
            _EMPLOYMENT_TYPES[record["employment_type"]],
            None if salary is None else Salary.from_avro(salary),
            record["expires_at"],
            tuple(_DESTINATIONS[board] for board in record["boards"]),
        )


@dataclass(frozen=True, slots=True)
class PostingUpdate:
    """One accepted change of a posting: the value of `jobpost.postings`."""

    posting_id: str
    version: int
    op: Op
    idempotency_key: str
    request_id: str
    posting: Posting
    last_update_time_millis: int
    accepted_at: int
    request_fingerprint: str = ""
    employer: str = DEFAULT_EMPLOYER
    actor: str = ""  # the credential that made the change

    def to_avro(self) -> dict[str, Any]:
        return {
            "posting_id": self.posting_id,
            "version": self.version,
            "op": self.op,
            "idempotency_key": self.idempotency_key,
            "request_id": self.request_id,
            "request_fingerprint": self.request_fingerprint,
            "employer": self.employer,
            "actor": self.actor,
            "posting": self.posting.to_avro(),
            "last_update_time_millis": self.last_update_time_millis,
            "accepted_at": self.accepted_at,
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> PostingUpdate:
        return PostingUpdate(
            record["posting_id"],
            record["version"],
            _OPS[record["op"]],
            record["idempotency_key"],
            record["request_id"],
            Posting.from_avro(record["posting"]),
            record["last_update_time_millis"],
            record["accepted_at"],
            record["request_fingerprint"],
            record["employer"],
            record["actor"],
        )


@dataclass(frozen=True, slots=True)
class Command:
    """A validated write request for the sequencer: the value of `jobpost.commands`."""

    request_id: str
    posting_id: str
    action: Action
    received_at: int
    posting: Posting | None = None
    expected_version: int | None = None
    correlation_id: str = ""
    request_fingerprint: str = ""
    employer: str = DEFAULT_EMPLOYER  # the sender's (a create makes a posting of it)
    actor: str = ""  # the credential that sent it
    budget_ms: int = 0  # how long after its append time it may be applied (0: none given)
    operator: bool = False  # the sender has the scope ops: any employer's posting

    @property
    def keyed(self) -> bool:
        """Whether `request_id` is a client's Idempotency-Key. A request without one carries
        the correlation id the API made for it (producer_api.commands), which nobody can
        repeat, so the sequencer keeps no key for it."""
        return bool(self.request_id) and self.request_id != self.correlation_id

    def to_avro(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "correlation_id": self.correlation_id,
            "request_fingerprint": self.request_fingerprint,
            "employer": self.employer,
            "operator": self.operator,
            "actor": self.actor,
            "posting_id": self.posting_id,
            "action": self.action,
            "expected_version": self.expected_version,
            "posting": None if self.posting is None else self.posting.to_avro(),
            "received_at": self.received_at,
            "budget_ms": self.budget_ms,
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> Command:
        posting = record["posting"]
        return Command(
            record["request_id"],
            record["posting_id"],
            _ACTIONS[record["action"]],
            record["received_at"],
            None if posting is None else Posting.from_avro(posting),
            record["expected_version"],
            record["correlation_id"],
            record["request_fingerprint"],
            record["employer"],
            record["actor"],
            record["budget_ms"],
            record["operator"],
        )


@dataclass(frozen=True, slots=True)
class Reply:
    """The sequencer's answer to one command: the value of `jobpost.replies`."""

    request_id: str
    correlation_id: str
    posting_id: str
    outcome: Outcome
    version: int | None = None
    deleted: bool = False
    last_update_time_millis: int | None = None

    def to_avro(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "correlation_id": self.correlation_id,
            "posting_id": self.posting_id,
            "outcome": self.outcome,
            "version": self.version,
            "deleted": self.deleted,
            "last_update_time_millis": self.last_update_time_millis,
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> Reply:
        return Reply(
            record["request_id"],
            record["correlation_id"],
            record["posting_id"],
            _OUTCOMES[record["outcome"]],
            record["version"],
            record["deleted"],
            record["last_update_time_millis"],
        )
