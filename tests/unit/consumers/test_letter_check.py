"""A redrive request names its dead letter and is taken only for the version that letter holds."""

from __future__ import annotations

import pytest

from consumers.letter_check import Letter, Refused, the_version
from schemas import codec
from schemas.redrive import RedriveRequest
from tests.unit.consumers.fakes import update

VERSION = update("p-1", 3)
LETTER = codec.posting_updates().encode(VERSION)


def request(
    version: int = 3, posting_id: str = "p-1", partition: int = 2, offset: int = 7, carried: bytes = b""
) -> RedriveRequest:
    return RedriveRequest("r-1", posting_id, version, carried, partition, offset, "ops-alice", 0)


def refused(request: RedriveRequest, letter: Letter | None) -> str:
    with pytest.raises(Refused) as raised:
        the_version(request, letter)
    return str(raised.value)


def test_a_request_carries_no_text_and_takes_the_version_its_letter_holds():
    assert the_version(request(), Letter(b"p-1", LETTER)) == VERSION
    # A request of an older release carries the letter's bytes: taken when they are the letter's.
    assert the_version(request(carried=LETTER), Letter(b"p-1", LETTER)) == VERSION


def test_a_request_unlike_its_letter_is_refused_saying_why():
    assert refused(request(), None) == "no dead letter at 2@7"
    assert refused(request(), Letter(b"p-1", None)) == "no dead letter at 2@7"
    assert refused(request(), Letter(b"p-2", LETTER)) == "the dead letter at 2@7 is not posting 'p-1''s"
    assert refused(request(), Letter(None, LETTER)) == "the dead letter at 2@7 is not posting 'p-1''s"
    assert (
        refused(request(version=4), Letter(b"p-1", LETTER)) == "the dead letter at 2@7 holds version 3, not 4"
    )
    assert refused(request(), Letter(b"p-1", b"\x00not a version")).startswith(
        "the dead letter at 2@7 holds no readable version"
    )
    forged = request(carried=LETTER + b" and a posting nobody accepted")
    assert refused(forged, Letter(b"p-1", LETTER)) == (
        "the request carries a version other than the dead letter at 2@7 holds"
    )
