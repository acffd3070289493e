"""`jobpost dlq list|redrive <board>`: an operator's view of a board's dead letters, and
redrive as requests the board's consumer handles in each posting's lane (`runtime.redrive`):
this command holds no board credentials and never calls a board."""

from __future__ import annotations

import getpass

from runtime.dead_letters import newest_per_version, read_dead_letters
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.outbox import deliver_all
from runtime.redrive import describe, events_end, outcomes, requests_for
from schemas.enums import Destination
from schemas.topics import Component, Topics


def list_dead_letters(board: Destination) -> None:
    kafka = KafkaSettings()
    for letter in read_dead_letters(kafka, Topics(kafka.topic_prefix).dlq(Component(board.value))):
        update, error = letter.update, letter.error
        if update is None:
            print(f"undecodable letter at partition {letter.partition} offset {letter.offset}: {error}")
            continue
        print(
            f"{update.posting_id} version {update.version} ({update.op}): {letter.attempts} attempts, {error}"
        )


def redrive(board: Destination, wait_s: float) -> int:
    """A request for each posting version dead-lettered (the newest letter of each); the
    lane skips what it delivered since. Prints what each came to, as the lanes report it
    within `wait_s` (exit status 1 when some did not report in time)."""

    kafka = KafkaSettings()
    topics = Topics(kafka.topic_prefix)
    letters = newest_per_version(read_dead_letters(kafka, topics.dlq(Component(board.value))))
    requested = requests_for(
        reversed(letters), f"jobpost dlq redrive ({getpass.getuser()})", kafka.partitions
    )
    for letter in letters:
        if letter.update is None:
            where = f"partition {letter.partition} offset {letter.offset}"
            print(f"undecodable letter at {where}: nothing to redrive")
    if not requested:
        return 0
    start = events_end(kafka, topics, {r.partition for r in requested})
    producer = KafkaClients(kafka).producer()
    if not deliver_all(producer, [r.record(topics, board) for r in requested], lambda: False):
        raise RuntimeError("Kafka did not acknowledge the redrive requests")
    found = outcomes(kafka, topics, [r.request.request_id for r in requested], start, wait_s)
    for r in requested:
        print(
            f"{r.request.posting_id} version {r.request.version}: {describe(found.get(r.request.request_id))}"
        )
    return 0 if len(found) == len(requested) else 1
