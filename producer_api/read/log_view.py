"""Following a compacted topic into local stores: the machinery under the API's views.

One thread follows every partition from where its store left off (read_committed) and
writes each poll batch's changes together with the new position, so a restart reads only
what was written since. A strong read waits until the view has passed the partition's end
offset taken at request time. A record the view cannot use is counted and skipped; a
failure of the reading thread resumes from the stores' checkpoints, never from the
beginning.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition

from runtime import records
from runtime.kafka import IDLE_POLL_S, KafkaSettings, coordinates, end_offset, poll_batch
from runtime.kafka_clients import KafkaClients
from runtime.stores import (
    RESTORED,
    RESTORING,
    URGENT,
    Put,
    StateLocked,
    StateSettings,
    Stores,
    release_free_memory,
)
from schemas.partitioning import partition_for
from schemas.topics import ReaderGroup, Topics

log = logging.getLogger(__name__)


class StrongReadTimeout(Exception):
    """The view did not reach the partition's end in time."""


@dataclass(frozen=True)
class ViewStatus:
    """How far a view has read, as one snapshot: readiness and reads take it from other
    threads, the follower replaces it whole, never changes it."""

    following: bool = False  # the follower has its stores open and reads
    positions: Mapping[int, int] = field(default_factory=dict)  # partition -> next offset to read
    targets: Mapping[int, int] = field(default_factory=dict)  # partition -> its end when following began
    behind: frozenset[int] = frozenset()  # partitions not yet at their target

    @property
    def ready(self) -> bool:
        """Following, with every partition caught up."""
        return self.following and not self.behind

    @property
    def caught_up(self) -> frozenset[int]:
        """Partitions that reached the end they had when following (re)started (they stay
        so while the follower resumes after a failure)."""
        return frozenset(self.targets) - self.behind


class LogView:
    """Follows every partition of a topic on a thread of its own, from its store's
    checkpoint, handing each record to `apply` and writing the puts it returns with the new
    position, one atomic write per partition per poll batch. Its `status` says how far it
    has read (strong reads) and which partitions have caught up with the end they had when
    it started following (readiness)."""

    reader = "view"
    gathered = False  # its follower's fetches gather what arrives (no read waits on it)

    def __init__(self, kafka: KafkaSettings, topic: str, state: StateSettings | None = None) -> None:
        self.kafka = kafka
        self.topic = topic
        self.state = state or StateSettings()
        self.stores = Stores(self.state, kafka, self.reader, topic)
        self.records_read = 0  # since this view started: what a restart cost
        self._batches = 0
        self.status = ViewStatus()  # replaced whole by the follower (a snapshot)
        self._positions: dict[int, int] = {}  # the follower's own, published in `status`
        self._batch: dict[int, dict[bytes, bytes | None]] = {}  # puts not yet written, per partition
        self._erased: dict[int, set[bytes]] = {}  # of those, keys whose former values must go from disk
        self._private: Path | None = None
        self._lock = threading.Lock()  # opening, rebuilding and closing stores vs reading them
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, name=f"view-{topic}", daemon=True)
        self._probe: Consumer | None = None
        self._partition_count = kafka.partitions

    def apply(self, message: Message) -> list[Put]:
        """What one record changes in its partition's store; raise records.PoisonRecord for
        one that cannot be used."""
        raise NotImplementedError

    def erase(self, partition: int, keys: Iterable[bytes]) -> None:
        """From `apply`: these keys' former values (a deleted posting's text) must be gone
        from the store's files once its puts are written, not only replaced."""
        self._erased.setdefault(partition, set()).update(keys)

    def restoring(self, posting_id: str) -> bool:
        """True while the posting's partition has not caught up since the view started:
        what the view lacks may still be on its way, so "not found" is not an answer yet."""
        status = self.status
        if status.ready:
            return False
        return partition_for(posting_id, self._partition_count) not in status.caught_up

    def start(self) -> None:
        # End offsets come from a consumer of their own: asking the one that is consuming
        # can block behind its fetch.
        self._probe = KafkaClients(self.kafka).probe(
            Topics(self.kafka.topic_prefix).reader_group(ReaderGroup.VIEW)
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop following (`close` waits for it): the follower ends at its next poll, within
        IDLE_POLL_S, so views told to stop together end together."""
        self._stop.set()

    def close(self) -> None:
        self.stop()
        self._thread.join(30)
        if self._probe is not None:
            self._probe.close()
        with self._lock:
            self.stores.close()
        if self._private is not None:
            shutil.rmtree(self._private, ignore_errors=True)

    async def wait_for_end(
        self,
        posting_id: str,
        timeout_s: float,
        offload: Callable[[Callable[[], int]], Awaitable[int]] = asyncio.to_thread,
    ) -> None:
        """Return once every record committed on the posting's partition before this call
        is in the view (the end offset is asked on a thread `offload` gives)."""
        deadline = time.monotonic() + timeout_s
        partition = partition_for(posting_id, self._partition_count)
        target = await offload(lambda: self._end_offset(partition))
        while self.status.positions.get(partition, -1) < target:
            if time.monotonic() > deadline:
                raise StrongReadTimeout(f"view of partition {partition} is behind")
            await asyncio.sleep(0.005)

    def _end_offset(self, partition: int) -> int:
        assert self._probe is not None
        return end_offset(self._probe, self.topic, partition, timeout=5)

    def _stored(self, key: str, suffix: bytes = b"") -> bytes | None:
        """The value of `key` (plus `suffix`) in the store of `key`'s partition, as of what
        the follower has written; None before that store is open."""
        partition = partition_for(key, self._partition_count)
        with self._lock:
            store = self.stores.open.get(partition)
            return None if store is None else store.get(key.encode() + suffix)

    def _scan(self, key: str, suffix: bytes) -> list[tuple[bytes, bytes]]:
        """Every entry whose key starts with `key` plus `suffix`, in the store of `key`'s
        partition, in key order."""
        partition = partition_for(key, self._partition_count)
        with self._lock:
            store = self.stores.open.get(partition)
            return [] if store is None else list(store.items(key.encode() + suffix))

    def _current(self, partition: int, key: bytes) -> bytes | None:
        """For `apply`: the key's value including what this poll batch has changed."""
        batch = self._batch.get(partition)
        if batch is not None and key in batch:
            return batch[key]
        store = self.stores.open.get(partition)
        return None if store is None else store.get(key)

    def _follow(self) -> None:
        while not self._stop.is_set():
            try:
                self._follow_once()
            except Exception:  # keep serving what we have; resume from the stores' checkpoints
                log.exception("view of %s failed; resuming it", self.topic)
                self._stop.wait(1.0)

    def _follow_once(self) -> None:
        consumer = KafkaClients(self.kafka).reader(
            Topics(self.kafka.topic_prefix).reader_group(ReaderGroup.VIEW),
            ends=True,
            small_prefetch=True,
            gathered=self.gathered,
            patient=not self.gathered,
        )
        try:
            metadata = consumer.list_topics(self.topic, timeout=30).topics[self.topic]
            partitions = sorted(metadata.partitions)
            self._partition_count = len(partitions)
            try:
                self._open_stores(consumer, partitions)
            except StateLocked as exc:
                self._use_private_stores(exc)
                self._open_stores(consumer, partitions)
            consumer.assign(
                [TopicPartition(self.topic, p, self._positions[p] or OFFSET_BEGINNING) for p in partitions]
            )
            self._publish(following=True)
            while not self._stop.is_set():
                self._step_aside()
                self._fold(consumer, poll_batch(consumer, self.state.batch_records, IDLE_POLL_S))
        finally:
            self.status = replace(self.status, following=False)
            self._batch.clear()
            self._erased.clear()
            consumer.close()

    def _step_aside(self) -> None:
        """While this view has not caught up since it started (a restore: reads of the
        partitions still behind are not served anyway), let an urgent restore (the
        sequencer's) run first."""
        while not self._stop.is_set() and self.status.behind:
            if URGENT.wait_none(0.5):
                return

    def _open_stores(self, consumer: Consumer, partitions: list[int]) -> None:
        """Open each partition's store, rebuilding one whose checkpoint lies outside the
        log, and take the end each partition has now as what it must reach to be ready."""
        positions, targets = {}, {}
        for partition in partitions:
            start, end = consumer.get_watermark_offsets(
                TopicPartition(self.topic, partition), timeout=10, cached=False
            )
            with self._lock:
                store = self.stores.get(partition)
                if store.checkpoint:
                    store.check_bounds(start, end)
            positions[partition], targets[partition] = store.checkpoint, end
        self._positions = positions
        behind = frozenset(p for p in partitions if positions[p] < targets[p])
        self.status = ViewStatus(False, MappingProxyType(dict(positions)), MappingProxyType(targets), behind)

    def _use_private_stores(self, why: StateLocked) -> None:
        """Another replica uses this state folder: follow into a folder of this process
        alone (a full read, then correct), removed on close."""
        log.warning("view of %s restores into a private folder: %s", self.topic, why)
        with self._lock:
            self.stores.close()
            self.state.dir.mkdir(parents=True, exist_ok=True)
            self._private = Path(tempfile.mkdtemp(prefix=f"{self.reader}-", dir=self.state.dir))
            private = self.state.model_copy(update={"dir": self._private})
            self.stores = Stores(private, self.kafka, self.reader, self.topic)

    def _fold(self, consumer: Consumer, messages: list[Message]) -> None:
        moved: dict[int, int] = {}
        for message in messages:
            error = message.error()
            if error is None:
                _, partition, offset = coordinates(message)
                self._take(message, partition)
                moved[partition] = offset + 1
            elif error.code() == KafkaError._PARTITION_EOF:
                # Also the position of a partition that holds no record at all.
                _, partition, offset = coordinates(message)
                moved[partition] = max(offset, moved.get(partition, 0))
            elif not error.retriable():
                log.error("view of %s: %s", self.topic, error)
        if not moved:
            return
        # Past transaction markers too, which no record reports.
        for tp in consumer.position([TopicPartition(self.topic, p) for p in moved]):
            if tp.offset >= 0:
                moved[tp.partition] = max(moved[tp.partition], tp.offset)
        for partition, position in moved.items():
            puts = self._batch.pop(partition, {})
            erased = self._erased.pop(partition, set())
            if puts or position > self._positions.get(partition, 0):
                self.stores.get(partition).write(puts.items(), position, erased)
                self._positions[partition] = position
        self._publish(following=True)
        self._batches += 1
        if self.status.behind and self._batches % 10 == 0:
            release_free_memory()  # a restore frees as much as it reads

    def _take(self, message: Message, partition: int) -> None:
        try:
            puts = self.apply(message)
        except records.PoisonRecord as exc:
            records.note_poison(self.reader, message, exc.reason)
            puts = []
        self._batch.setdefault(partition, {}).update(puts)
        self.records_read += 1
        if partition in self.status.behind:
            RESTORED.labels(self.reader).inc()

    def _publish(self, following: bool) -> None:
        """A new status: the follower's positions, and the partitions still behind."""
        before = self.status
        behind = before.behind
        if behind:
            caught_up = {p for p in behind if self._positions.get(p, 0) >= before.targets[p]}
            if caught_up:
                log.info("view of %s caught up on partitions %s", self.topic, sorted(caught_up))
                behind = behind - caught_up
                release_free_memory()
        RESTORING.labels(self.reader).set(len(behind))
        self.status = replace(
            before, following=following, positions=MappingProxyType(dict(self._positions)), behind=behind
        )
        if self.status.ready and not before.ready:
            log.info("view of %s caught up (%d records read)", self.topic, self.records_read)
