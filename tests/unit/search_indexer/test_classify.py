"""What one bulk item's answer means to the indexer."""

import pytest

from search_indexer.index import BulkOutcome, classify


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, BulkOutcome.INDEXED),
        (201, BulkOutcome.INDEXED),
        (409, BulkOutcome.STALE),
        (429, BulkOutcome.RETRY),
        (503, BulkOutcome.RETRY),
        (400, BulkOutcome.REJECTED),
    ],
)
def test_bulk_item_outcomes(status, outcome):
    item = {"index": {"status": status, "error": {"type": "x"} if status >= 300 else None}}
    assert classify(item)[0] is outcome


def test_a_rejection_carries_the_servers_reason():
    item = {"index": {"status": 400, "error": {"type": "mapper_parsing_exception", "reason": "bad"}}}
    assert "mapper_parsing_exception" in classify(item)[1]


def test_an_item_without_a_status_is_retried_not_lost():
    assert classify({})[0] is BulkOutcome.RETRY


def test_the_outcomes_keep_the_metric_labels_dashboards_use():
    assert [o.value for o in BulkOutcome] == ["indexed", "stale", "retry", "rejected"]
