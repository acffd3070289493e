"""What a board would refuse in a posting, said once: the board, where in the posting
(a JSON pointer into the request's body), a stable code, and a sentence in the board's terms.

A detail speaks to the employer who wrote the posting: it never names a server's file, path,
environment variable or setting (a test checks every case)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from schemas.enums import Destination


class Code(StrEnum):
    """Why, in one word a client can switch on; stable across releases."""

    REQUIRED = "required"
    TOO_SHORT = "too_short"
    TOO_LONG = "too_long"
    TOO_MANY = "too_many"
    LOCATION_FORMAT = "location_format"
    LOCATION_UNRECOGNIZED = "location_unrecognized"
    MUST_BE_POSITIVE = "must_be_positive"
    EMPLOYER_NOT_CONFIGURED = "employer_not_configured"


@dataclass(frozen=True, slots=True)
class Problem:
    board: Destination | None  # None: no board's, the request's own (an unrecognized location)
    pointer: str  # RFC 6901 into the posting as the client wrote it; "" is the posting as a whole
    code: Code
    detail: str

    def to_json(self) -> dict[str, str | None]:
        return {
            "board": None if self.board is None else self.board.value,
            "pointer": self.pointer,
            "code": self.code.value,
            "detail": self.detail,
        }
