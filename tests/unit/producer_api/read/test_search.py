"""The title search's query and cursor, without a search server."""

import dataclasses

import pytest

from producer_api.read.search import BadCursor, decode_cursor, encode_cursor, query
from schemas.search import SearchDocument

FIELDS = {f.name for f in dataclasses.fields(SearchDocument)}


def named_fields(body: dict) -> set[str]:
    clause = body["query"]["bool"]
    return (
        set(clause["must"]["match"])
        | set(clause["filter"]["term"])
        | {name for sort in body["sort"] for name in sort if name != "_score"}
    )


def test_the_query_names_only_document_fields():
    body = query("kafka", 20, None)
    assert named_fields(body) <= FIELDS
    assert body["query"]["bool"]["filter"]["term"]["status"] == "active"


def test_a_cursor_goes_back_into_search_after():
    cursor = encode_cursor([1.5, "p1"])
    assert query("kafka", 20, cursor)["search_after"] == [1.5, "p1"]
    with pytest.raises(BadCursor):
        decode_cursor("not-a-cursor")
