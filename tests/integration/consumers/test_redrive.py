"""Redrive inside the lane (issue 22): a request the board's consumer handles in the
posting's lane, in order with its versions, never below what it delivered, whoever asks
(`jobpost dlq redrive`, the API) and whatever their view of the deliveries says."""

import dataclasses
import itertools
import os
import subprocess
import sys

import httpx

from runtime.dead_letters import read_dead_letters
from runtime.kafka_clients import KafkaClients
from runtime.outbox import deliver_all
from runtime.redrive import requests_for
from schemas import codec
from schemas.audit import AuditAction
from schemas.model import Destination
from schemas.topics import Component
from tests import postings
from tests.integration.consumers.conftest import TOKEN, dead_letters, delivery_events, state_history
from tests.processes import ApiProcess, audit_events, wait_until


def jobpost(env: dict[str, str], *args: str) -> str:
    command = [sys.executable, "-m", "jobpost.cli", *args]
    result = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def never_lower(history: list) -> bool:
    delivered = [s.delivered_version for s in history if s.delivered_version is not None]
    return all(a <= b for a, b in itertools.pairwise(delivered))


def test_a_redrive_during_newer_deliveries_never_goes_backwards(
    sandbox, start_consumer, consumer_env, versions, kafka, topics
):
    start_consumer("linkedin")
    posting = "redrive-busy"
    versions.write([posting])
    wait_until(lambda: sandbox.applied("linkedin", posting) == [0], 30, "version 0")
    sandbox.faults("linkedin", "reject", posting_ids=[posting])
    versions.write([posting])
    wait_until(lambda: dead_letters(kafka, topics.dlq(Component("linkedin"))), 30, "version 1 dead-lettered")
    sandbox.faults("linkedin", "none")
    sandbox.limits("linkedin", task_delay_s=4)  # v2, then v3, each in a task that takes 4 s
    versions.write([posting])
    versions.write([posting])

    def delivering_v3() -> bool:
        last = state_history(kafka, "linkedin")[posting][-1]
        return last.status == "SUBMITTED" and last.pending_version == 3

    wait_until(delivering_v3, 30, "version 3 in its task")
    report = jobpost(consumer_env("linkedin"), "dlq", "redrive", "linkedin", "--wait", "30")

    assert f"{posting} version 1: skipped" in report, report
    wait_until(lambda: sandbox.applied("linkedin", posting) == [0, 2, 3], 30, "versions 2 and 3")
    log = sandbox.posting("linkedin", posting)["log"]
    # The board's numbers of the contents it took (v1's, refused, is 1): they only increase.
    submitted = [s["version"] for s in log if s["state"] != "REFUSED"]
    assert submitted == sorted(submitted) == [0, 2, 3], log
    assert never_lower(state_history(kafka, "linkedin")[posting])
    skipped = [e for e in delivery_events(kafka) if e.request_id and e.posting_id == posting]
    assert [(e.version, e.outcome) for e in skipped] == [(1, "SKIPPED")]


def test_a_redrive_right_after_an_api_restart_sends_nothing_older_than_delivered(
    sandbox, start_consumer, kafka, topics, elasticsearch_url
):
    start_consumer("linkedin")
    api = ApiProcess(kafka, TOKEN, elasticsearch_url)
    api.wait_ready()
    http = httpx.Client(base_url=api.url, headers=api.headers, timeout=30)
    posting = http.post("/postings", json=postings.body(3, title="Redrive after a restart")).json()["id"]
    wait_until(lambda: sandbox.applied("linkedin", posting) == [0], 30, "version 0")
    sandbox.faults("linkedin", "reject", posting_ids=[posting])
    http.put(f"/postings/{posting}", json=postings.body(3, title="v1"))
    wait_until(lambda: dead_letters(kafka, topics.dlq(Component("linkedin"))), 30, "version 1 dead-lettered")
    sandbox.faults("linkedin", "none")
    http.put(f"/postings/{posting}", json=postings.body(3, title="v2"))
    wait_until(lambda: sandbox.applied("linkedin", posting) == [0, 2], 30, "version 2")
    api.stop()

    restarted = ApiProcess(kafka, TOKEN, elasticsearch_url)
    try:
        http = httpx.Client(base_url=restarted.url, headers=restarted.headers, timeout=30)

        def answers() -> bool:
            try:
                return http.get("/healthz").status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(answers, 60, "the restarted API")
        answer = http.post("/ops/dead-letters/linkedin/redrive", json={})  # its views may be behind
        assert answer.status_code == 202, answer.text
        requested = {r["request_id"] for r in answer.json()["requests"]}
        from_the_api = len(requested)
        # A view behind the deliveries offers the resolved letter: what its request comes to,
        # made certain by writing one as such a view would.
        stale = requests_for(read_dead_letters(kafka, topics.dlq(Component("linkedin"))), "a stale view", 3)
        records = [r.record(topics, Destination.LINKEDIN) for r in stale]
        assert deliver_all(KafkaClients(kafka).producer(), records, lambda: False)
        requested |= {r.request.request_id for r in stale}

        def answered() -> set[str]:
            return {e.outcome for e in delivery_events(kafka) if e.request_id in requested}

        wait_until(
            lambda: (
                len({e.request_id for e in delivery_events(kafka) if e.request_id in requested})
                == len(requested)
            ),
            30,
            "every redrive's outcome",
        )
        assert answered() == {"SKIPPED"}
        log = sandbox.posting("linkedin", posting)["log"]
        assert [s["version"] for s in log if s["state"] != "REFUSED"] == [0, 2], log  # v1 refused once
        assert sandbox.applied("linkedin", posting) == [0, 2]
        print(
            f"{from_the_api} request(s) from the restarted API, {len(stale)} from a stale view: all skipped"
        )
    finally:
        restarted.stop()


def test_a_redrive_request_unlike_the_dead_letter_it_names_is_refused_and_audited(
    sandbox, start_consumer, versions, kafka, topics
):
    """Whoever can write the redrive topic cannot hand the consumer a posting of its own:
    a request carrying another text than its dead letter holds, or naming another version
    than it holds, is never attempted. A genuine request carries no text at all."""
    start_consumer("linkedin")
    posting = "redrive-forged"
    versions.write([posting])
    wait_until(lambda: sandbox.applied("linkedin", posting) == [0], 30, "version 0")
    sandbox.faults("linkedin", "reject", posting_ids=[posting])
    versions.write([posting])
    letters_topic = topics.dlq(Component("linkedin"))
    wait_until(lambda: dead_letters(kafka, letters_topic), 30, "version 1 dead-lettered")
    sandbox.faults("linkedin", "none")
    calls_before = sandbox.posting("linkedin", posting)["requests"]

    held = [d for d in read_dead_letters(kafka, letters_topic) if d.update and d.update.posting_id == posting]
    (genuine,) = requests_for(held, "ops", 3)
    assert genuine.request.update == b""  # a reference to its letter, not the text (erasure)
    letter = held[0].update
    assert letter is not None
    forged_posting = dataclasses.replace(letter.posting, title="Wire transfer clerk, send your bank details")
    forged_update = dataclasses.replace(letter, posting=forged_posting)
    forged = dataclasses.replace(
        genuine,
        request=dataclasses.replace(
            genuine.request, request_id="forged-1", update=codec.posting_updates().encode(forged_update)
        ),
    )
    elsewhere = dataclasses.replace(
        genuine, request=dataclasses.replace(genuine.request, request_id="forged-2", letter_offset=10_000)
    )
    other_version = dataclasses.replace(
        genuine, request=dataclasses.replace(genuine.request, request_id="forged-3", version=0)
    )
    records = [r.record(topics, Destination.LINKEDIN) for r in (forged, elsewhere, other_version)]
    assert deliver_all(KafkaClients(kafka).producer(), records, lambda: False)

    def outcomes() -> dict[str, str]:
        return {
            e.request_id: f"{e.outcome}: {e.error}"
            for e in delivery_events(kafka)
            if e.request_id in ("forged-1", "forged-2", "forged-3")
        }

    wait_until(lambda: len(outcomes()) == 3, 30, "every request answered")
    assert outcomes() == {
        "forged-1": f"SKIPPED: refused: the request carries a version other than the dead letter at "
        f"{genuine.request.letter_partition}@{genuine.request.letter_offset} holds",
        "forged-2": f"SKIPPED: refused: no dead letter at {genuine.request.letter_partition}@10000",
        "forged-3": f"SKIPPED: refused: the dead letter at {genuine.request.letter_partition}@"
        f"{genuine.request.letter_offset} holds version 1, not 0",
    }
    assert sandbox.applied("linkedin", posting) == [0]
    assert sandbox.posting("linkedin", posting)["requests"] == calls_before  # none was attempted
    refused = [e for e in audit_events(kafka) if e.action == AuditAction.REDRIVE_REFUSED]
    assert sorted((e.posting_id, e.version, e.detail.split("(request ")[-1]) for e in refused) == [
        (posting, 0, "forged-3)"),
        (posting, 1, "forged-1)"),
        (posting, 1, "forged-2)"),
    ]

    # the genuine request, after both: taken, and version 1 delivered as it was accepted
    taken = [genuine.record(topics, Destination.LINKEDIN)]
    assert deliver_all(KafkaClients(kafka).producer(), taken, lambda: False)
    wait_until(lambda: sandbox.applied("linkedin", posting) == [0, 1], 30, "version 1 redriven")
