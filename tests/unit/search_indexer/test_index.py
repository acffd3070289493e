"""The search document has one definition: the mapping, the documents written and the
documents read all follow SearchDocument's fields."""

import dataclasses
import json
from pathlib import Path

import pytest

from schemas.model import Op, Posting, PostingUpdate
from schemas.search import SearchDocument
from search_indexer.index import bulk_operations, template
from tests import postings

FIELDS = [f.name for f in dataclasses.fields(SearchDocument)]
KIBANA = Path(__file__).parents[3] / "docker" / "kibana" / "job-postings.ndjson"


def update(op: Op = Op.UPDATED) -> PostingUpdate:
    return PostingUpdate(
        "p1", 4, op, "p1:4", "r", Posting("Kafka Engineer", "Streams", "remote"), 99, 90, employer="acme"
    )


@pytest.mark.parametrize("index_description", [False, True])
def test_the_mapping_has_exactly_the_documents_fields(index_description):
    mapping = template("job-postings", index_description, 0)["template"]["mappings"]
    assert mapping["dynamic"] == "strict"  # a field the mapping lacks is refused, never guessed
    assert list(mapping["properties"]) == FIELDS


def test_kibanas_time_field_is_a_document_field():
    (data_view,) = [json.loads(line) for line in KIBANA.read_text().splitlines() if line.strip()]
    assert data_view["attributes"]["timeFieldName"] in FIELDS


def test_a_document_is_the_update_s_newest_text_and_version():
    document = SearchDocument.of(update())
    assert document.to_source() == {
        "id": "p1",
        "title": "Kafka Engineer",
        "description": "Streams",
        "notes": "remote",
        "version": 4,
        "status": "active",
        "last_update_time": 99,
        "employer": "acme",
        "listing": {
            "location": None,
            "apply_url": None,
            "description_format": "TEXT",
            "locations": [],
            "workplace": "ON_SITE",
            "employment_type": "FULL_TIME",
            "salary": None,
            "expires_at": None,
            "boards": ["linkedin", "indeed"],
        },
    }
    assert list(document.to_source()) == FIELDS
    assert SearchDocument.from_source(document.to_source()) == document


def test_a_hit_holds_the_whole_posting_as_every_route_reads_it():
    listed = dataclasses.replace(update(), posting=postings.posting(3))
    document = SearchDocument.from_source(json.loads(json.dumps(SearchDocument.of(listed).to_source())))
    assert document.posting == postings.posting(3)
    # A document indexed before the listing fields reads with their defaults.
    old = {k: v for k, v in SearchDocument.of(update()).to_source().items() if k != "listing"}
    assert SearchDocument.from_source(old).posting == Posting("Kafka Engineer", "Streams", "remote")


def test_a_deleted_version_marks_the_document_deleted_and_keeps_no_text():
    # A DELETED record of a release before erasure carried the text: the document keeps none.
    source = SearchDocument.of(update(Op.DELETED)).to_source()
    assert source == {"id": "p1", "version": 4, "status": "deleted", "employer": "acme"}


def test_a_document_indexed_before_employers_is_the_default_employers():
    source = {k: v for k, v in SearchDocument.of(update()).to_source().items() if k != "employer"}
    assert SearchDocument.from_source(source).employer == "default"


def test_bulk_operations_write_with_the_posting_version_as_external_version():
    action, source = bulk_operations("job-postings", [update()])
    assert action == {
        "index": {"_index": "job-postings", "_id": "p1", "version": 4, "version_type": "external"}
    }
    assert source == SearchDocument.of(update()).to_source()
