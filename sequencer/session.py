"""One session of a sequencer member: its consumer, transactional producer and state, from
the group's committed offsets and the changelog until a failure it cannot outlive (see
`sequencer.member`, and `sequencer.transactions` for the ones it outlives). Each poll
becomes one Kafka transaction."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from confluent_kafka import (
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from prometheus_client import Counter, Histogram

from runtime import records, write_stages
from runtime.dead_letters import dead_letter
from runtime.kafka import coordinates, end_offset, is_record, poll_batch, produce_waiting, record_lag
from schemas import codec
from schemas.topics import Component, Topics
from sequencer.clock import BrokerClock
from sequencer.config import SequencerSettings
from sequencer.domain import deadline_of
from sequencer.partitions import Partitions
from sequencer.placements import Placements, Puts, corrected_states
from sequencer.restore import Restorer
from sequencer.transactions import ToldTime, abortable, retrying

Report = Callable[..., None]  # the member's status, changed by keyword (Sequencer._report)

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
REWOUND = Counter(
    "jobpost_sequencer_transactions_rewound_total",
    "Transactions Kafka made abortable (a broker lost): aborted, their partitions read again in-session",
)
# A broker that stalls (SIGSTOP, a long GC) keeps its connections open: a fetch sent to it
# waits for the socket timeout, 60 s by default, before the client looks for the partition's
# new leader. Kafka moves leadership after ~9 s (broker.session.timeout.ms).
STALLED_BROKER = {"socket.timeout.ms": 10_000}
GROUP = Component.SEQUENCER  # its dead-letter topic (jobpost.sequencer.dlq) and its counters' label


class Session:
    def __init__(
        self, settings: SequencerSettings, stopping: threading.Event, report: Report, clock: BrokerClock
    ) -> None:
        self.settings = settings
        self.stopping = stopping
        self.report = report
        self.told = ToldTime(clock)  # the member's clock: what it learnt of Kafka's time outlives a session
        self.clock = clock
        self.topics = Topics(settings.kafka.topic_prefix)
        self.placements = Placements()  # where this transaction's new versions land
        self._written: dict[int, int] = {}  # partition -> offset of its newest changelog record
        self.came_up = False
        kafka = self.settings.kafka
        member = kafka.member_config(self.settings.group, self.settings.session_timeout_ms)
        self.consumer = Consumer({**member, **STALLED_BROKER})
        self.producer = Producer(self.settings.producer_config())
        self.restorer = Restorer(self.settings, self.consumer, self.producer)
        self.stores = self.restorer.stores
        self.partitions = Partitions(settings, self.consumer, self.restorer, self.placements, self._publish)
        self._within_s = settings.transaction_timeout_ms / 1000  # how long Kafka may ask for a call again

    def run(self) -> None:
        try:
            self.producer.init_transactions(30)
            if not self.clock.known:
                self.told.probe(self.producer, self.topics.replies)
            partitions = self.partitions
            self.consumer.subscribe(
                [self.topics.commands],
                on_assign=partitions.on_assign,
                on_revoke=partitions.on_revoke,
                on_lost=partitions.on_lost,
            )
            while not self.stopping.is_set():
                messages = poll_batch(self.consumer, self.settings.max_batch, 0.1)
                if not self.came_up:
                    self.came_up = True
                    self.report(session_up=True)
                if messages:
                    self._process(messages)
                partitions.advance()
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

    def _publish(self) -> None:
        self.report(assigned=frozenset(self.partitions.states), restoring=frozenset(self.partitions.waiting))

    def _process(self, messages: list[Message]) -> None:
        """One transaction: the batch's PostingUpdates and replies, each changed posting's
        state for the changelog (with the offset its new version is predicted to get), the
        command offsets; commit. Then the same states to the local store, with the offsets
        Kafka acknowledged; a changelog record whose prediction was wrong is corrected in a
        transaction of its own. A transaction Kafka makes abortable (a broker died, a leader
        moved) is aborted and its partitions are read again, within this session."""
        started = time.perf_counter()
        served = self.partitions.states
        batch = [m for m in messages if is_record(m) and coordinates(m)[1] in served]
        if not batch:
            return
        try:
            changes, positions, sequenced = self._transact(batch)
        except KafkaException as exc:
            if not abortable(exc):
                raise
            self._rewind(batch, exc)
            return
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
        BATCH_SIZE.observe(len(batch))
        elapsed = time.perf_counter() - started
        TRANSACTION_SECONDS.observe(elapsed)
        for _ in range(sequenced):
            write_stages.observe("transaction", elapsed)

    def _transact(self, batch: list[Message]) -> tuple[Puts, list[TopicPartition], int]:
        """The batch's transaction, committed: (the changelog records per partition, the
        command offsets committed, how many commands were sequenced)."""
        offsets: dict[int, int] = {}
        sequenced = 0
        self.producer.begin_transaction()
        for message in batch:  # the newest append time of the batch bounds the time for all of it
            kind, millis = message.timestamp()
            if kind == TIMESTAMP_LOG_APPEND_TIME:
                self.clock.observe(millis)
        for message in batch:
            _, partition, offset = coordinates(message)
            offsets[partition] = offset + 1
            sequenced += self._sequence(message)
        changes = self._changes()
        for number, puts in changes.items():
            for key, value in puts:
                self._produce_state(key, value, number)
        positions = [TopicPartition(self.topics.commands, p, o) for p, o in offsets.items()]
        metadata = self.consumer.consumer_group_metadata()
        retrying(
            lambda: self.producer.send_offsets_to_transaction(positions, metadata, 30),
            self._within_s,
            "sending the offsets",
        )
        retrying(lambda: self.producer.commit_transaction(30), self._within_s, "committing")
        return changes, positions, sequenced

    def _rewind(self, batch: list[Message], exc: KafkaException) -> None:
        """Abort the failed transaction, forget what it decided and read its partitions
        again from where it began (what the last committed transaction left as the
        group's offsets); the other partitions go on untouched."""
        began: dict[int, int] = {}
        for message in batch:
            _, partition, offset = coordinates(message)
            began.setdefault(partition, offset)
        REWOUND.inc()
        log.warning("transaction aborted (%s): partitions %s are read again", exc.args[0], sorted(began))
        retrying(lambda: self.producer.abort_transaction(30), self._within_s, "aborting")
        self.placements.discard()
        self._written.clear()
        for number in began:
            self.partitions.states[number].discard()
        # The abort's markers take an offset of each partition: predictions start after them.
        ends = retrying(lambda: self._settled_ends(list(began)), self._within_s, "reading where the log ends")
        for number, offset in began.items():
            self.placements.start(number, ends[number])
            self.consumer.seek(TopicPartition(self.topics.commands, number, offset))

    def _settled_ends(self, numbers: list[int]) -> dict[int, int]:
        """Where these partitions of postings end once no transaction is open on them."""
        self.restorer.await_settled(numbers, self._within_s)
        return {n: end_offset(self.consumer, self.topics.postings, n, timeout=10) for n in numbers}

    def _changes(self) -> dict[int, list[tuple[bytes, bytes]]]:
        """The changelog records of the postings this batch changed, per partition, each
        with the offset its new version is predicted to get (set when it was produced)."""
        changes: dict[int, list[tuple[bytes, bytes]]] = {}
        for number, state in self.partitions.states.items():
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
        now = self.clock.now_millis()
        # A command written before the topic took LogAppendTime carries its producer's
        # clock (CREATE_TIME): the best there is for it.
        kind, appended = message.timestamp()
        if kind == TIMESTAMP_NOT_AVAILABLE:
            appended = now
        write_stages.observe("to_sequencer", max(0, now - appended) / 1000)
        partition = coordinates(message)[1]
        state = self.partitions.states[partition]
        # Past its deadline the command is answered EXPIRED in this transaction, which also
        # commits its offset: nobody ever applies it later.
        decision = state.decide(command, now, deadline_of(command, appended))
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
            on_delivery=self.told,
        )
        COMMANDS.labels(decision.result.outcome.lower()).inc()
        return 1
