"""How a destination's progress reads for the posting's current version."""

from producer_api.service import _status_for


def test_delivered_older_version_means_the_current_one_is_pending():
    assert _status_for({"status": "DELIVERED", "delivered_version": 2}, 2) == "delivered"
    assert _status_for({"status": "DELIVERED", "delivered_version": 1}, 2) == "pending"
    assert _status_for({}, 0) == "pending"


def test_failed_counts_only_for_the_version_that_failed():
    failed = {"status": "FAILED", "delivered_version": 0, "pending_version": 1}
    assert _status_for(failed, 1) == "failed"
    assert _status_for(failed, 2) == "pending"


def test_retrying_and_closed_read_as_they_are():
    assert _status_for({"status": "RETRYING", "pending_version": 3}, 3) == "retrying"
    assert _status_for({"status": "CLOSED", "delivered_version": 4}, 4) == "closed"
