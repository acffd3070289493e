"""What the service's refusals become over HTTP: the one mapping from what the service raises
to the answer a client gets (status, problem type, headers). The exception handlers of the
single routes and every item of `POST /postings:batch` use it, so an item is answered as the
same request alone would be."""

from __future__ import annotations

from producer_api.http.problems import Problem, internal_error
from producer_api.service import PostingError, Unavailable

# A refusal's status and title (the problem type is derived from the title).
_PROBLEM_OF = {
    "NOT_FOUND": (404, "Not found"),
    "GONE": (410, "Gone"),
    "VERSION_MISMATCH": (412, "Precondition failed"),
    "ALREADY_EXISTS": (409, "Conflict"),
    "BAD_CURSOR": (422, "Invalid request"),
    "KEY_REUSED": (422, "Idempotency key reused"),
}


def problem_for(exc: Exception) -> Problem:
    """The answer to a request the service refused or could not finish in time; any other
    exception is a failure of the server (500, logged where it was caught)."""
    if isinstance(exc, Unavailable):
        return Problem(503, "Service unavailable", str(exc), headers={"Retry-After": "1"})
    if not isinstance(exc, PostingError):
        return internal_error()
    status, title = _PROBLEM_OF[exc.kind]
    # A refusal names the posting's current version (412: what If-Match should have said).
    headers = {"ETag": f'"{exc.version}"'} if exc.version is not None and exc.version >= 0 else {}
    return Problem(status, title, exc.detail, headers=headers)
