"""Title search over the index alias, paged with an opaque `search_after` cursor."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

from elasticsearch import ApiError, NotFoundError
from elasticsearch import ConnectionError as EsConnectionError

from runtime.search_server import ElasticsearchSettings
from schemas.search import SearchDocument


class BadCursor(ValueError):
    """The cursor was not made by this API."""


class SearchUnavailable(Exception):
    """The search server did not answer."""


class TitleSearch:
    def __init__(self, settings: ElasticsearchSettings, alias: str) -> None:
        # 503 also answers while a new index starts its shard: worth a quick second try.
        self.es = settings.client(max_retries=2, retry_on_status=(502, 503, 504), request_timeout=10)
        self.alias = alias

    async def health(self) -> str | None:
        """None when the search server answers green or yellow; else why not (readiness)."""
        quick = self.es.options(request_timeout=2, max_retries=0)
        try:
            health = await asyncio.to_thread(quick.cluster.health)
        except (ApiError, EsConnectionError) as exc:
            return f"the search server does not answer: {exc!r}"
        status = health.get("status")
        return None if status in ("green", "yellow") else f"the search server's health is {status}"

    async def search(
        self, text: str, limit: int, cursor: str | None
    ) -> tuple[list[SearchDocument], str | None]:
        body = query(text, limit, cursor)
        try:
            response = await asyncio.to_thread(lambda: self.es.search(index=self.alias, **body))
        except NotFoundError:
            return [], None  # nothing indexed yet
        except (ApiError, EsConnectionError) as exc:
            raise SearchUnavailable(str(exc)) from exc
        hits = response["hits"]["hits"]
        next_cursor = encode_cursor(hits[-1]["sort"]) if len(hits) == limit else None
        return [SearchDocument.from_source(h["_source"]) for h in hits], next_cursor

    def close(self) -> None:
        self.es.close()


def query(text: str, limit: int, cursor: str | None) -> dict[str, Any]:
    """Active postings whose title matches, best first, ties by id (SearchDocument fields)."""
    body: dict[str, Any] = {
        "query": {
            "bool": {
                "must": {"match": {"title": {"query": text}}},
                "filter": {"term": {"status": "active"}},
            }
        },
        "sort": [{"_score": "desc"}, {"id": "asc"}],
        "size": limit,
    }
    if cursor:
        body["search_after"] = decode_cursor(cursor)
    return body


def encode_cursor(sort_values: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(sort_values).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> list[Any]:
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadCursor("the cursor is not one this API gave out") from exc
    if not (isinstance(values, list) and len(values) == 2 and isinstance(values[0], int | float)
            and isinstance(values[1], str)):  # fmt: skip
        raise BadCursor("the cursor is not one this API gave out")
    return values
