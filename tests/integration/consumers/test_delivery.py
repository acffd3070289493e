"""Delivery to the boards through the real runner, real Kafka and the sandbox."""

import asyncio
import os
import subprocess
import sys
import time

import httpx

from runtime.kafka_clients import KafkaClients
from runtime.replay import replay
from schemas import codec
from schemas.topics import Component
from tests import postings
from tests.integration.consumers.conftest import dead_letters
from tests.processes import ApiProcess, wait_until

BODY = postings.body(5, title="Delivery Driver", notes="")


def create(api: ApiProcess, title: str = "Delivery Driver") -> str:
    response = httpx.post(
        f"{api.url}/postings", json={**BODY, "title": title}, headers=api.headers, timeout=15
    )
    assert response.status_code == 201, response.text
    return response.json()["id"]


def replace(api: ApiProcess, posting_id: str, title: str) -> int:
    response = httpx.put(
        f"{api.url}/postings/{posting_id}", json={**BODY, "title": title}, headers=api.headers, timeout=15
    )
    assert response.status_code == 200, response.text
    return response.json()["version"]


def delete(api: ApiProcess, posting_id: str) -> None:
    response = httpx.delete(f"{api.url}/postings/{posting_id}", headers=api.headers, timeout=15)
    assert response.status_code == 200, response.text


def applied(sandbox, board: str, posting_id: str) -> list[int]:
    seen = sandbox.posting(board, posting_id)
    return seen["versions"] if seen else []


def deliveries(api: ApiProcess, posting_id: str) -> dict:
    response = httpx.get(f"{api.url}/postings/{posting_id}/deliveries", headers=api.headers, timeout=15)
    assert response.status_code == 200, response.text
    return response.json()


def test_every_version_reaches_both_boards_once_in_order(api, sandbox, start_consumer):
    start_consumer("linkedin")
    start_consumer("indeed")

    async def write_all() -> list[str]:
        async with httpx.AsyncClient(headers=api.headers, timeout=30) as http:
            sem = asyncio.Semaphore(16)

            async def one(n: int) -> str:
                async with sem:
                    created = await http.post(f"{api.url}/postings", json={**BODY, "title": f"Driver {n}"})
                    posting_id = created.json()["id"]
                    for v in range(1, 6):
                        r = await http.put(
                            f"{api.url}/postings/{posting_id}", json={**BODY, "title": f"Driver {n}.{v}"}
                        )
                        assert r.status_code == 200
                    return str(posting_id)

            return await asyncio.gather(*(one(n) for n in range(200)))

    postings = asyncio.run(write_all())

    for board in ("linkedin", "indeed"):
        for posting_id in postings:
            wait_until(
                lambda: len(applied(sandbox, board, posting_id)) >= 6, 120, f"{board} to apply {posting_id}"
            )
            seen = sandbox.posting(board, posting_id)
            assert seen["versions"] == [0, 1, 2, 3, 4, 5], (board, posting_id, seen)
    progress = deliveries(api, postings[0])
    assert progress["version"] == 5
    for board in ("linkedin", "indeed"):
        wait_until(
            lambda: deliveries(api, postings[0])["destinations"][board]["status"] == "delivered", 30, board
        )
        assert deliveries(api, postings[0])["destinations"][board]["delivered_version"] == 5
    assert progress["destinations"]["search"]["status"] == "pending"  # no indexer in this test


def test_a_failing_board_never_delays_the_other(api, sandbox, start_consumer):
    start_consumer("linkedin")
    start_consumer("indeed")
    sandbox.faults("linkedin", "error")
    outage_started = time.monotonic()
    postings = [create(api, f"Courier {n}") for n in range(20)]
    for posting_id in postings[:10]:
        replace(api, posting_id, "Courier, updated")

    for posting_id in postings:
        wanted = [0, 1] if posting_id in postings[:10] else [0]
        wait_until(lambda: applied(sandbox, "indeed", posting_id) == wanted, 30, "Indeed, during the outage")
    assert all(applied(sandbox, "linkedin", p) == [] for p in postings)  # Indeed finished during the outage

    def paused() -> dict | None:  # every posting failing at once is the board's failure: its circuit opens
        linkedin = deliveries(api, postings[0])["destinations"]["linkedin"]
        return linkedin if linkedin["status"] == "paused" else None

    held = wait_until(paused, 30, "LinkedIn's lanes paused")
    assert "503" in held["paused_reason"]

    still_failing = lambda: all(applied(sandbox, "linkedin", p) == [] for p in postings)  # noqa: E731
    wait_until(lambda: time.monotonic() - outage_started >= 30 and still_failing(), 40, "a 30 s outage")
    sandbox.faults("linkedin", "none")
    for posting_id in postings:
        wanted = [0, 1] if posting_id in postings[:10] else [0]
        wait_until(lambda: applied(sandbox, "linkedin", posting_id) == wanted, 60, "LinkedIn to catch up")


def test_a_rejected_version_is_dead_lettered_and_the_rest_flows(api, sandbox, start_consumer, kafka, topics):
    start_consumer("linkedin")
    posting_id = create(api, "Rejected Role")
    other = create(api, "Fine Role")
    wait_until(lambda: delivered_version(api, posting_id, "linkedin") == 0, 30, "version 0")

    sandbox.faults("linkedin", "reject", posting_ids=[posting_id])
    replace(api, posting_id, "Rejected Role, v1")
    replace(api, other, "Fine Role, v1")

    letters = wait_until(lambda: dead_letters(kafka, topics.dlq(Component("linkedin"))), 30, "a dead letter")
    (letter,) = letters
    assert codec.posting_updates().decode(letter["value"]).version == 1
    assert letter["key"] == posting_id.encode()
    assert "400" in letter["headers"]["jobpost.error"]
    assert letter["headers"]["jobpost.attempts"] == "1"
    assert letter["headers"]["jobpost.source_topic"] == topics.postings
    assert {"jobpost.source_partition", "jobpost.source_offset", "jobpost.first_attempt_ms"} <= set(
        letter["headers"]
    )
    wait_until(lambda: applied(sandbox, "linkedin", other) == [0, 1], 30, "the other posting")
    wait_until(
        lambda: deliveries(api, posting_id)["destinations"]["linkedin"]["status"] == "failed", 30, "failed"
    )

    sandbox.faults("linkedin", "none")
    replace(api, posting_id, "Rejected Role, v2")
    wait_until(lambda: applied(sandbox, "linkedin", posting_id) == [0, 2], 30, "the later version")


def test_lost_responses_are_retried_and_applied_once(api, sandbox, start_consumer):
    start_consumer("indeed")
    # The board applies what it is sent and its answer never arrives, until some version is
    # applied whose answer was lost for certain; from then on half the answers are lost.
    # (Half from the start lost none in one CI run: the consumer's batches made few calls.)
    sandbox.faults("indeed", "lose_response")
    postings = [create(api, f"Lost {n}") for n in range(10)]
    wait_until(lambda: any(applied(sandbox, "indeed", p) for p in postings), 60, "a call applied, unanswered")
    sandbox.faults("indeed", "lose_response", probability=0.5)
    for posting_id in postings:
        replace(api, posting_id, "Lost, v1")

    for posting_id in postings:
        wait_until(lambda: applied(sandbox, "indeed", posting_id) == [0, 1], 60, "every version once")
    seen = [sandbox.posting("indeed", p) for p in postings]
    assert sum(s["duplicates"] for s in seen) > 0  # retried after a lost answer, answered from the record
    assert all(s["versions"] == [0, 1] for s in seen)


def test_a_stuck_posting_does_not_delay_its_partition_neighbours(api, sandbox, start_consumer, kafka):
    from schemas.partitioning import partition_for

    start_consumer("linkedin")
    stuck = create(api, "Stuck")
    sandbox.faults("linkedin", "error", posting_ids=[stuck])
    wait_until(lambda: (sandbox.posting("linkedin", stuck) or {}).get("requests", 0) >= 2, 30, "retries")
    neighbours = []
    while len(neighbours) < 3:  # postings on the stuck one's partition, written after it
        candidate = create(api, "Neighbour")
        if partition_for(candidate, kafka.partitions) == partition_for(stuck, kafka.partitions):
            neighbours.append(candidate)

    for posting_id in neighbours:
        wait_until(lambda: applied(sandbox, "linkedin", posting_id) == [0], 30, "the neighbour")
    assert applied(sandbox, "linkedin", stuck) == []
    assert deliveries(api, stuck)["destinations"]["linkedin"]["status"] == "retrying"


def test_a_restarted_consumer_resumes_the_retry_budget(api, sandbox, start_consumer):
    consumer = start_consumer("linkedin")
    posting_id = create(api, "Budget")
    sandbox.faults("linkedin", "error", posting_ids=[posting_id])
    before = wait_until(
        lambda: (d := deliveries(api, posting_id)["destinations"]["linkedin"])["attempts"] >= 3 and d,
        60,
        "3 attempts",
    )
    first_attempt = first_attempt_at(api, posting_id)

    consumer.kill()
    start_consumer("linkedin")

    after = wait_until(
        lambda: (
            (d := deliveries(api, posting_id)["destinations"]["linkedin"])["attempts"]
            > before["attempts"] + 1
            and d
        ),
        90,
        "the restarted consumer's attempts",
    )
    assert after["status"] == "retrying"
    assert first_attempt_at(api, posting_id) == first_attempt
    sandbox.faults("linkedin", "none")
    wait_until(lambda: applied(sandbox, "linkedin", posting_id) == [0], 30, "delivery after recovery")


def test_delete_stops_the_retries_of_an_older_version(api, sandbox, start_consumer):
    start_consumer("indeed")
    posting_id = create(api, "Short-lived")
    wait_until(lambda: delivered_version(api, posting_id, "indeed") == 0, 30, "version 0")
    sandbox.faults("indeed", "rate_limit", retry_after_s=20, posting_ids=[posting_id])
    replace(api, posting_id, "Short-lived, v1")
    wait_until(lambda: sandbox.posting("indeed", posting_id)["requests"] >= 2, 30, "v1 to be refused")

    sandbox.faults("indeed", "none")
    delete(api, posting_id)

    wait_until(
        lambda: sandbox.posting("indeed", posting_id)["status"] == "closed", 30, "the board to close it"
    )
    # v1 never reached the board (the delete superseded it): Indeed holds v0's job, expired by
    # the id its upsert gave.
    log = sandbox.posting("indeed", posting_id)["log"]
    assert [(e["operation"], e["state"]) for e in log] == [("UPSERT", "APPLIED"), ("EXPIRE", "APPLIED")], log
    wait_until(
        lambda: deliveries(api, posting_id)["destinations"]["indeed"]["status"] == "closed", 30, "closed"
    )


def delivered_version(api: ApiProcess, posting_id: str, board: str) -> int | None:
    """What the consumer recorded as delivered (not merely what reached the board)."""
    return deliveries(api, posting_id)["destinations"][board]["delivered_version"]


def first_attempt_at(api: ApiProcess, posting_id: str):
    """The first-attempt time, as recorded in jobpost.deliveries (read through the API's view)."""
    response = httpx.get(f"{api.url}/postings/{posting_id}/deliveries", headers=api.headers)
    return response.json()["destinations"]["linkedin"].get("first_attempt_at")


def test_dead_letters_are_listed_and_redriven_unless_superseded(
    api, sandbox, start_consumer, consumer_env, kafka
):
    start_consumer("linkedin")
    alone, overtaken = create(api, "Redrive Alone"), create(api, "Redrive Overtaken")
    for posting_id in (alone, overtaken):
        wait_until(lambda: delivered_version(api, posting_id, "linkedin") == 0, 30, "version 0")
    sandbox.faults("linkedin", "reject", posting_ids=[alone, overtaken])
    replace(api, alone, "Redrive Alone, v1")
    replace(api, overtaken, "Redrive Overtaken, v1")
    wait_until(
        lambda: len(dead_letters(kafka, f"{kafka.topic_prefix}.linkedin.dlq")) == 2, 30, "two dead letters"
    )
    sandbox.faults("linkedin", "none")
    replace(api, overtaken, "Redrive Overtaken, v2")
    wait_until(lambda: applied(sandbox, "linkedin", overtaken) == [0, 2], 30, "v2 of the overtaken posting")

    def jobpost(*args: str) -> str:
        env = {**os.environ, **consumer_env("linkedin")}
        command = [sys.executable, "-m", "jobpost.cli", *args]
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        return result.stdout

    listing = jobpost("dlq", "list", "linkedin")
    assert f"{alone} version 1 (UPDATED): 1 attempts" in listing
    assert f"{overtaken} version 1" in listing

    report = jobpost("dlq", "redrive", "linkedin")

    assert f"{alone} version 1: delivered" in report
    assert f"{overtaken} version 1: skipped" in report
    assert applied(sandbox, "linkedin", alone) == [0, 1]
    assert applied(sandbox, "linkedin", overtaken) == [0, 2]
    redriven = lambda: deliveries(api, alone)["destinations"]["linkedin"]  # noqa: E731
    wait_until(lambda: redriven()["delivered_version"] == 1, 30, "the redrive to be recorded")
    assert redriven()["status"] == "delivered"


def test_answers_nobody_can_read_are_retried_and_every_version_arrives(api, sandbox, start_consumer, kafka):
    from schemas.partitioning import partition_for

    start_consumer("linkedin")
    sandbox.faults("linkedin", "malformed")
    outage_started = time.monotonic()
    postings = [create(api, f"Garbled {n}") for n in range(8)]
    for posting_id in postings[:4]:
        replace(api, posting_id, "Garbled, v1")

    def garbled_for_20_s() -> bool:  # answers nobody can read, for every posting: the board's circuit opens
        linkedin = deliveries(api, postings[0])["destinations"]["linkedin"]
        return (
            time.monotonic() - outage_started >= 20
            and linkedin["status"] == "paused"
            and "body that" in (linkedin["paused_reason"] or "")
        )

    wait_until(garbled_for_20_s, 40, "20 s of answers nobody can read")
    assert all(applied(sandbox, "linkedin", p) == [] for p in postings)
    sandbox.faults("linkedin", "none")

    for n, posting_id in enumerate(postings):
        wanted = [0, 1] if n < 4 else [0]
        wait_until(lambda: applied(sandbox, "linkedin", posting_id) == wanted, 60, "every version, in order")
    later = next(
        p
        for p in (create(api, "Later") for _ in range(30))
        if partition_for(p, kafka.partitions) == partition_for(postings[0], kafka.partitions)
    )
    wait_until(
        lambda: applied(sandbox, "linkedin", later) == [0], 30, "a later posting on the same partition"
    )


def test_a_dead_letter_kafka_does_not_acknowledge_holds_the_offset(
    api, sandbox, start_consumer, kafka, topics
):
    from confluent_kafka import TopicPartition

    from runtime.topics import ensure_topics

    start_consumer("linkedin")
    posting_id = create(api, "Undeliverable")
    wait_until(lambda: delivered_version(api, posting_id, "linkedin") == 0, 30, "version 0")
    dlq = topics.dlq(Component("linkedin"))
    admin = KafkaClients(kafka).admin()
    admin.delete_topics([dlq])[dlq].result(30)
    wait_until(lambda: dlq not in admin.list_topics(timeout=10).topics, 30, "the dead-letter topic to go")

    sandbox.faults("linkedin", "reject", posting_ids=[posting_id])
    replace(api, posting_id, "Undeliverable, v1")
    partition, offset = next(
        (m.partition(), m.offset())
        for m in postings_messages(kafka, topics.postings)
        if m.key() == posting_id.encode()
        and m.value() is not None
        and codec.posting_updates().decode(m.value()).version == 1
    )
    group = KafkaClients(kafka).probe(f"{kafka.topic_prefix}-linkedin")

    def committed() -> int:
        (position,) = group.committed([TopicPartition(topics.postings, partition)], timeout=10)
        return position.offset

    wait_until(
        lambda: (sandbox.posting("linkedin", posting_id) or {}).get("requests", 0) >= 2, 30, "the refusal"
    )
    # For several commit intervals (0.2 s each) the offset must stay at or before v1.
    held_since = time.monotonic()
    wait_until(lambda: committed() > offset or time.monotonic() - held_since > 8, 20, "8 s of commits")
    assert committed() <= offset

    ensure_topics(kafka)  # the dead-letter topic is back
    wait_until(lambda: dead_letters(kafka, dlq), 90, "the dead letter, once Kafka takes it")
    (letter,) = dead_letters(kafka, dlq)
    assert codec.posting_updates().decode(letter["value"]).version == 1
    wait_until(lambda: committed() > offset, 30, "the offset, committed after the letter")
    group.close()


def postings_messages(kafka, topic: str) -> list:
    found: list = []
    replay(kafka, topic, range(kafka.partitions), found.append)
    return found
