"""Local state per partition: a cache of Kafka on disk, never a source of truth.

A `PartitionStore` is one RocksDB (through `rocksdict`) holding what a component derived
from one partition of a source topic, and the offset of that topic it reflects (its
checkpoint), written in the same atomic batch as the data. A restart reads the source
only from the checkpoint on (`restore`), so it costs what changed since, not the history.

A store is rebuilt from Kafka (wiped, checkpoint 0), never served, when it
- cannot be opened (a truncated or corrupt file: RocksDB checks file sizes on open),
- belongs to another cluster or to an earlier topic of the same name (topic id),
- is ahead of the log (checkpoint past the partition's end) or behind its start,
- is older than the topic's tombstone retention: a tombstone it missed may be gone from
  the log, so what it holds for that key could never be corrected.

Erasure: a value overwritten or deleted stays in RocksDB's files (its log, its tables) until
compaction rewrites them. A write that forgets a deleted posting's text names the keys it
erases; the files holding them are compacted within `JOBPOST_STATE_ERASE_AFTER_S` (one
compaction for every key erased meanwhile: a compaction costs ~0.2 s on a 35 MB store, too
much for every close on a consumer's event loop), and before a snapshot is taken
(`checkpoint_to`) or the store is closed. A restore, which may write a text and its
forgetting in different batches, compacts once at its end (where what it folds can forget a
text: `Stores.restore(erases=True)`).
"""

from __future__ import annotations

import ctypes
import json
import logging
import shutil
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka import Message, TopicCollection, TopicPartition
from prometheus_client import Counter, Gauge
from pydantic import Field
from pydantic_settings import SettingsConfigDict
from rocksdict import (
    BlockBasedOptions,
    BottommostLevelCompaction,
    Cache,
    Checkpoint,
    CompactOptions,
    Options,
    Rdict,
    WriteBatch,
    WriteBufferManager,
)

from runtime.kafka import KafkaSettings, coordinates
from runtime.kafka_clients import KafkaClients
from runtime.replay import replay
from runtime.settings_file import Settings
from schemas.topics import ReaderGroup, Topics

log = logging.getLogger(__name__)

Put = tuple[bytes, bytes | None]  # (key, value); value None deletes the key
_DATA = b"d"  # data keys are b"d" + key; the store's own keys begin with b"m"
_META = b"m:meta"
_WEEK_S = 7 * 24 * 3600.0
# Every store of a process shares one block cache and one memtable budget, so memory does
# not grow with the number of partitions a process holds (RocksDB's defaults give each
# database a cache of its own and up to 2 x 64 MiB of memtables).
_BLOCK_CACHE_BYTES = 32 << 20
_MEMTABLE_BYTES = 64 << 20

REBUILDS = Counter(
    "jobpost_state_rebuilds_total", "Local stores thrown away and rebuilt, by reason", ["reason"]
)
RESTORED = Counter("jobpost_state_restored_records_total", "Records read to restore local state", ["store"])
ERASING_COMPACTIONS = Counter(
    "jobpost_state_erasing_compactions_total",
    "Local store compactions run so that what a write erased is gone from disk",
)
RESTORING = Gauge(
    "jobpost_state_restoring_partitions", "Partitions whose local state is being restored", ["store"]
)


class StateSettings(Settings):
    """Environment prefix `JOBPOST_STATE_`."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_STATE_")

    dir: Path = Field(default=Path(".state"), description="where this process keeps its local stores")
    max_age_s: float = Field(
        default=_WEEK_S,
        gt=0,
        description="a store not written for this long is rebuilt (tombstone retention)",
    )
    batch_records: int = Field(default=5000, ge=1, description="records per write while restoring")
    erase_after_s: float = Field(
        default=60.0,
        ge=0,
        description="a deleted posting's text is compacted out of a store's files at most this long"
        " after the write that forgot it (0: at once, by that write)",
    )


def source_identity(kafka: KafkaSettings, topic: str) -> str:
    """`<cluster id>/<topic id>`: what a store's content is derived from."""
    admin = KafkaClients(kafka).admin()
    cluster = admin.list_topics(topic, timeout=10).cluster_id or "unknown-cluster"
    description = admin.describe_topics(TopicCollection([topic]), request_timeout=10)[topic].result(15)
    return f"{cluster}/{description.topic_id}"


class Urgent:
    """Restores that answers wait on go first. While the sequencer restores a partition (no
    write of it is taken before), a view still reading its partitions from the start (no
    read of them is served yet either way) steps aside between its batches: in one process
    they share one interpreter, and a cold start's views would otherwise slow the
    sequencer's restore several times over."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._none = threading.Event()
        self._none.set()

    @contextmanager
    def restoring(self) -> Iterator[None]:
        with self._lock:
            self._running += 1
            self._none.clear()
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1
                if self._running == 0:
                    self._none.set()

    def wait_none(self, timeout_s: float) -> bool:
        """True once no urgent restore runs (False if one still does after the timeout)."""
        return self._none.wait(timeout_s)


URGENT = Urgent()


class StateLocked(Exception):
    """Another store (of this process or another) has this folder open: it is in use, not
    corrupt, so it is neither served nor thrown away."""


class PartitionStore:
    def __init__(
        self, path: Path, identity: str, max_age_s: float = _WEEK_S, erase_after_s: float = 0.0
    ) -> None:
        self.path = path
        self.identity = identity
        self.max_age_s = max_age_s
        self.erase_after_s = erase_after_s
        self.checkpoint = 0  # the next offset of the source partition to read
        self.rebuilt: str | None = None  # why the state on disk was thrown away, if it was
        self._db = self._open()
        self._erasing = threading.Lock()  # the keys to erase, their timer, and the compaction
        self._to_erase: set[bytes] = set()
        self._timer: threading.Timer | None = None
        self._closed = False

    def _open(self) -> Rdict:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            db = Rdict(str(self.path), _options())
            meta = db.get(_META)
        except Exception as exc:  # RocksDB reports corruption (and a held lock) as a bare Exception
            if "lock" in str(exc).lower():  # "While lock file: ...", "lock hold by current process"
                raise StateLocked(f"{self.path} is in use: {str(exc).splitlines()[0]}") from exc
            return self._rebuild(f"unreadable: {str(exc).splitlines()[0]}")
        if meta is None:
            return db  # new
        try:
            fields = json.loads(meta)
            identity, checkpoint, written_at = (
                fields["identity"],
                int(fields["checkpoint"]),
                fields["written_at"],
            )
        except (ValueError, KeyError, TypeError):
            db.close()
            return self._rebuild("unreadable: bad metadata")
        why = None
        if identity != self.identity:
            why = f"derived from {identity}, not {self.identity}"
        elif time.time() - written_at > self.max_age_s:
            why = f"not written for {time.time() - written_at:.0f} s (longer than {self.max_age_s:.0f} s)"
        if why is not None:
            db.close()
            return self._rebuild(why)
        self.checkpoint = checkpoint
        return db

    def _rebuild(self, why: str) -> Rdict:
        log.warning("local state %s is rebuilt from Kafka: %s", self.path, why)
        REBUILDS.labels(why.split(":")[0].split(" ")[0]).inc()
        self.rebuilt = why
        self.checkpoint = 0
        shutil.rmtree(self.path, ignore_errors=True)
        return Rdict(str(self.path), _options())

    def check_bounds(self, start: int, end: int) -> None:
        """Rebuild unless the checkpoint lies within the partition's current [start, end]."""
        if start <= self.checkpoint <= end:
            return
        self._db.close()
        where = "ahead of" if self.checkpoint > end else "behind the start of"
        self._db = self._rebuild(f"checkpoint {self.checkpoint} {where} the log [{start}, {end}]")

    def get(self, key: bytes) -> bytes | None:
        value: bytes | None = self._db.get(_DATA + key)
        return value

    def write(self, puts: Iterable[Put], checkpoint: int | None = None, erased: Iterable[bytes] = ()) -> None:
        """Apply the puts and (when given) move the checkpoint, atomically. `erased`: keys
        whose former values must be gone from disk when this returns (a deleted posting's
        text), not only hidden."""
        batch = WriteBatch(raw_mode=True)
        for key, value in puts:
            if value is None:
                batch.delete(_DATA + key)
            else:
                batch.put(_DATA + key, value)
        if checkpoint is not None:
            self.checkpoint = checkpoint
        meta = {"identity": self.identity, "checkpoint": self.checkpoint, "written_at": time.time()}
        batch.put(_META, json.dumps(meta).encode())
        self._db.write(batch)
        keys = {_DATA + key for key in erased}
        if not keys:
            return
        with self._erasing:
            self._to_erase |= keys
            if self.erase_after_s == 0:
                self._erase()
            elif self._timer is None:
                self._timer = threading.Timer(self.erase_after_s, self.erase_now)
                self._timer.daemon = True
                self._timer.start()

    def erase_now(self) -> None:
        """Compact away what the writes since the last compaction erased."""
        with self._erasing:
            self._erase()

    def _erase(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        keys, self._to_erase = sorted(self._to_erase), set()
        if keys and not self._closed:
            self._compact(keys[0], keys[-1])

    def compact(self) -> None:
        """Rewrite every file, so nothing overwritten or deleted stays on disk."""
        with self._erasing:
            self._to_erase = set()
            self._compact(None, None)

    def _compact(self, first: bytes | None, last: bytes | None) -> None:
        # Flushes the memtable (its log goes) and rewrites every level down to the last
        # one that holds the range, where an older value would otherwise stay.
        options = CompactOptions()
        options.set_bottommost_level_compaction(BottommostLevelCompaction.force())
        self._db.compact_range(first, last, options)
        ERASING_COMPACTIONS.inc()

    def items(self, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        """Every data entry whose key starts with `prefix`, in key order."""
        start = _DATA + prefix
        for key, value in self._db.items(from_key=start):
            if not (isinstance(key, bytes) and key.startswith(start)):
                return
            yield key[len(_DATA) :], bytes(value)

    def checkpoint_to(self, path: Path) -> None:
        """A consistent copy of the store at `path` (hard links where it can), taken while
        it goes on being written (runtime.snapshots), once what a write before it erased is
        compacted away: it holds none of it."""
        with self._erasing:
            self._erase()
            Checkpoint(self._db).create_checkpoint(str(path))

    def close(self) -> None:
        with self._erasing:
            self._erase()
            self._closed = True
        self._db.close()


_shared: tuple[Cache, WriteBufferManager] | None = None
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:  # not glibc: its allocator returns memory by its own rules
        return None


def release_free_memory() -> None:
    """Hand memory freed after a burst of writes back to the system (glibc keeps it)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


def _options() -> Options:
    global _shared
    if _shared is None:  # made on first use, not at import
        _shared = (Cache(_BLOCK_CACHE_BYTES), WriteBufferManager(_MEMTABLE_BYTES, False))
        libc = _libc()
        if libc is not None:
            # Memtable blocks (1 MiB) come from mmap and go back when freed; otherwise
            # glibc raises its threshold and scatters them over a heap it never shrinks.
            libc.mallopt(_M_MMAP_THRESHOLD, 128 * 1024)
    cache, memtables = _shared
    tables = BlockBasedOptions()
    tables.set_block_cache(cache)
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_paranoid_checks(True)
    options.set_block_based_table_factory(tables)
    options.set_write_buffer_manager(memtables)
    return options


LIVE: weakref.WeakSet[Stores] = weakref.WeakSet()  # every Stores in use: what a snapshot copies


class Stores:
    """The stores of one component (e.g. `sequencer`) for one source topic, one per
    partition, under `<state dir>/<name>/<topic>/<partition>`."""

    def __init__(self, settings: StateSettings, kafka: KafkaSettings, name: str, topic: str) -> None:
        self.settings = settings
        self.kafka = kafka
        self.name = name
        self.topic = topic
        self._identity: str | None = None
        self.open: dict[int, PartitionStore] = {}
        LIVE.add(self)

    @property
    def identity(self) -> str:
        if self._identity is None:
            self._identity = source_identity(self.kafka, self.topic)
        return self._identity

    def path(self, partition: int) -> Path:
        return self.settings.dir / self.name / self.topic / str(partition)

    def get(self, partition: int) -> PartitionStore:
        """The partition's store, opened (and checked) if it is not yet."""
        store = self.open.get(partition)
        if store is None:
            store = PartitionStore(
                self.path(partition), self.identity, self.settings.max_age_s, self.settings.erase_after_s
            )
            self.open[partition] = store
        return store

    def close(self, partition: int | None = None) -> None:
        for number in [partition] if partition is not None else list(self.open):
            store = self.open.pop(number, None)
            if store is not None:
                store.close()

    def restore(
        self,
        partition: int,
        fold: Callable[[Message], Iterable[Put]],
        timeout_s: float = 300.0,
        erases: bool = False,
    ) -> PartitionStore:
        """Open the partition's store and bring it to the partition's current end (the last
        stable offset): read from its checkpoint, hand each record to `fold`, write what
        it returns with the record's offset as the new checkpoint, in batches. `erases`:
        what it folds may forget a posting's text, so the store is compacted at the end
        when anything was read."""
        store = self.get(partition)
        probe = KafkaClients(self.kafka).probe(
            Topics(self.kafka.topic_prefix).reader_group(ReaderGroup.RESTORE_PROBE)
        )
        try:
            start, end = probe.get_watermark_offsets(
                TopicPartition(self.topic, partition), timeout=10, cached=False
            )
        finally:
            probe.close()
        store.check_bounds(start, end)
        if store.checkpoint == end:
            return store
        RESTORING.labels(self.name).inc()
        pending: list[Put] = []
        count = 0

        def take(message: Message) -> None:
            nonlocal count
            pending.extend(fold(message))
            count += 1
            if count % self.settings.batch_records == 0:
                store.write(pending, coordinates(message)[2] + 1)
                pending.clear()

        try:
            ends = replay(
                self.kafka, self.topic, [partition], take, timeout_s, start={partition: store.checkpoint}
            )
            store.write(pending, ends[partition])
            if erases and count:
                store.compact()  # what it read may have written a text, then forgotten it
        finally:
            RESTORING.labels(self.name).dec()
        RESTORED.labels(self.name).inc(count)
        log.info("%s partition %d restored: %d records read", self.name, partition, count)
        return store
