"""One session of a sequencer member: its consumer, transactional producer and state, from
the group's committed offsets and the changelog until the first failure (see
`sequencer.member`). Each poll becomes one Kafka transaction.

Its consume loop is its own, not the board consumers' and the indexer's
(`runtime.consume_loop`), because its work is a transaction: a command's offset is committed
by the producer inside the transaction that writes its versions and its reply
(`send_offsets_to_transaction` with the group's metadata, so a zombie member is fenced), never
by the consumer after the work; a batch is finished as a whole, so there is no finished
prefix to track; and it decides on the polling thread itself, with each partition's state
restored inside the rebalance callback once the previous owner's transactions have settled,
so there is no event loop to hand records to."""

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
from runtime.kafka_clients import KafkaClients, Statistics
from schemas import codec
from schemas.topics import Component, Topics
from sequencer.clock import BrokerClock
from sequencer.config import SequencerSettings
from sequencer.domain import PartitionState, deadline_of
from sequencer.placements import Placements, corrected_states, with_corrections
from sequencer.posting_states import ChangelogRecords
from sequencer.restore import Restorer
from sequencer.watch import TransactionTimer

Report = Callable[..., None]  # the member's status, changed by keyword (Sequencer._report_from)

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
GROUP = Component.SEQUENCER  # its dead-letter topic (jobpost.sequencer.dlq) and its counters' label


class ClockUnknown(RuntimeError):
    """Kafka did not tell the time: jobpost.replies does not stamp LogAppendTime."""


def member_clients(
    settings: SequencerSettings, on_statistics: Statistics | None = None
) -> tuple[Consumer, Producer]:
    """A member's consumer of jobpost.commands (eager for a static member: see
    `SequencerSettings.assigned_eagerly`) and its transactional producer, both on the write
    path: they give up on a silent broker within seconds."""
    clients = KafkaClients(settings.kafka)
    consumer = clients.member(
        settings.group,
        session_timeout_ms=settings.session_timeout_ms,
        instance_id=settings.instance_id,
        eager=settings.assigned_eagerly,
        write_path=True,
    )
    producer = clients.transactional(
        settings.transactional_id, timeout_ms=settings.transaction_timeout_ms, on_statistics=on_statistics
    )
    return consumer, producer


class Session:
    def __init__(
        self, settings: SequencerSettings, stopping: threading.Event, report: Report, clock: BrokerClock
    ) -> None:
        self.settings = settings
        self.stopping = stopping
        self.report = report
        self.clock = clock  # the member's: what it learnt of Kafka's time outlives a session
        self.topics = Topics(settings.kafka.topic_prefix)
        self.assigned: set[int] = set()  # this session's thread alone changes these two
        self.restoring: set[int] = set()
        self.states: dict[int, PartitionState] = {}
        self.placements = Placements()  # where this transaction's new versions land
        self._written: dict[int, int] = {}  # partition -> offset of its newest changelog record
        self.came_up = False
        self.abandoned = False  # set by the member's thread: end as soon as Kafka lets us
        self._closing = threading.Lock()  # the consumer is closed once, by run() or release()
        self._consumer_closed = False
        self.transaction = TransactionTimer()  # what the member's watch reads
        self.consumer, self.producer = member_clients(settings)
        self.restorer = Restorer(self.settings, self.consumer, self.producer)
        self.stores = self.restorer.stores

    def run(self) -> None:
        try:
            started = time.monotonic()
            self.producer.init_transactions(30)  # fences a predecessor, waits for its abort
            log.info("sequencer session: transactions initialised in %.1f s", time.monotonic() - started)
            if not self.clock.known:
                self._probe_clock()
            self.consumer.subscribe(
                [self.topics.commands],
                on_assign=self._on_assign,
                on_revoke=self._on_revoke,
                on_lost=self._on_revoke,
            )
            while not (self.stopping.is_set() or self.abandoned):
                messages = poll_batch(self.consumer, self.settings.max_batch, 0.1)
                if not self.came_up:
                    self.came_up = True
                    self.report(session_up=True)
                if messages:
                    self._process(messages)
        finally:
            self._close_consumer()
            self._abort_open_transaction()
            self.restorer.close()

    def abandon(self) -> None:
        """The member's thread gives up on this session, stuck in a transaction's Kafka
        call: it ends when the call returns, and its stores are closed now, for the next
        session to open (it touches them only after a commit, which Kafka refuses once the
        next session's producer has fenced this one's)."""
        self.abandoned = True
        self.stores.close()

    def release(self) -> None:
        """Close an abandoned session's consumer now, on a thread of its own (the call may
        wait for a coordinator that is gone), so it leaves the group: no successor under
        the same static name takes its place at once. Its stuck thread never polls again,
        so without this the group would wait for it to give its partitions up."""
        threading.Thread(target=self._close_consumer, name="sequencer-release", daemon=True).start()

    def _close_consumer(self) -> None:
        with self._closing:
            if self._consumer_closed:
                return
            self._consumer_closed = True
        try:
            self.consumer.close()
        except Exception as exc:  # noqa: BLE001 - a consumer fenced or already gone: nothing left to close
            log.debug("closing the session's consumer: %r", exc)

    def _probe_clock(self) -> None:
        """Ask Kafka the time before the first decision (a member that starts behind a
        backlog would otherwise judge old commands by the newest of them): one empty record
        to jobpost.replies in a transaction that is then aborted, so no read_committed
        reader sees it; its acknowledgement carries the broker's append time."""
        with self.transaction.open():
            self.producer.begin_transaction()
            self.producer.produce(
                self.topics.replies, key=b"", value=b"", partition=0, on_delivery=self.clock.acknowledged
            )
            self.producer.flush(30)
            self.producer.abort_transaction(30)
        if not self.clock.known:
            raise ClockUnknown(f"{self.topics.replies} does not stamp LogAppendTime: run `jobpost topics`")

    def _abort_open_transaction(self) -> None:
        """A failed session may leave its transaction open, holding every read_committed
        reader of its partitions back until it times out: end it now if Kafka lets us. Not
        for long: the member's next session, under the same transactional id, aborts it
        when it initialises (a broker's fault kept this waiting for seconds)."""
        try:
            with self.transaction.open():
                self.producer.abort_transaction(1)
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
        self.restoring |= set(numbers)
        self._publish()
        started = time.monotonic()
        self.restorer.await_settled(numbers)
        waited = time.monotonic() - started
        log.info(
            "sequencer assigned partitions %s: no transaction open on them after %.1f s", numbers, waited
        )
        consumer.committed(partitions, timeout=60)
        for number in numbers:
            started = time.monotonic()
            self.states[number] = self.restorer.restore(number)
            self.placements.start(number, end_offset(consumer, self.topics.postings, number, timeout=30))
            self.assigned.add(number)
            self.restoring.discard(number)
            self._publish()
            log.info("sequencer partition %d ready in %.1f s", number, time.monotonic() - started)
        log.info("sequencer owns partitions %s", sorted(self.assigned))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.states.pop(tp.partition, None)
            self.placements.forget(tp.partition)
            self.stores.close(tp.partition)
            self.assigned.discard(tp.partition)
            self.restoring.discard(tp.partition)
        self._publish()

    def _publish(self) -> None:
        self.report(assigned=frozenset(self.assigned), restoring=frozenset(self.restoring))

    def _process(self, messages: list[Message]) -> None:
        """One transaction: the batch's PostingUpdates and replies, each changed posting's
        state for the changelog (with the offset its new version is predicted to get), the
        command offsets; commit. Then the same states to the local store, with the offsets
        Kafka acknowledged; a changelog record whose prediction was wrong is corrected in a
        transaction of its own."""
        with self.transaction.open():
            positions = self._transact(messages)
        record_lag(self.consumer, self.settings.group, positions)

    def _transact(self, messages: list[Message]) -> list[TopicPartition]:
        started = time.perf_counter()
        offsets: dict[int, int] = {}
        positions: list[TopicPartition] = []
        sequenced = 0
        self.producer.begin_transaction()
        for message in messages:  # the newest append time of the batch bounds the time for all of it
            kind, millis = message.timestamp()
            if kind == TIMESTAMP_LOG_APPEND_TIME:
                self.clock.observe(millis)
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
        for number, puts in with_corrections(changes, corrected).items():
            written = self._written.pop(number, None)
            self.states[number].store.put(puts, None if written is None else written + 1)
        BATCH_SIZE.observe(len(messages))
        elapsed = time.perf_counter() - started
        TRANSACTION_SECONDS.observe(elapsed)
        for _ in range(sequenced):
            write_stages.observe("transaction", elapsed)
        return positions

    def _changes(self) -> dict[int, ChangelogRecords]:
        """The changelog records of the postings this batch changed, per partition, each
        with the offset its new version is predicted to get (set when it was produced)."""
        changes: dict[int, ChangelogRecords] = {}
        for number, state in self.states.items():
            for posting_id, posting in state.take().items():
                value = codec.sequencer_states().encode(posting.record(posting_id))
                changes.setdefault(number, []).append((posting_id.encode(), value))
        return changes

    def _commit_corrections(self, corrected: dict[int, ChangelogRecords]) -> None:
        log.warning(
            "correcting %d changelog records whose offsets were mispredicted",
            sum(len(puts) for puts in corrected.values()),
        )
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
        state = self.states[partition]
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
            on_delivery=self.clock.acknowledged,
        )
        COMMANDS.labels(decision.result.outcome.lower()).inc()
        return 1
