"""Who asks, and what a credential may do: the caller every route is given, and the scopes.

One rule for an employer and a credential's name, whatever the source (the credentials
file, an OIDC claim, the development tokens): a plain identifier. No value of either is a
wildcard; acting for every employer is the `ops` scope, never an employer string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from schemas.model import DEFAULT_EMPLOYER

# A letter or digit, then letters, digits, `.`, `_`, `-`: 1-100 characters. Not `*`, and
# nothing a query, a path or a log line would read as anything but a name.
_IDENTIFIER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class Scope(StrEnum):
    READ = "postings:read"  # GET /postings, /postings/{id}, its deliveries and timeline
    WRITE = "postings:write"  # POST, PUT, DELETE /postings, POST /postings:batch
    OPS = "ops"  # /ops/*; what its postings scopes allow reaches every employer's postings
    SNAPSHOT = "ops:snapshot"  # GET /ops/snapshot on the internal port: every store, for a new replica


EVERY_SCOPE = frozenset(Scope)
# The scopes that allow a change: a route that writes must require one of them.
WRITING = frozenset({Scope.WRITE, Scope.OPS})


class Unauthenticated(Exception):
    """A bearer token that stands for no caller (401); `reason` is what the failure counter
    says (`jobpost_api_auth_failures_total{reason}`), the message what the log says. Neither
    ever holds the token."""

    def __init__(self, reason: str, why: str) -> None:
        super().__init__(why)
        self.reason = reason


def identifier(value: object, what: str = "employer") -> str:
    """`value` when it is a plain identifier (the one rule for employers and credential
    names); else a ValueError naming `what`."""
    if not isinstance(value, str) or not _IDENTIFIER.match(value):
        raise ValueError(f"{what} must be 1-100 of A-Z a-z 0-9 . _ -, starting with a letter or digit")
    return value


@dataclass(frozen=True)
class Caller:
    """Who asks: the credential's name (the actor recorded with what it writes), its
    employer and its scopes. An operator (scope `ops`) acts on every employer's postings;
    its employer is still one employer (whose postings its creates make)."""

    name: str
    employer: str = DEFAULT_EMPLOYER
    scopes: frozenset[Scope] = frozenset()

    def __post_init__(self) -> None:
        identifier(self.employer)

    @property
    def operator(self) -> bool:
        return Scope.OPS in self.scopes

    def sees(self, employer: str | None) -> bool:
        """Whether a posting of `employer` (None: not known) exists for this caller."""
        return self.operator or employer == self.employer
