"""The read side: each API replica's in-memory view of `jobpost.postings`.

One thread reads every partition from the beginning (read_committed) and keeps the newest
version of each posting; a tombstone means "deleted", never "unknown", and a deleted
posting keeps no text. A strong read waits until the view has passed the partition's end
offset taken at request time. A record the view cannot use is counted and skipped; a
failure of the reading thread resumes where it was, never from the beginning.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition

from schemas import records
from schemas.kafka import KafkaSettings, coordinates, end_offset, poll_batch
from schemas.model import DeliveryState, Destination, Op, Posting, PostingUpdate
from schemas.partitioning import partition_for
from schemas.topics import Topics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PostingView:
    id: str
    version: int
    deleted: bool
    posting: Posting | None
    last_update_time_millis: int | None


class StrongReadTimeout(Exception):
    """The view did not reach the partition's end in time."""


class LogView:
    """Follows every partition of a topic from the beginning on a thread of its own,
    handing each record to `apply`; knows how far it has read, for strong reads."""

    reader = "view"

    def __init__(self, kafka: KafkaSettings, topic: str) -> None:
        self.kafka = kafka
        self.topic = topic
        self._positions: dict[int, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.ready = threading.Event()
        self._thread = threading.Thread(target=self._follow, name=f"view-{topic}", daemon=True)
        self._probe: Consumer | None = None
        self._partition_count = kafka.partitions

    def apply(self, message: Message) -> None:
        """Fold one record in; raise records.PoisonRecord for one that cannot be used."""
        raise NotImplementedError

    def start(self) -> None:
        # End offsets come from a consumer of their own: asking the one that is consuming
        # can block behind its fetch.
        self._probe = Consumer(self.kafka.consumer_config(f"view-probe-{uuid.uuid4().hex}"))
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        if self._probe is not None:
            self._probe.close()

    async def wait_for_end(self, posting_id: str, timeout_s: float) -> None:
        """Return once every record committed on the posting's partition before this call
        is in the view."""
        deadline = time.monotonic() + timeout_s
        partition = partition_for(posting_id, self._partition_count)
        target = await asyncio.to_thread(self._end_offset, partition)
        while self._positions.get(partition, -1) < target:
            if time.monotonic() > deadline:
                raise StrongReadTimeout(f"view of partition {partition} is behind")
            await asyncio.sleep(0.005)

    def _end_offset(self, partition: int) -> int:
        assert self._probe is not None
        return end_offset(self._probe, self.topic, partition, timeout=5)

    def _follow(self) -> None:
        while not self._stop.is_set():
            try:
                self._follow_once()
            except Exception:  # keep serving what we have; resume where we were
                log.exception("view of %s failed; resuming it", self.topic)
                self._stop.wait(1.0)

    def _follow_once(self) -> None:
        consumer = Consumer(
            self.kafka.consumer_config(f"view-{uuid.uuid4().hex}", **{"enable.partition.eof": True})
        )
        try:
            metadata = consumer.list_topics(self.topic, timeout=30).topics[self.topic]
            self._partition_count = len(metadata.partitions)
            assignment = [
                TopicPartition(self.topic, p, self._positions.get(p, OFFSET_BEGINNING))
                for p in metadata.partitions
            ]
            consumer.assign(assignment)
            at_end: set[int] = set()
            while not self._stop.is_set():
                for message in poll_batch(consumer, 1000, 0.1):
                    self._take(message, at_end)
                for tp in consumer.position(assignment):
                    if tp.offset >= 0:
                        self._positions[tp.partition] = tp.offset
                if len(at_end) == len(assignment) and not self.ready.is_set():
                    log.info("view of %s caught up", self.topic)
                    self.ready.set()
        finally:
            self.ready.clear()
            consumer.close()

    def _take(self, message: Message, at_end: set[int]) -> None:
        error = message.error()
        if error is None:
            try:
                self.apply(message)
            except records.PoisonRecord as exc:
                records.note_poison(self.reader, message, exc.reason)
        elif error.code() == KafkaError._PARTITION_EOF:
            _, partition, offset = coordinates(message)
            at_end.add(partition)
            # Also the position of a partition that holds no record at all.
            self._positions[partition] = max(offset, self._positions.get(partition, 0))
        elif not error.retriable():
            log.error("view of %s: %s", self.topic, error)


class PostingsView(LogView):
    """Every posting's newest version; a tombstone means "deleted", never "unknown"."""

    reader = "postings-view"

    def __init__(self, kafka: KafkaSettings) -> None:
        super().__init__(kafka, Topics(kafka.topic_prefix).postings)
        self._postings: dict[str, PostingView] = {}

    def get(self, posting_id: str) -> PostingView | None:
        return self._postings.get(posting_id)

    def observe(self, view: PostingView) -> None:
        """Take a version this replica learnt from a reply (read-your-writes), if newer."""
        with self._lock:
            current = self._postings.get(view.id)
            if current is None or current.version < view.version:
                self._postings[view.id] = view

    def apply(self, message: Message) -> None:
        posting_id, update = records.posting_update(message)
        if update is not None:
            self.observe(_from_update(update))
            return
        with self._lock:
            current = self._postings.get(posting_id)
            self._postings[posting_id] = PostingView(
                posting_id,
                current.version if current else -1,
                True,
                None,
                current.last_update_time_millis if current else None,
            )


class DeliveriesView(LogView):
    """Each posting's progress at each destination, from `jobpost.deliveries`."""

    reader = "deliveries-view"

    def __init__(self, kafka: KafkaSettings) -> None:
        super().__init__(kafka, Topics(kafka.topic_prefix).deliveries)
        self._states: dict[str, dict[Destination, DeliveryState]] = {}

    def get(self, posting_id: str) -> dict[Destination, DeliveryState]:
        return dict(self._states.get(posting_id, {}))

    def apply(self, message: Message) -> None:
        destination, posting_id, state = records.delivery_state(message)
        states = self._states.setdefault(posting_id, {})
        if state is None:
            states.pop(destination, None)
        else:
            states[destination] = state


def _from_update(update: PostingUpdate) -> PostingView:
    deleted = update.op == Op.DELETED
    return PostingView(
        update.posting_id,
        update.version,
        deleted,
        None if deleted else update.posting,
        update.last_update_time_millis,
    )
