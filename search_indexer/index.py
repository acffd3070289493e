"""The search index: its template and its alias; the document itself is
`schemas.search.SearchDocument`, whose fields are the mapping's.

Documents are written with `version_type=external` and the posting version, so
Elasticsearch itself drops a stale write and replays are harmless. A DELETED version
marks the document `deleted` at that version instead of removing it, so no older
version can bring it back.
"""

from __future__ import annotations

import time
from enum import StrEnum
from typing import Any

from elasticsearch import Elasticsearch, NotFoundError

from runtime.http import retryable_status
from schemas.model import PostingUpdate
from schemas.search import SearchDocument


def template(alias: str, index_description: bool, replicas: int) -> dict[str, Any]:
    """One mapping property per SearchDocument field."""
    return {
        "index_patterns": [f"{alias}-*"],
        "template": {
            "settings": {"number_of_shards": 1, "number_of_replicas": replicas},
            "mappings": {
                "dynamic": "strict",
                "properties": {
                    "id": {"type": "keyword"},
                    "title": {"type": "text", "fields": {"raw": {"type": "keyword", "ignore_above": 256}}},
                    "description": {"type": "text", "index": index_description},
                    "notes": {"type": "text", "index": False},
                    "version": {"type": "long"},
                    "status": {"type": "keyword"},
                    "last_update_time": {"type": "date", "format": "epoch_millis"},
                    "employer": {"type": "keyword"},
                    "listing": {"type": "object", "enabled": False},  # kept in _source, never searched
                },
            },
        },
    }


def ensure_index(es: Elasticsearch, alias: str, index_description: bool = False, replicas: int = 0) -> str:
    """Install the template and, when the alias is missing, a first index behind it.
    Returns the index the alias points to."""
    wanted = template(alias, index_description, replicas)
    es.indices.put_index_template(name=alias, **wanted)
    try:
        current = next(iter(es.indices.get_alias(name=alias)))
    except NotFoundError:
        pass
    else:
        add_missing_fields(es, current, wanted["template"]["mappings"]["properties"])
        return current
    index = new_index_name(alias)
    es.indices.create(index=index, aliases={alias: {"is_write_index": True}})
    return index


def add_missing_fields(es: Elasticsearch, index: str, properties: dict[str, Any]) -> list[str]:
    """Map the fields a document has gained since `index` was made (its mapping is strict:
    a document with an unmapped field would be refused). Fields already mapped are left as
    they are: a mapping cannot change a field's type in place (that takes a reindex)."""
    mapped = es.indices.get_mapping(index=index)[index]["mappings"].get("properties", {})
    missing = {name: spec for name, spec in properties.items() if name not in mapped}
    if missing:
        es.indices.put_mapping(index=index, properties=missing)
    return sorted(missing)


def new_index_name(alias: str) -> str:
    return f"{alias}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{time.time_ns() % 1_000_000:06d}"


def switch_alias(es: Elasticsearch, alias: str, index: str) -> list[str]:
    """Point the alias at `index` in one atomic step; returns the indices it left."""
    try:
        old = list(es.indices.get_alias(name=alias))
    except NotFoundError:
        old = []
    actions: list[dict[str, Any]] = [{"remove": {"index": o, "alias": alias}} for o in old if o != index]
    actions.append({"add": {"index": index, "alias": alias, "is_write_index": True}})
    es.indices.update_aliases(actions=actions)
    return [o for o in old if o != index]


def bulk_operations(index: str, updates: list[PostingUpdate]) -> list[dict[str, Any]]:
    operations: list[dict[str, Any]] = []
    for update in updates:
        operations.append(
            {
                "index": {
                    "_index": index,
                    "_id": update.posting_id,
                    "version": update.version,
                    "version_type": "external",
                }
            }
        )
        operations.append(SearchDocument.of(update).to_source())
    return operations


class BulkOutcome(StrEnum):
    """What one bulk item's answer means (also the label of jobpost_indexer_documents_total)."""

    INDEXED = "indexed"
    STALE = "stale"  # a newer version is indexed already: external versioning refused this one
    RETRY = "retry"  # 408/429/5xx, or no answer for the item
    REJECTED = "rejected"  # refused for good


def classify(item: dict[str, Any]) -> tuple[BulkOutcome, str]:
    """One bulk item's outcome, with the server's reason when it failed."""
    answer = item.get("index") or {}
    status = int(answer.get("status", 500))
    if status < 300:
        return BulkOutcome.INDEXED, ""
    if status == 409:
        return BulkOutcome.STALE, ""
    reason = str(answer.get("error"))
    return (BulkOutcome.RETRY if retryable_status(status) else BulkOutcome.REJECTED), reason
