"""The fault run's verdict on the log: what counts as lost or applied twice."""

from jobpost.chaos.load import Ack, Ledger
from jobpost.chaos.verify import accepted, check_log
from schemas.model import Op, Posting, PostingUpdate


def update(version: int, op: Op, request_id: str, notes: str) -> PostingUpdate:
    return PostingUpdate("p1", version, op, f"p1:{version}", request_id, Posting("T", "D", notes), 9, 9)


def test_a_delete_repeating_the_last_text_is_not_a_second_application_of_that_write():
    # An unkeyed replace (marker m-1) at version 1, then a keyed delete: the DELETED
    # version carries version 1's text, notes included, so that the boards close it.
    log = {
        "p1": [
            accepted(update(0, Op.CREATED, "k-0", "")),
            accepted(update(1, Op.UPDATED, "corr-1", "m-1")),
            accepted(update(2, Op.DELETED, "k-2", "m-1")),
        ]
    }
    ledger = Ledger(
        acked={"k-0": Ack("p1", 0, "CREATED"), "k-2": Ack("p1", 2, "DELETED")},
        acked_unkeyed={"m-1": Ack("p1", 1, "UPDATED", "m-1")},
    )

    verdict = check_log(ledger, log)

    assert (verdict.lost, verdict.duplicated, verdict.reordered) == ([], [], [])


def test_an_unkeyed_write_applied_twice_is_a_duplicate_and_its_acknowledged_version_checked():
    log = {
        "p1": [
            accepted(update(0, Op.CREATED, "k-0", "")),
            accepted(update(1, Op.UPDATED, "corr-1", "m-1")),
            accepted(update(2, Op.UPDATED, "corr-2", "m-1")),  # the same attempt, applied again
        ]
    }
    ledger = Ledger(
        acked={"k-0": Ack("p1", 0, "CREATED")}, acked_unkeyed={"m-1": Ack("p1", 1, "UPDATED", "m-1")}
    )

    verdict = check_log(ledger, log)

    assert verdict.duplicated == ["m-1"]
    assert verdict.lost == ["m-1"]  # acknowledged at 1, but the log's last application of it is 2
