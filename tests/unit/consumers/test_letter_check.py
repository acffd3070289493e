"""A redrive request is taken only for what the dead letter it names holds."""

from __future__ import annotations

from consumers.letter_check import Letter, refusal
from schemas.redrive import RedriveRequest

LETTER = b"\x00the dead-lettered version, as it was written"


def request(
    update: bytes = LETTER, posting_id: str = "p-1", partition: int = 2, offset: int = 7
) -> RedriveRequest:
    return RedriveRequest("r-1", posting_id, 3, update, partition, offset, "ops-alice", 0)


def test_a_request_that_names_its_letter_truly_is_taken():
    assert refusal(request(), Letter(b"p-1", LETTER)) is None


def test_a_request_unlike_its_letter_is_refused_saying_why():
    assert refusal(request(), None) == "no dead letter at 2@7"
    assert refusal(request(), Letter(b"p-1", None)) == "no dead letter at 2@7"
    assert refusal(request(), Letter(b"p-2", LETTER)) == "the dead letter at 2@7 is not posting 'p-1''s"
    assert refusal(request(), Letter(None, LETTER)) == "the dead letter at 2@7 is not posting 'p-1''s"
    forged = request(update=LETTER + b" and a posting nobody accepted")
    assert refusal(forged, Letter(b"p-1", LETTER)) == (
        "the request carries a version other than the dead letter at 2@7 holds"
    )
