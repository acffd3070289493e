"""The board consumers against a sandbox as strict as the real boards (issue 21): tokens that
expire, a rate budget, one element of a batch refused, a board down longer than the retry
budget, conflation. Versions are written straight to jobpost.postings (as the sequencer
would); the consumers are real `jobpost consumer` processes; the boards are the sandbox."""

import time

from schemas.topics import Component
from tests.integration.consumers.conftest import dead_letters, delivery_events, metric, state_history
from tests.processes import free_port, wait_until

BOARDS = ("linkedin", "indeed")


def every_version_applied(sandbox, board: str, wanted: dict[str, list[int]], timeout: float) -> None:
    for posting_id, expected in wanted.items():
        try:
            wait_until(
                lambda: sandbox.applied(board, posting_id) == expected, timeout, f"{board}: {posting_id}"
            )
        except AssertionError as exc:
            seen = sandbox.posting(board, posting_id)
            raise AssertionError(
                f"{exc}: {expected} wanted; the board has {seen}; {sandbox.stats(board)}"
            ) from None


def no_letters(kafka, topics) -> None:
    for board in BOARDS:
        assert dead_letters(kafka, topics.dlq(Component(board))) == [], board


def test_tokens_expiring_every_5_s_cost_no_posting_anything(sandbox, start_consumer, versions, kafka, topics):
    for board in BOARDS:
        sandbox.limits(board, token_ttl_s=5)
    for board in BOARDS:
        start_consumer(board)
    postings = [f"tok{n}" for n in range(20)]
    started = time.monotonic()
    for second in range(0, 60, 2):  # steady writes: a version of each posting every 2 s
        wait_until(lambda: time.monotonic() - started >= second, 5, "the next write")
        versions.write(postings)
    elapsed = time.monotonic() - started
    for board in BOARDS:
        every_version_applied(sandbox, board, versions.everything(), 60)
    no_letters(kafka, topics)
    for board in BOARDS:
        stats = sandbox.stats(board)
        expiries = int(elapsed / 5) + 1
        print(f"{board}: {stats}")  # the figures of the check
        assert stats["expired_token_calls"] <= expiries, stats
        assert stats["tokens_issued"] >= expiries - 1, stats  # the token was renewed, not kept


def test_a_budget_of_600_records_a_minute_takes_a_burst_of_1000_versions(
    sandbox, start_consumer, versions, kafka, topics
):
    for board in BOARDS:
        sandbox.limits(board, records_per_minute=600)
    # The budget told, as an operator tells it from the board's terms. (A budget the consumer
    # finds from the 429s costs up to one 429 per call in flight at the first one: see
    # `python -m bench boards`.)
    ports = {board: free_port() for board in BOARDS}
    for board in BOARDS:
        start_consumer(
            board, JOBPOST_CONSUMER_RECORDS_PER_MINUTE="600", JOBPOST_CONSUMER_METRICS_PORT=str(ports[board])
        )
    postings = [f"burst{n}" for n in range(250)]
    for _ in range(4):
        versions.write(postings)
    for board in BOARDS:
        every_version_applied(sandbox, board, versions.everything(), 240)
    no_letters(kafka, topics)
    for board in BOARDS:
        stats = sandbox.stats(board)
        labels = f'destination="{board}"'
        sent = metric(ports[board], "jobpost_delivery_batch_records_sum", labels) or 0
        calls = metric(ports[board], "jobpost_delivery_batch_records_count", labels) or 1
        print(f"{board}: {stats}, {sent / calls:.1f} records per call")  # the figures of the check
        assert stats["max_records_in_60s"] <= 600
        assert stats["throttled"] < 0.05 * stats["calls"], stats
        # Batches as large as the board takes: LinkedIn 100, Indeed 10 (its default max_batch).
        assert sent / calls >= (10 if board == "linkedin" else 9), stats


def test_one_element_of_a_batch_refused_only_that_version_is_dead_lettered(
    sandbox, start_consumer, versions, kafka, topics
):
    postings = [f"batch{n}" for n in range(10)]
    sandbox.faults("linkedin", "reject", posting_ids=[postings[3]])
    versions.write(postings)
    # After the writes, and a batch that waits long enough for every partition's restore: one call.
    start_consumer("linkedin", JOBPOST_CONSUMER_BATCH_WAIT_MS="3000")
    every_version_applied(sandbox, "linkedin", {p: [0] for p in postings if p != postings[3]}, 60)
    (letter,) = wait_until(
        lambda: dead_letters(kafka, topics.dlq(Component("linkedin"))), 30, "the dead letter"
    )
    assert letter["key"] == postings[3].encode()
    assert "400" in letter["headers"]["jobpost.error"]
    assert sandbox.stats("linkedin")["max_records_per_call"] == 10  # all ten in one call


def test_a_board_down_longer_than_the_retry_budget_loses_nothing_and_charges_nobody(
    sandbox, start_consumer, versions, kafka, topics
):
    port = free_port()
    start_consumer(
        "linkedin",
        JOBPOST_CONSUMER_RETRY__MAX_ELAPSED_S="20",
        JOBPOST_CONSUMER_METRICS_PORT=str(port),
    )
    postings = [f"down{n}" for n in range(30)]
    versions.write(postings)
    every_version_applied(sandbox, "linkedin", versions.everything(), 60)
    sandbox.faults("linkedin", "outage")
    outage_started = time.monotonic()
    for _ in range(3):
        versions.write(postings)
    circuit = 'destination="linkedin"'
    wait_until(
        lambda: metric(port, "jobpost_destination_circuit_state", circuit) in (1, 2), 30, "the circuit"
    )
    wait_until(
        lambda: (
            all(s[-1].status == "PAUSED" for s in state_history(kafka, "linkedin").values())
            and len(state_history(kafka, "linkedin")) == 30
        ),
        30,
        "every lane paused",
    )
    attempts_when_open = {p: s[-1].attempts for p, s in state_history(kafka, "linkedin").items()}
    wait_until(lambda: time.monotonic() - outage_started >= 60, 70, "a 60 s outage")
    attempts_at_the_end = {p: s[-1].attempts for p, s in state_history(kafka, "linkedin").items()}
    sandbox.faults("linkedin", "none")

    every_version_applied(sandbox, "linkedin", versions.everything(), 60)
    no_letters(kafka, topics)
    assert attempts_at_the_end == attempts_when_open  # no attempt charged while the circuit was open
    assert metric(
        port, "jobpost_destination_circuit_opened_total", 'destination="linkedin",reason="board_down"'
    )
    wait_until(lambda: metric(port, "jobpost_destination_circuit_state", circuit) == 0, 30, "closed again")


def test_conflation_sends_each_postings_newest_version_after_an_outage(
    sandbox, start_consumer, versions, kafka, topics
):
    start_consumer("indeed", JOBPOST_CONSUMER_DELIVER_EVERY_VERSION="false")  # the default: conflated
    postings = [f"conf{n}" for n in range(20)]
    versions.write(postings)
    every_version_applied(sandbox, "indeed", versions.everything(), 60)
    calls_before = sandbox.stats("indeed")["records"]
    # The claim is about what queues during an outage, not its length: 20 s is as good as 60.
    sandbox.faults("indeed", "outage")
    for _ in range(5):
        versions.write(postings)
    wait_until(
        lambda: all(s[-1].status == "PAUSED" for s in state_history(kafka, "indeed").values()), 30, "paused"
    )
    outage_started = time.monotonic()
    wait_until(lambda: time.monotonic() - outage_started >= 20, 30, "the outage")
    sandbox.faults("indeed", "none")

    # Each posting ends at v5. The board numbers the contents it saw: v0, then v5 — and at
    # most one older version before it, the one taken up on its own while the board was down
    # (a version already taken up is not taken back; those that queued behind it are).
    wait_until(
        lambda: all(s[-1].delivered_version == 5 for s in state_history(kafka, "indeed").values()),
        60,
        "every posting delivered at v5",
    )
    applied = {p: sandbox.applied("indeed", p) for p in postings}
    assert all(seen in ([0, 1], [0, 1, 2]) for seen in applied.values()), applied
    no_letters(kafka, topics)
    skipped = [e for e in delivery_events(kafka) if e.destination == "indeed" and e.outcome == "SKIPPED"]
    for posting_id, seen in applied.items():
        # v1-v4: each skipped once, but for the one the board got when it holds three contents.
        versions_skipped = sorted(e.version for e in skipped if e.posting_id == posting_id)
        assert set(versions_skipped) <= {1, 2, 3, 4} and len(versions_skipped) == len(set(versions_skipped))
        assert len(versions_skipped) == 4 - (len(seen) - 2), (posting_id, seen, versions_skipped)
    # Each one superseded by a newer version, queued behind it.
    # ("superseded by v5 while the board was confirming v1")
    assert all(
        e.error.startswith("superseded by v") and int(e.error[15:].split()[0]) > e.version for e in skipped
    )
    sent = sandbox.stats("indeed")["records"] - calls_before
    written = 5 * len(postings)
    print(f"conflation: {sent} versions sent for {written} written; {len(skipped)} board records saved")
    assert sent == sum(len(seen) - 1 for seen in applied.values())
