"""The search index's document: the one place its field names live.

The indexer builds one from each PostingUpdate and writes `to_source()`; the API reads a
hit's `_source` back with `from_source()`. The index template's mapping
(`search_indexer.index.template`) has exactly these fields and the API's query names no
others (unit tests check both).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from schemas.model import Op, PostingUpdate

Status = Literal["active", "deleted"]


@dataclass(frozen=True, slots=True)
class SearchDocument:
    id: str
    title: str
    description: str
    notes: str
    version: int
    status: Status  # a DELETED version marks the document deleted, never removes it
    last_update_time: int  # epoch millis

    @classmethod
    def of(cls, update: PostingUpdate) -> SearchDocument:
        posting = update.posting
        return cls(
            id=update.posting_id,
            title=posting.title,
            description=posting.description,
            notes=posting.notes,
            version=update.version,
            status="deleted" if update.op == Op.DELETED else "active",
            last_update_time=update.last_update_time_millis,
        )

    def to_source(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "description": self.description,
            "notes": self.notes,
            "version": self.version,
            "status": self.status,
            "last_update_time": self.last_update_time,
        }

    @classmethod
    def from_source(cls, source: dict[str, Any]) -> SearchDocument:
        return cls(
            source["id"],
            source["title"],
            source["description"],
            source["notes"],
            source["version"],
            source["status"],
            source["last_update_time"],
        )
