"""What the service's refusals become over HTTP: the one mapping from what the service raises
to the answer a client gets (status, problem type, headers). The exception handlers of the
single routes and every item of `POST /postings:batch` use it, so an item is answered as the
same request alone would be."""

from __future__ import annotations

from producer_api.commands import OutcomeUnknown
from producer_api.http.problems import Problem, internal_error
from producer_api.service import PostingError, Refusal, Unavailable

# A refusal's status and title (the problem type is derived from the title).
_PROBLEM_OF = {
    Refusal.NOT_FOUND: (404, "Not found"),
    Refusal.GONE: (410, "Gone"),
    Refusal.VERSION_MISMATCH: (412, "Precondition failed"),
    Refusal.ALREADY_EXISTS: (409, "Conflict"),
    Refusal.BAD_CURSOR: (422, "Invalid request"),
    Refusal.KEY_REUSED: (422, "Idempotency key reused"),
}


def problem_for(exc: Exception) -> Problem:
    """The answer to a request the service refused or could not finish in time; any other
    exception is a failure of the server (500, logged where it was caught)."""
    if isinstance(exc, Unavailable):
        # A write answered so was never applied, and never will be (service.NotApplied).
        return Problem(503, "Service unavailable", str(exc), headers={"Retry-After": "1"})
    if isinstance(exc, OutcomeUnknown):
        detail = (
            f"{exc}: the write may have been applied, or may still be within {exc.settled_in_s} s "
            "(Retry-After); retry with the same Idempotency-Key, or read the posting after that"
        )
        return Problem(504, "Outcome unknown", detail, headers={"Retry-After": str(exc.settled_in_s)})
    if not isinstance(exc, PostingError):
        return internal_error()
    status, title = _PROBLEM_OF[exc.kind]
    # A refusal names the posting's current version (412: what If-Match should have said).
    headers = {"ETag": f'"{exc.version}"'} if exc.version is not None and exc.version >= 0 else {}
    return Problem(status, title, exc.detail, headers=headers)
