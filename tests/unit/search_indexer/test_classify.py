"""What one bulk item's answer means to the indexer."""

import pytest

from search_indexer.index import classify


@pytest.mark.parametrize(
    ("status", "outcome"),
    [(200, "indexed"), (201, "indexed"), (409, "stale"), (429, "retry"), (503, "retry"), (400, "rejected")],
)
def test_bulk_item_outcomes(status, outcome):
    item = {"index": {"status": status, "error": {"type": "x"} if status >= 300 else None}}
    assert classify(item)[0] == outcome


def test_a_rejection_carries_the_servers_reason():
    item = {"index": {"status": 400, "error": {"type": "mapper_parsing_exception", "reason": "bad"}}}
    assert "mapper_parsing_exception" in classify(item)[1]


def test_an_item_without_a_status_is_retried_not_lost():
    assert classify({})[0] == "retry"
