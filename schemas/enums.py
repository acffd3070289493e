"""The enums of the contract (Avro enums and the destination names), with lookups by
symbol for the decoders in schemas.model."""

from __future__ import annotations

from enum import StrEnum
from typing import TypeVar

E = TypeVar("E", bound=StrEnum)


class Op(StrEnum):
    """What an accepted change did to the posting (Avro `PostingOp`)."""

    CREATED = "CREATED"
    UPDATED = "UPDATED"
    DELETED = "DELETED"


class Action(StrEnum):
    """What a command asks for (Avro `CommandAction`)."""

    CREATE = "CREATE"
    REPLACE = "REPLACE"
    DELETE = "DELETE"


class Outcome(StrEnum):
    """What the sequencer answered (Avro `CommandOutcome`)."""

    ACCEPTED = "ACCEPTED"
    NOT_FOUND = "NOT_FOUND"
    GONE = "GONE"
    VERSION_MISMATCH = "VERSION_MISMATCH"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    KEY_REUSED = "KEY_REUSED"
    EXPIRED = "EXPIRED"  # read past its deadline: never applied, by anyone


class DeliveryStatus(StrEnum):
    """Where a posting stands at one destination (Avro `DeliveryStatus`): SUBMITTED is a
    version an asynchronous board (LinkedIn's tasks) accepted and has not confirmed yet;
    PAUSED a version the destination holds while the board as a whole is down."""

    DELIVERED = "DELIVERED"
    PENDING = "PENDING"
    RETRYING = "RETRYING"
    FAILED = "FAILED"
    CLOSED = "CLOSED"
    SUBMITTED = "SUBMITTED"
    PAUSED = "PAUSED"


class JobHeld(StrEnum):
    """What a board holds for a posting, as far as its consumer knows (Avro `JobHeld`): no job
    yet (the next content is a CREATE), an open job (UPDATE, RENEW, CLOSE), a closed one."""

    NONE = "NONE"
    OPEN = "OPEN"
    CLOSED = "CLOSED"


class ListingStatus(StrEnum):
    """A job's status at its board, in the board's terms (Avro `ListingStatus`): submitted (a
    CREATE the board has yet to process), received (accepted, not listed yet), live (listed),
    closed (by us), closed by the board (with its reason), expired (at the posting's expiry,
    or the board's lifetime lapsed), rejected (the board refused to list it)."""

    SUBMITTED = "SUBMITTED"
    RECEIVED = "RECEIVED"
    LIVE = "LIVE"
    CLOSED = "CLOSED"
    CLOSED_BY_BOARD = "CLOSED_BY_BOARD"
    EXPIRED = "EXPIRED"
    REJECTED = "REJECTED"


class DeliveryOutcome(StrEnum):
    """What one attempt at one destination came to (Avro `DeliveryOutcome` of
    `jobpost.delivery-events`): CLOSED is a DELETED version delivered; SKIPPED a version a
    later one or a delete superseded before it was sent; SUBMITTED a version an
    asynchronous board accepted, to be confirmed; PAUSED a version held while the board as a
    whole is down."""

    DELIVERED = "DELIVERED"
    CLOSED = "CLOSED"
    RETRYING = "RETRYING"
    DEAD_LETTERED = "DEAD_LETTERED"
    SKIPPED = "SKIPPED"
    SUBMITTED = "SUBMITTED"
    PAUSED = "PAUSED"


class Destination(StrEnum):
    """Where postings go; the first part of a `jobpost.deliveries` key (an Avro string)."""

    LINKEDIN = "linkedin"
    INDEED = "indeed"
    SEARCH = "search"


class DescriptionFormat(StrEnum):
    """How a posting's description is written (Avro `DescriptionFormat`): plain text, or HTML
    cleaned to an allow-list when it was accepted."""

    TEXT = "TEXT"
    HTML = "HTML"


class Workplace(StrEnum):
    """Where the work is done (Avro `Workplace`): LinkedIn's workplaceTypes."""

    ON_SITE = "ON_SITE"
    HYBRID = "HYBRID"
    REMOTE = "REMOTE"


class EmploymentType(StrEnum):
    """The kind of employment (Avro `EmploymentType`): LinkedIn's employmentStatus, Indeed's
    jobTypes."""

    FULL_TIME = "FULL_TIME"
    PART_TIME = "PART_TIME"
    CONTRACT = "CONTRACT"
    TEMPORARY = "TEMPORARY"
    INTERNSHIP = "INTERNSHIP"
    VOLUNTEER = "VOLUNTEER"
    OTHER = "OTHER"


class SalaryPeriod(StrEnum):
    """What a salary's amounts are paid per (Avro `SalaryPeriod`)."""

    HOUR = "HOUR"
    DAY = "DAY"
    WEEK = "WEEK"
    MONTH = "MONTH"
    YEAR = "YEAR"


def _by_symbol(enum: type[E]) -> dict[str, E]:
    """Members by Avro symbol: a dict lookup, where `enum(symbol)` costs ten times more on
    every decoded record. An unknown symbol is a KeyError (the codec's SerializationError)."""
    return {member.value: member for member in enum}


_OPS = _by_symbol(Op)
_ACTIONS = _by_symbol(Action)
_OUTCOMES = _by_symbol(Outcome)
_STATUSES = _by_symbol(DeliveryStatus)
_DESTINATIONS = _by_symbol(Destination)
_DELIVERY_OUTCOMES = _by_symbol(DeliveryOutcome)
_DESCRIPTION_FORMATS = _by_symbol(DescriptionFormat)
_WORKPLACES = _by_symbol(Workplace)
_EMPLOYMENT_TYPES = _by_symbol(EmploymentType)
_SALARY_PERIODS = _by_symbol(SalaryPeriod)
_JOB_HELD = _by_symbol(JobHeld)
_LISTING_STATUSES = _by_symbol(ListingStatus)
