"""Who asks, and what a credential may do: the caller every route is given, and the scopes."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from schemas.model import ANY_EMPLOYER, DEFAULT_EMPLOYER


class Scope(StrEnum):
    READ = "postings:read"  # GET /postings, /postings/{id}, its deliveries and timeline
    WRITE = "postings:write"  # POST, PUT, DELETE /postings
    OPS = "ops"  # /ops/*; what its postings scopes allow reaches every employer's postings


EVERY_SCOPE = frozenset(Scope)


@dataclass(frozen=True)
class Caller:
    """Who asks: the credential's name (the actor recorded with what it writes), its
    employer and its scopes; an operator (scope `ops`) acts on every employer's postings."""

    name: str
    employer: str = DEFAULT_EMPLOYER
    operator: bool = False
    scopes: frozenset[Scope] = frozenset()

    @property
    def acting_for(self) -> str:
        """The employer a change of an existing posting is made for (ANY: an operator's)."""
        return ANY_EMPLOYER if self.operator else self.employer

    def sees(self, employer: str | None) -> bool:
        """Whether a posting of `employer` (None: not known) exists for this caller."""
        return self.operator or employer == self.employer
