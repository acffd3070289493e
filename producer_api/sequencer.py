"""The sequencer: the one writer of each posting's versions.

A consumer group over `jobpost.commands`. For each partition it owns it holds the state of
the postings in the same partition of `jobpost.postings`, restored on assignment. Each poll
becomes one Kafka transaction: the PostingUpdates, the replies and the command offsets
(`send_offsets_to_transaction` with the group metadata, so a zombie member is fenced).

Any failure of a session (an aborted transaction, a fenced producer, a lost broker) ends
it: consumer, producer and state are thrown away and a new session starts from the
committed offsets and the log, so in-memory state never outlives what Kafka committed.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from prometheus_client import Counter, Histogram

from producer_api.config import SequencerSettings
from producer_api.domain import PartitionState, Result
from schemas import codec
from schemas.codec import SerializationError
from schemas.kafka import poll_batch, record_lag
from schemas.replay import replay
from schemas.topics import Topics

log = logging.getLogger(__name__)

BATCH_SIZE = Histogram(
    "jobpost_sequencer_batch_commands",
    "Commands per sequencer transaction",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
)
COMMANDS = Counter("jobpost_sequencer_commands_total", "Commands sequenced, by outcome", ["outcome"])
TRANSACTION_SECONDS = Histogram(
    "jobpost_sequencer_transaction_seconds",
    "Time from the first command of a batch to its committed transaction",
    buckets=(0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2),
)
SESSIONS = Counter("jobpost_sequencer_sessions_total", "Sequencer sessions started (restarts after failures)")


def now_millis() -> int:
    return time.time_ns() // 1_000_000


class Sequencer:
    def __init__(self, settings: SequencerSettings) -> None:
        self.settings = settings
        self.topics = Topics(settings.kafka.topic_prefix)
        self._stop = threading.Event()
        self.assigned: set[int] = set()

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        """Run sessions until stop(); a failed session is replaced after a short backoff."""
        backoff = 0.5
        while not self._stop.is_set():
            SESSIONS.inc()
            try:
                _Session(self).run()
                backoff = 0.5
            except (KafkaException, SerializationError, TimeoutError) as exc:
                log.warning("sequencer session ended: %s; starting a new one in %.1f s", exc, backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)


class _Session:
    def __init__(self, sequencer: Sequencer) -> None:
        self.sequencer = sequencer
        self.settings = sequencer.settings
        self.topics = sequencer.topics
        self.states: dict[int, PartitionState] = {}
        kafka = self.settings.kafka
        self.consumer = Consumer(
            kafka.consumer_config(
                self.settings.group,
                **{
                    "partition.assignment.strategy": "cooperative-sticky",
                    "session.timeout.ms": self.settings.session_timeout_ms,
                    "heartbeat.interval.ms": max(1000, self.settings.session_timeout_ms // 5),
                },
            )
        )
        self.producer = Producer(
            kafka.producer_config(
                **{
                    "transactional.id": f"{self.settings.group}-{self.settings.instance_id}",
                    "transaction.timeout.ms": self.settings.transaction_timeout_ms,
                    "linger.ms": 0,
                    # A transaction begun right after a commit meets CONCURRENT_TRANSACTIONS
                    # until the broker has written the markers; retrying after the default
                    # 100 ms made every transaction take ~90 ms. Measured: 86 ms -> 8 ms.
                    "retry.backoff.ms": 5,
                }
            )
        )

    def run(self) -> None:
        try:
            self.producer.init_transactions(30)
            self.consumer.subscribe(
                [self.topics.commands],
                on_assign=self._on_assign,
                on_revoke=self._on_revoke,
                on_lost=self._on_revoke,
            )
            while not self.sequencer._stop.is_set():
                messages = poll_batch(self.consumer, self.settings.max_batch, 0.1)
                if messages:
                    self._process(messages)
        finally:
            self.sequencer.assigned = set()
            self.consumer.close()
            self.producer.flush(5)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Wait until no transaction of a previous owner is pending on these partitions
        # (read_committed makes this a stable-offset fetch), then rebuild their state:
        # only now does the log hold everything those committed offsets stand for.
        consumer.committed(partitions, timeout=60)
        numbers = [tp.partition for tp in partitions]
        fresh = {n: PartitionState() for n in numbers}

        def fold(message: Message) -> None:
            value = message.value()
            update = codec.posting_updates().decode(value) if value is not None else None
            fresh[message.partition()].apply(message.key().decode(), update)

        replay(self.settings.kafka, self.topics.postings, numbers, fold)
        self.states.update(fresh)
        self.sequencer.assigned |= set(numbers)
        log.info("sequencer owns partitions %s", sorted(self.sequencer.assigned))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.states.pop(tp.partition, None)
            self.sequencer.assigned.discard(tp.partition)

    def _process(self, messages: list[Message]) -> None:
        started = time.perf_counter()
        offsets: dict[int, int] = {}
        positions: list[TopicPartition] = []
        self.producer.begin_transaction()
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF or error.retriable():
                    continue
                raise KafkaException(error)
            offsets[message.partition()] = message.offset() + 1
            self._sequence(message)
        if offsets:
            positions = [TopicPartition(self.topics.commands, p, o) for p, o in offsets.items()]
            self.producer.send_offsets_to_transaction(positions, self.consumer.consumer_group_metadata(), 30)
        self.producer.commit_transaction(30)
        record_lag(self.consumer, self.settings.group, positions)
        BATCH_SIZE.observe(len(messages))
        TRANSACTION_SECONDS.observe(time.perf_counter() - started)

    def _sequence(self, message: Message) -> None:
        try:
            command = codec.commands().decode(message.value())
        except SerializationError as exc:
            # Not ours to interpret, and nobody can be answered: skip it, loudly.
            log.error("skipping undecodable command at %s/%d: %s", message.partition(), message.offset(), exc)
            COMMANDS.labels("undecodable").inc()
            return
        now = now_millis()
        if now - command["received_at"] > self.settings.command_ttl_s * 1000:
            context = {"posting_id": command["posting_id"]}
            log.warning("dropped an expired command %s", command["request_id"], extra=context)
            COMMANDS.labels("expired").inc()
            return
        decision = self.states[message.partition()].decide(command, now)
        for update in decision.updates:
            value = codec.posting_updates().encode(update) if update is not None else None
            self.producer.produce(
                self.topics.postings, key=command["posting_id"], value=value, partition=message.partition()
            )
        self.producer.produce(
            self.topics.replies,
            key=command["request_id"],
            value=codec.replies().encode(_reply(command, decision.result)),
        )
        COMMANDS.labels(decision.result.outcome.lower()).inc()


def _reply(command: dict[str, Any], result: Result) -> dict[str, Any]:
    return {
        "request_id": command["request_id"],
        "posting_id": command["posting_id"],
        "outcome": result.outcome,
        "version": result.version,
        "deleted": result.deleted,
        "posting": result.posting,
        "last_update_time_millis": result.last_update_time_millis,
    }
