"""The sequencer: the one writer of each posting's versions.

A consumer group over `jobpost.commands`. For each partition it owns it knows, per posting
of the same partition of `jobpost.postings`, what deciding a command needs (version,
deleted, where the newest version lies, recent idempotency keys; never the text): in a
local store that mirrors the compacted changelog `jobpost.sequencer-state`, brought up to
date on assignment (producer_api.sequencer_restore). Each poll becomes one Kafka
transaction: the PostingUpdates, the replies, the dead letters of commands it cannot read,
the changed postings' states for the changelog, and the command offsets
(`send_offsets_to_transaction` with the group metadata, so a zombie member is fenced). A
state names the offset of its posting's newest version as predicted when it is produced
(producer_api.placements: no wait for Kafka inside the transaction); a wrong prediction
is corrected in a transaction of its own right after the commit. The local store takes
the states, with the offsets Kafka acknowledged, once the transaction committed, so it
never holds what Kafka does not.

Any failure of a session (an aborted transaction, a fenced producer, a lost broker, a bug)
ends it: consumer, producer and in-memory state are thrown away and a new session starts
from the committed offsets and the changelog, so no state outlives what Kafka committed.
When no session has come up for `give_up_after_s`, `run()` raises, so the process exits
and its supervisor restarts it.
"""

from __future__ import annotations

import logging
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from prometheus_client import Counter, Histogram

from producer_api import write_stages
from producer_api.config import SequencerSettings
from producer_api.domain import PartitionState
from producer_api.placements import Placements, corrected_states
from producer_api.sequencer_restore import Restorer
from schemas import codec, records
from schemas.dead_letters import dead_letter
from schemas.kafka import coordinates, end_offset, is_record, poll_batch, produce_waiting, record_lag
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
# The group's short name: its dead-letter topic (jobpost.sequencer.dlq) and its counters' label.
GROUP = "sequencer"


class SequencerFailed(RuntimeError):
    """No session could be brought up for too long: the process should exit."""


def now_millis() -> int:
    return time.time_ns() // 1_000_000


class Sequencer:
    def __init__(self, settings: SequencerSettings) -> None:
        self.settings = settings
        self.topics = Topics(settings.kafka.topic_prefix)
        self._stop = threading.Event()
        self.session_up = False  # a session is consuming (its assigned partitions restored)
        self.assigned: set[int] = set()  # restored and served by this member
        self.restoring: set[int] = set()  # assigned, state still being read from the log

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        """Run sessions until stop(); a failed session is replaced after a short backoff."""
        backoff = 0.5
        last_up = time.monotonic()
        while not self._stop.is_set():
            SESSIONS.inc()
            session = _Session(self)
            try:
                session.run()
                backoff = 0.5
            except Exception as exc:  # any failure ends the session, never the member
                log.warning("sequencer session ended: %r; a new one in %.1f s", exc, backoff,
                            exc_info=not isinstance(exc, KafkaException | TimeoutError))  # fmt: skip
            finally:
                if session.came_up:
                    last_up = time.monotonic()
                self.session_up = False
                self.assigned, self.restoring = set(), set()
            if time.monotonic() - last_up > self.settings.give_up_after_s:
                raise SequencerFailed(
                    f"no sequencer session came up for {self.settings.give_up_after_s:.0f} s"
                )
            self._stop.wait(backoff)
            backoff = min(backoff * 2, 2.0)  # a broker's failover takes seconds: try again soon


class _Session:
    def __init__(self, sequencer: Sequencer) -> None:
        self.sequencer = sequencer
        self.settings = sequencer.settings
        self.topics = sequencer.topics
        self.states: dict[int, PartitionState] = {}
        self.placements = Placements()  # where this transaction's new versions land
        self._written: dict[int, int] = {}  # partition -> offset of its newest changelog record
        self.came_up = False
        kafka = self.settings.kafka
        self.consumer = Consumer(kafka.member_config(self.settings.group, self.settings.session_timeout_ms))
        self.producer = Producer(self.settings.producer_config())
        self.restorer = Restorer(self.settings, self.consumer, self.producer)
        self.stores = self.restorer.stores

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
                self.came_up = True
                self.sequencer.session_up = True
                if messages:
                    self._process(messages)
        finally:
            self.consumer.close()
            self._abort_open_transaction()
            self.restorer.close()

    def _abort_open_transaction(self) -> None:
        """A failed session may leave its transaction open, holding every read_committed
        reader of its partitions back until it times out: end it now if Kafka lets us."""
        try:
            self.producer.abort_transaction(5)
        except KafkaException as exc:  # none open, or the producer is fenced: nothing to end
            log.debug("no transaction to abort: %s", exc)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # First let every transaction a previous owner began on these partitions end
        # (committed or aborted), then fetch the committed offsets (read_committed makes
        # it a stable-offset fetch), then bring the state up to date: only then does the
        # log hold everything those offsets stand for. Without the first step a previous
        # owner's transaction still open during the restore, committed just after it, made
        # this member sequence its commands a second time (found by `make chaos`).
        numbers = [tp.partition for tp in partitions]
        self.sequencer.restoring |= set(numbers)
        self.restorer.await_settled(numbers)
        consumer.committed(partitions, timeout=60)
        for number in numbers:
            started = time.monotonic()
            self.states[number] = self.restorer.restore(number)
            self.placements.start(number, end_offset(consumer, self.topics.postings, number, timeout=30))
            self.sequencer.assigned.add(number)
            self.sequencer.restoring.discard(number)
            log.info("sequencer partition %d ready in %.1f s", number, time.monotonic() - started)
        log.info("sequencer owns partitions %s", sorted(self.sequencer.assigned))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.states.pop(tp.partition, None)
            self.placements.forget(tp.partition)
            self.stores.close(tp.partition)
            self.sequencer.assigned.discard(tp.partition)
            self.sequencer.restoring.discard(tp.partition)

    def _process(self, messages: list[Message]) -> None:
        """One transaction: the batch's PostingUpdates and replies, each changed posting's
        state for the changelog (with the offset its new version is predicted to get), the
        command offsets; commit. Then the same states to the local store, with the offsets
        Kafka acknowledged; a changelog record whose prediction was wrong is corrected in a
        transaction of its own."""
        started = time.perf_counter()
        offsets: dict[int, int] = {}
        positions: list[TopicPartition] = []
        sequenced = 0
        self.producer.begin_transaction()
        for message in messages:
            if not is_record(message):
                continue
            _, partition, offset = coordinates(message)
            offsets[partition] = offset + 1
            sequenced += self._sequence(message)
        changes = self._changes()
        for number, puts in changes.items():
            for key, value in puts:
                self._produce_state(key, value, number)
        if offsets:
            positions = [TopicPartition(self.topics.commands, p, o) for p, o in offsets.items()]
            self.producer.send_offsets_to_transaction(positions, self.consumer.consumer_group_metadata(), 30)
        self.producer.commit_transaction(30)
        self.producer.poll(0)  # delivery reports: where the versions and the changelog records landed
        if self.placements.failed:  # the commit reports these too; never trust a refused version
            raise KafkaException(self.placements.failed.pop())
        corrected = corrected_states(changes, self.placements.settle())
        if corrected:
            self._commit_corrections(corrected)
        for number, puts in changes.items():
            written = self._written.pop(number, None)
            self.stores.get(number).write(puts, None if written is None else written + 1)
        record_lag(self.consumer, self.settings.group, positions)
        BATCH_SIZE.observe(len(messages))
        elapsed = time.perf_counter() - started
        TRANSACTION_SECONDS.observe(elapsed)
        for _ in range(sequenced):
            write_stages.observe("transaction", elapsed)

    def _changes(self) -> dict[int, list[tuple[bytes, bytes]]]:
        """The changelog records of the postings this batch changed, per partition, each
        with the offset its new version is predicted to get (set when it was produced)."""
        changes: dict[int, list[tuple[bytes, bytes]]] = {}
        for number, state in self.states.items():
            for posting_id, posting in state.take().items():
                value = codec.sequencer_states().encode(posting.record(posting_id))
                changes.setdefault(number, []).append((posting_id.encode(), value))
        return changes

    def _commit_corrections(self, corrected: dict[int, list[tuple[bytes, bytes]]]) -> None:
        log.warning("correcting %d changelog records whose offsets were mispredicted",
                    sum(len(puts) for puts in corrected.values()))  # fmt: skip
        self.producer.begin_transaction()
        for number, puts in corrected.items():
            for key, value in puts:
                self._produce_state(key, value, number)
        self.producer.commit_transaction(30)
        self.producer.poll(0)

    def _produce_state(self, key: bytes, value: bytes, partition: int) -> None:
        """A changelog record; its delivery report moves the partition's checkpoint."""

        def delivered(error: KafkaError | None, message: Message) -> None:
            if error is None:
                written = self._written.get(partition, -1)
                self._written[partition] = max(written, message.offset() or 0)

        produce_waiting(self.producer, self.topics.sequencer_state, key, value, partition, delivered)

    def _sequence(self, message: Message) -> int:
        """Decide one command within the open transaction; 1 if it was sequenced."""
        try:
            command = records.command(message)
        except records.PoisonRecord as exc:
            # Nobody can be answered: the command goes to the dead-letter topic, in this
            # transaction, so it is dead-lettered exactly when its offset is committed.
            records.note_poison(GROUP, message, exc.reason)
            letter = dead_letter(self.topics, GROUP, message, exc.reason)
            letter.produce(self.producer)
            COMMANDS.labels("poison").inc()
            return 0
        now = now_millis()
        if now - command.received_at > self.settings.command_ttl_s * 1000:
            context = {"posting_id": command.posting_id}
            log.warning("dropped an expired command %s", command.correlation_id, extra=context)
            COMMANDS.labels("expired").inc()
            return 0
        write_stages.observe("to_sequencer", (now - command.received_at) / 1000)
        partition = coordinates(message)[1]
        decision = self.states[partition].decide(command, now)
        state = self.states[partition]
        for update in decision.updates:
            offset = self.placements.place(partition, None if update is None else command.posting_id)
            if update is not None:
                state.placed(command.posting_id, offset)
            self.producer.produce(
                self.topics.postings,
                key=command.posting_id,
                value=None if update is None else codec.posting_updates().encode(update),
                partition=partition,
                on_delivery=self.placements.on_delivery,
            )
        self.producer.produce(
            self.topics.replies,
            key=command.correlation_id,
            value=codec.replies().encode(decision.result.reply_to(command)),
        )
        COMMANDS.labels(decision.result.outcome.lower()).inc()
        return 1
