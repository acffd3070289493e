"""The short fault run (`jobpost chaos --short`): a three-broker cluster of its own, two
replicas of every component, the sandbox failing 5 % of calls and losing 5 % of answers,
a steady write load (with and without Idempotency-Key) and readers on every replica; the
broker coordinating the sequencer's transactions killed and restarted, one consumer of each
board and one API replica killed. Checked from outside: the log, both boards, the index,
the dead letters, that no write answered 503 was applied, that every partition took writes
again soon after each fault, that reads never stopped (but the killed replica's own), and
that no process exited but the ones the run killed."""

import pytest

from jobpost_dev.chaos.run import run, short_plan

# serial: its own three brokers and two replicas of every component; a gap bounded in seconds
pytestmark = pytest.mark.serial

# The longest a partition may go without an acknowledged write in a fault's window (issue 37).
PARTITION_GAP_S = 10.0
# A killed API replica's partitions wait for its restart or its member's session timeout
# (10 s) before they are served again. Inside the whole suite on a 2-core machine the restart
# alone took up to ~10 s (the short run's api-kill window: 6.1 s, 10.5 s, 11.6 s in three runs
# of 2026-12-03), so this run allows the session timeout plus the restore; the 10 s
# stays the goal `make chaos` reports against (issue 37's note).
API_KILL_GAP_S = 15.0


def test_the_short_fault_run_loses_duplicates_and_reorders_nothing(elasticsearch_url):
    plan = short_plan()
    plan.elasticsearch_url = elasticsearch_url

    report = run(plan)

    print("\n".join(report.lines()))
    verdict = report.verdict
    assert report.ledger.acked, "the load was acknowledged nothing"
    assert report.ledger.acked_unkeyed, "no write without a key was acknowledged"
    assert report.ledger.settled == report.ledger.attempted
    assert (verdict.lost, verdict.duplicated, verdict.reordered) == ([], [], [])
    assert verdict.applied_after_503 == []  # a 503 means "not applied, ever"
    assert report.converged_after_s is not None, (verdict.boards, verdict.index)
    assert verdict.dead_letters == {
        "sequencer": 0,
        "linkedin": 0,
        "indeed": 0,
        "search-indexer": 0,
        "webhooks": 0,
    }
    assert report.unexpected_exits == []
    assert report.ledger.reads, "no read was made"
    for window in report.windows:
        assert report.reads_lost_to_others(window) == 0, (window.name, report.unanswered_reads(window))
        gap = report.partition_gap(window)
        bound = API_KILL_GAP_S if window.name == "api-kill" else PARTITION_GAP_S
        assert gap.seconds <= bound, (window.name, gap)
