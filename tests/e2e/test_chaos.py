"""The short fault run (`jobpost chaos --short`): a three-broker cluster of its own, two
replicas of every component, the sandbox failing 5 % of calls and losing 5 % of answers,
a steady write load (with and without Idempotency-Key); a broker killed and restarted, one
consumer of each board and one API replica killed. Checked from outside: the log, both
boards, the index, the dead letters, and that no write answered 503 was applied."""

from jobpost_dev.chaos.run import run, short_plan


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
    assert verdict.dead_letters == {"sequencer": 0, "linkedin": 0, "indeed": 0, "search-indexer": 0}
