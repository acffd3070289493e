"""The sequencer: the one writer of each posting's versions.

A consumer group over `jobpost.commands`. For each partition it owns it knows, per posting
of the same partition of `jobpost.postings`, what deciding a command needs (version,
deleted, where the newest version lies, recent idempotency keys; never the text): in a
local store (schemas.stores) that mirrors the compacted changelog `jobpost.sequencer-state`
and is brought up to date on assignment by reading the changelog from the store's
checkpoint. Each poll becomes one Kafka transaction: the PostingUpdates, the replies, the
dead letters of commands it cannot read, the changed postings' states for the changelog,
and the command offsets (`send_offsets_to_transaction` with the group metadata, so a
zombie member is fenced). The local store takes the same states once the transaction
committed, so it never holds what Kafka does not.

Any failure of a session (an aborted transaction, a fenced producer, a lost broker, a bug)
ends it: consumer, producer and in-memory state are thrown away and a new session starts
from the committed offsets and the changelog, so no state outlives what Kafka committed.
When no session has come up for `give_up_after_s`, `run()` raises, so the process exits
and its supervisor restarts it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from prometheus_client import Counter, Histogram

from producer_api.config import SequencerSettings
from producer_api.domain import PartitionState, Result
from schemas import codec, records
from schemas.dead_letters import dead_letter
from schemas.kafka import coordinates, end_offset, is_record, poll_batch, record_lag
from schemas.model import Command, Posting, Reply, SequencerState
from schemas.replay import replay
from schemas.stores import PartitionStore, Put, Stores
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
        self.stores = Stores(
            self.settings.state, self.settings.kafka, "sequencer", self.topics.sequencer_state
        )
        self.texts: Consumer | None = None  # reads a posting's text for its delete
        self._offsets: dict[str, int] = {}  # posting id -> offset of its new version, this batch
        self._written: dict[int, int] = {}  # partition -> offset of its newest changelog record
        self._failed: list[KafkaError] = []
        self.came_up = False
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
                self.came_up = True
                self.sequencer.session_up = True
                if messages:
                    self._process(messages)
        finally:
            self.consumer.close()
            self._abort_open_transaction()
            self.stores.close()
            if self.texts is not None:
                self.texts.close()

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
        self._await_settled(consumer, numbers)
        consumer.committed(partitions, timeout=60)
        for number in numbers:
            started = time.monotonic()
            self.states[number] = self._restore(number)
            self.sequencer.assigned.add(number)
            self.sequencer.restoring.discard(number)
            log.info("sequencer partition %d ready in %.1f s", number, time.monotonic() - started)
        log.info("sequencer owns partitions %s", sorted(self.sequencer.assigned))

    def _restore(self, number: int) -> PartitionState:
        """The partition's state: the local store brought up to the end of the changelog
        (only what was written since its checkpoint is read). A changelog that is empty
        while postings are not (a log written before the changelog existed) is derived
        from postings once."""
        changelog, postings = self.topics.sequencer_state, self.topics.postings
        if (
            end_offset(self.consumer, changelog, number) == 0
            and end_offset(self.consumer, postings, number) > 0
        ):
            store = self._derive_changelog(number)
        else:
            store = self.stores.restore(number, _changelog_puts, self.settings.restore_timeout_s)

        def load(posting_id: str) -> SequencerState | None:
            value = store.get(posting_id.encode())
            return None if value is None else codec.sequencer_states().decode(value)

        return PartitionState(load, lambda posting_id, offset: self._text_at(number, posting_id, offset))

    def _derive_changelog(self, number: int) -> PartitionStore:
        """Read the partition of postings once, and write what the sequencer knows of each
        posting to the changelog, in one transaction (a changelog is complete or empty),
        and to the local store."""
        log.warning(
            "deriving %s partition %d from %s", self.topics.sequencer_state, number, self.topics.postings
        )
        derived = PartitionState()

        def fold(message: Message) -> None:
            try:
                posting_id, update = records.posting_update(message)
            except records.PoisonRecord as exc:
                records.note_poison("sequencer-restore", message, exc.reason)
                return
            derived.apply(posting_id, update, coordinates(message)[2])

        replay(self.settings.kafka, self.topics.postings, [number], fold, self.settings.restore_timeout_s)
        puts = [
            (pid.encode(), codec.sequencer_states().encode(s.record(pid)))
            for pid, s in derived.take().items()
        ]
        self.producer.begin_transaction()
        for key, value in puts:
            self._produce(self.topics.sequencer_state, key, value, number)
        self.producer.commit_transaction(60)
        store = self.stores.get(number)
        store.check_bounds(0, 0)  # whatever it held came from no changelog
        store.write(puts, end_offset(self.consumer, self.topics.sequencer_state, number))
        self._written.pop(number, None)
        return store

    def _text_at(self, number: int, posting_id: str, offset: int) -> Posting:
        """The posting's newest text, from its record at `offset` of the partition of
        postings (a delete's DELETED version carries it). Should the state not know where
        that is, the partition is read for it: slow, but never a stuck posting."""
        if self.texts is None:
            self.texts = Consumer(self.settings.kafka.consumer_config(f"{self.settings.group}-texts"))
        if offset >= 0:
            self.texts.assign([TopicPartition(self.topics.postings, number, offset)])
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                message = self.texts.poll(0.5)
                if message is None or not is_record(message):
                    continue
                key, update = records.posting_update(message)
                if coordinates(message)[2] == offset and key == posting_id and update is not None:
                    return update.posting
                break
        log.warning("reading partition %d of %s for the text of %s", number, self.topics.postings, posting_id)
        newest: list[Posting] = []

        def fold(message: Message) -> None:
            with contextlib.suppress(records.PoisonRecord):
                key, update = records.posting_update(message)
                if key == posting_id and update is not None:
                    newest[:] = [update.posting]

        replay(self.settings.kafka, self.topics.postings, [number], fold, self.settings.restore_timeout_s)
        if not newest:
            raise LookupError(f"{posting_id!r} has no version in {self.topics.postings}")
        return newest[0]

    def _await_settled(self, consumer: Consumer, numbers: list[int]) -> None:
        """Wait until no transaction is open on these partitions of `jobpost.postings` and
        the changelog: the last stable offset (what a read_committed reader may see) has
        reached the high watermark. A dead owner's transaction ends at the latest after
        its timeout."""
        probe = Consumer(self.settings.kafka.consumer_config(
            f"{self.settings.group}-probe", **{"isolation.level": "read_uncommitted"}
        ))  # fmt: skip
        deadline = time.monotonic() + self.settings.transaction_timeout_ms / 1000 + 30
        topics = (self.topics.postings, self.topics.sequencer_state)
        try:
            while True:
                open_ = [
                    (topic, n)
                    for topic in topics
                    for n in numbers
                    if end_offset(consumer, topic, n) < end_offset(probe, topic, n)
                ]
                if not open_:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"transactions stay open on {open_}")
                time.sleep(0.1)
        finally:
            probe.close()

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.states.pop(tp.partition, None)
            self.stores.close(tp.partition)
            self.sequencer.assigned.discard(tp.partition)
            self.sequencer.restoring.discard(tp.partition)

    def _process(self, messages: list[Message]) -> None:
        """One transaction: the batch's PostingUpdates and replies; once Kafka acknowledged
        the updates (their offsets are known), each changed posting's state to the
        changelog; the command offsets; commit. Then the same states to the local store."""
        started = time.perf_counter()
        offsets: dict[int, int] = {}
        positions: list[TopicPartition] = []
        self.producer.begin_transaction()
        for message in messages:
            if not is_record(message):
                continue
            _, partition, offset = coordinates(message)
            offsets[partition] = offset + 1
            self._sequence(message)
        changes = self._changes()
        if changes:
            for number, puts in changes.items():
                for key, value in puts:
                    self._produce(self.topics.sequencer_state, key, value, number)
        if offsets:
            positions = [TopicPartition(self.topics.commands, p, o) for p, o in offsets.items()]
            self.producer.send_offsets_to_transaction(positions, self.consumer.consumer_group_metadata(), 30)
        self.producer.commit_transaction(30)
        self.producer.poll(0)  # the changelog records' delivery reports: the stores' checkpoints
        for number, puts in changes.items():
            written = self._written.pop(number, None)
            self.stores.get(number).write(puts, None if written is None else written + 1)
        record_lag(self.consumer, self.settings.group, positions)
        BATCH_SIZE.observe(len(messages))
        TRANSACTION_SECONDS.observe(time.perf_counter() - started)

    def _changes(self) -> dict[int, list[tuple[bytes, bytes]]]:
        """The changelog records of the postings this batch changed, per partition, with
        the offsets of their new versions (waiting for Kafka to acknowledge them)."""
        taken = {number: state.take() for number, state in self.states.items()}
        if not any(taken.values()):
            return {}
        if self.producer.flush(30) > 0:
            raise TimeoutError("postings records not acknowledged in 30 s")
        if self._failed:
            raise KafkaException(self._failed.pop())
        changes: dict[int, list[tuple[bytes, bytes]]] = {}
        for number, states in taken.items():
            for posting_id, state in states.items():
                state.offset = self._offsets.pop(posting_id, state.offset)
                value = codec.sequencer_states().encode(state.record(posting_id))
                changes.setdefault(number, []).append((posting_id.encode(), value))
        self._offsets.clear()
        return changes

    def _produce(self, topic: str, key: bytes, value: bytes, partition: int) -> None:
        """Produce to the changelog, waiting while the producer's queue is full."""

        def delivered(error: KafkaError | None, message: Message) -> None:
            if error is None:
                written = self._written.get(partition, -1)
                self._written[partition] = max(written, message.offset() or 0)

        while True:
            try:
                self.producer.produce(topic, key=key, value=value, partition=partition, on_delivery=delivered)
                return
            except BufferError:
                self.producer.poll(0.05)

    def _sequence(self, message: Message) -> None:
        try:
            command = records.command(message)
        except records.PoisonRecord as exc:
            # Nobody can be answered: the command goes to the dead-letter topic, in this
            # transaction, so it is dead-lettered exactly when its offset is committed.
            records.note_poison(GROUP, message, exc.reason)
            letter = dead_letter(self.topics, GROUP, message, exc.reason)
            letter.produce(self.producer)
            COMMANDS.labels("poison").inc()
            return
        now = now_millis()
        if now - command.received_at > self.settings.command_ttl_s * 1000:
            context = {"posting_id": command.posting_id}
            log.warning("dropped an expired command %s", command.correlation_id, extra=context)
            COMMANDS.labels("expired").inc()
            return
        partition = coordinates(message)[1]
        decision = self.states[partition].decide(command, now)
        for update in decision.updates:
            if update is None:
                self.producer.produce(
                    self.topics.postings, key=command.posting_id, value=None, partition=partition
                )
                continue
            self.producer.produce(
                self.topics.postings,
                key=command.posting_id,
                value=codec.posting_updates().encode(update),
                partition=partition,
                on_delivery=self._note_offset,
            )
        self.producer.produce(
            self.topics.replies,
            key=command.correlation_id,
            value=codec.replies().encode(_reply(command, decision.result)),
        )
        COMMANDS.labels(decision.result.outcome.lower()).inc()

    def _note_offset(self, error: KafkaError | None, message: Message) -> None:
        """Where a posting's new version landed: its state's `offset`."""
        if error is not None:
            self._failed.append(error)
            return
        key, offset = message.key(), message.offset()
        if key is not None and offset is not None:
            self._offsets[key.decode()] = offset


def _changelog_puts(message: Message) -> list[Put]:
    """A changelog record as it goes into the local store: its bytes, once they are known
    to be a SequencerState of the key's posting (a poison record is counted and skipped)."""
    try:
        posting_id, state = records.sequencer_state(message)
    except records.PoisonRecord as exc:
        records.note_poison("sequencer-restore", message, exc.reason)
        return []
    return [(posting_id.encode(), None if state is None else message.value())]


def _reply(command: Command, result: Result) -> Reply:
    return Reply(
        request_id=command.request_id,
        correlation_id=command.correlation_id,
        posting_id=command.posting_id,
        outcome=result.outcome,
        version=result.version,
        deleted=result.deleted,
        last_update_time_millis=result.last_update_time_millis,
    )
