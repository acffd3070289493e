"""Title search over the index alias, paged with an opaque `search_after` cursor."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from typing import Any

from elasticsearch import ApiError, NotFoundError
from elasticsearch import ConnectionError as EsConnectionError

from producer_api.bulkhead import Bulkhead
from runtime.search_server import ElasticsearchSettings
from schemas.model import DEFAULT_EMPLOYER
from schemas.search import SearchDocument

log = logging.getLogger(__name__)


class BadCursor(ValueError):
    """The cursor was not made by this API."""


class SearchUnavailable(Exception):
    """The search server did not answer."""


class TitleSearch:
    def __init__(self, settings: ElasticsearchSettings, alias: str, bulkhead: Bulkhead | None = None) -> None:
        # 503 also answers while a new index starts its shard: worth a quick second try.
        self.es = settings.client(max_retries=2, retry_on_status=(502, 503, 504), request_timeout=10)
        self.alias = alias
        self.bulkhead = bulkhead

    async def health(self) -> str | None:
        """None when the search server answers green or yellow; else why not (readiness)."""
        quick = self.es.options(request_timeout=2, max_retries=0)
        try:
            health = await asyncio.to_thread(quick.cluster.health)
        except (ApiError, EsConnectionError) as exc:
            log.warning("readiness: the search server does not answer: %r", exc)
            return f"the search server does not answer ({type(exc).__name__})"
        status = health.get("status")
        return None if status in ("green", "yellow") else f"the search server's health is {status}"

    async def search(
        self, text: str, limit: int, cursor: str | None, employer: str | None = None
    ) -> tuple[list[SearchDocument], str | None]:
        """Active postings whose title matches, of `employer` (None: of every employer);
        BulkheadFull when too many searches are at the search server already."""
        body = query(text, limit, cursor, employer)

        def ask() -> Any:
            return self.es.search(index=self.alias, **body)

        try:
            response = await (self.bulkhead.run(ask) if self.bulkhead else asyncio.to_thread(ask))
        except NotFoundError:
            return [], None  # nothing indexed yet
        except (ApiError, EsConnectionError) as exc:
            raise SearchUnavailable(str(exc)) from exc
        hits = response["hits"]["hits"]
        next_cursor = encode_cursor(hits[-1]["sort"]) if len(hits) == limit else None
        return [SearchDocument.from_source(h["_source"]) for h in hits], next_cursor

    def close(self) -> None:
        self.es.close()


def query(text: str, limit: int, cursor: str | None, employer: str | None = None) -> dict[str, Any]:
    """Active postings whose title matches, of `employer` (None: every employer's), best
    first, ties by id (SearchDocument fields)."""
    filters: list[dict[str, Any]] = [{"term": {"status": "active"}}]
    if employer is not None:
        filters.append(_of_employer(employer))
    body: dict[str, Any] = {
        "query": {"bool": {"must": {"match": {"title": {"query": text}}}, "filter": filters}},
        "sort": [{"_score": "desc"}, {"id": "asc"}],
        "size": limit,
    }
    if cursor:
        body["search_after"] = decode_cursor(cursor)
    return body


def _of_employer(employer: str) -> dict[str, Any]:
    """The employer's documents; for the default employer also those indexed before
    documents named one (they are its postings, as records before employers are)."""
    own: dict[str, Any] = {"term": {"employer": employer}}
    if employer != DEFAULT_EMPLOYER:
        return own
    unnamed = {"bool": {"must_not": {"exists": {"field": "employer"}}}}
    return {"bool": {"should": [own, unnamed], "minimum_should_match": 1}}


def encode_cursor(sort_values: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(sort_values).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> list[Any]:
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadCursor("the cursor is not one this API gave out") from exc
    if not (
        isinstance(values, list)
        and len(values) == 2
        and isinstance(values[0], int | float)
        and isinstance(values[1], str)
    ):
        raise BadCursor("the cursor is not one this API gave out")
    return values
