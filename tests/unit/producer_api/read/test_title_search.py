"""The title search's query and cursor, without a search server."""

import dataclasses

import pytest

from producer_api.read.title_search import BadCursor, decode_cursor, encode_cursor, query
from schemas.search import SearchDocument

FIELDS = {f.name for f in dataclasses.fields(SearchDocument)}


def fields_in(clause: object) -> set[str]:
    """Every field a query clause names (term, match, exists), however deeply nested."""
    if isinstance(clause, list):
        return {name for item in clause for name in fields_in(item)}
    if not isinstance(clause, dict):
        return set()
    found = set()
    for kind, inner in clause.items():
        if kind in ("term", "match"):
            found |= set(inner)
        elif kind == "exists":
            found.add(inner["field"])
        else:
            found |= fields_in(inner)
    return found


def named_fields(body: dict) -> set[str]:
    return fields_in(body["query"]) | {name for sort in body["sort"] for name in sort if name != "_score"}


def test_the_query_names_only_document_fields():
    body = query("kafka", 20, None, "acme")
    assert named_fields(body) <= FIELDS
    assert {"term": {"status": "active"}} in body["query"]["bool"]["filter"]


def test_an_employer_searches_its_own_postings_and_an_operator_every_employers():
    assert {"term": {"employer": "acme"}} in query("kafka", 20, None, "acme")["query"]["bool"]["filter"]
    assert "employer" not in fields_in(query("kafka", 20, None, None)["query"])


def test_the_default_employer_also_finds_documents_indexed_before_employers():
    (of_default,) = [f for f in query("kafka", 20, None, "default")["query"]["bool"]["filter"] if "bool" in f]
    assert {"term": {"employer": "default"}} in of_default["bool"]["should"]
    assert {"bool": {"must_not": {"exists": {"field": "employer"}}}} in of_default["bool"]["should"]


def test_a_cursor_goes_back_into_search_after():
    cursor = encode_cursor([1.5, "p1"])
    assert query("kafka", 20, cursor)["search_after"] == [1.5, "p1"]
    with pytest.raises(BadCursor):
        decode_cursor("not-a-cursor")
