"""The search index's document: the one place its field names live.

The indexer builds one from each PostingUpdate and writes `to_source()`; the API reads a
hit's `_source` back with `from_source()`. The index template's mapping
(`search_indexer.index.template`) has exactly these fields and the API's query names no
others (unit tests check both).

A deleted posting's document keeps only its id, version, status and employer: no text of
it stays searchable or readable in the index (`DELETED_FIELDS`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from schemas.model import DEFAULT_EMPLOYER, Op, Posting, PostingUpdate

Status = Literal["active", "deleted"]
DELETED_FIELDS = ("id", "version", "status", "employer")  # what a deleted posting's document keeps


@dataclass(frozen=True, slots=True)
class SearchDocument:
    id: str
    title: str
    description: str
    notes: str
    version: int
    status: Status  # a DELETED version marks the document deleted, never removes it
    last_update_time: int  # epoch millis
    employer: str = DEFAULT_EMPLOYER  # whose posting (a document indexed before employers: the default's)
    # The rest of the posting (locations, workplace, salary, boards...), stored and never
    # searched, so a hit reads as the posting does on every other route: the Avro fields of
    # `PostingSnapshot` other than the text above. Empty: a document indexed before them.
    listing: dict[str, Any] = field(default_factory=dict)

    @property
    def posting(self) -> Posting:
        """The posting as the document holds it (a deleted one's: empty)."""
        return Posting.from_avro({**_DEFAULTS, **self.listing, **_text(self)})

    @classmethod
    def of(cls, update: PostingUpdate) -> SearchDocument:
        posting = update.posting
        if update.op == Op.DELETED:  # the document keeps no text (nor does the record)
            return cls(update.posting_id, "", "", "", update.version, "deleted", 0, update.employer)
        return cls(
            id=update.posting_id,
            title=posting.title,
            description=posting.description,
            notes=posting.notes,
            version=update.version,
            status="active",
            last_update_time=update.last_update_time_millis,
            employer=update.employer,
            listing=_listing(posting),
        )

    def to_source(self) -> dict[str, Any]:
        if self.status == "deleted":
            return {"id": self.id, "version": self.version, "status": self.status, "employer": self.employer}
        return {
            "id": self.id,
            "title": self.title,
            "description": self.description,
            "notes": self.notes,
            "version": self.version,
            "status": self.status,
            "last_update_time": self.last_update_time,
            "employer": self.employer,
            "listing": self.listing,
        }

    @classmethod
    def from_source(cls, source: dict[str, Any]) -> SearchDocument:
        return cls(
            source["id"],
            source.get("title", ""),
            source.get("description", ""),
            source.get("notes", ""),
            source["version"],
            source["status"],
            source.get("last_update_time", 0),
            source.get("employer", DEFAULT_EMPLOYER),
            source.get("listing") or {},
        )


_TEXT = ("title", "description", "notes")
_DEFAULTS = Posting("", "").to_avro()


def _listing(posting: Posting) -> dict[str, Any]:
    """The posting's Avro fields other than its text, as plain JSON (enum symbols as strings)."""
    fields = {name: value for name, value in posting.to_avro().items() if name not in _TEXT}
    return json.loads(json.dumps(fields))  # type: ignore[no-any-return]


def _text(document: SearchDocument) -> dict[str, str]:
    return {"title": document.title, "description": document.description, "notes": document.notes}
