"""Each posting's DeliveryState at one destination, on disk: one store per partition of
`jobpost.deliveries` this consumer owns (`runtime.stores`), so a restart reads only what was
written since its checkpoint and memory does not grow with the number of postings.

A store holds, by posting id, the raw DeliveryState bytes of this destination's records
(key `{destination}/{posting_id}`; the other destination's records share the partition and
are ignored), a small index of the postings with dead letters not yet resolved (key prefix
`UNRESOLVED`, the oldest letter's time), so the age of the oldest unresolved letter is known
without reading a dead-letter topic, and one of the postings whose job the board holds open
(key prefix `OPEN_JOBS`), which the job watch (`consumers.job_watch`) follows: their status
read back, their expiry, their renewal. Every state kept is told to the `watch`. A
posting's state is looked up in the store of `partition_for(posting_id)`, the partition the
sequencer writes its versions to. The store's checkpoint, the next offset of the partition
still to read, is a claim: every record of this destination below it is reflected in the
store. Two writers keep it:

- `restore` (on assignment, on a worker thread: a long restore never stops the lanes)
  folds the partition from the checkpoint to its end; the store serves `get` only once
  `opened` hands it to the event loop.
- `record` (while running, on the event loop), after Kafka acknowledged a state this
  consumer wrote at offset `o`, writes the state and checkpoint `o + 1` in one batch. The
  claim holds because this consumer is the only writer of the destination's records on a
  partition it owns (its group gives a partition to one member; a redrive is a request its
  lane handles, not a write of someone else) and its producer is idempotent:
  acknowledgements on one partition arrive in produce order, are served by one thread only
  (`runtime.consume_thread.DeliveryReports`), and each resumes its waiting lane in that
  order with no `await` between the acknowledgement and the write, so the store is written
  in offset order. Records of ours refused and produced again land later,
  past `o`, and are written when acknowledged. Whatever else lies below `o` belongs to the
  other destination. A lane is cancelled (between an acknowledgement and its write) only
  with its partition, whose store is given up too, so no later write claims past a state it
  did not keep. A state acknowledged below the checkpoint was already read by `restore`: it
  is not written again (it could hide a newer one).

Where the claim can fail: a member that lost its partitions without knowing it (a zombie).
The consume loop flushes the producer before giving a partition up, so an orderly hand-over
loses nothing; otherwise the store misses that one state until it is next rebuilt. A
missed state makes a version look undelivered (it is delivered again: what the board holds
decides what is sent, and a repeat meets the board's identity of the job) or a retry budget
start over.
"""

from __future__ import annotations

import struct
from typing import Protocol

from confluent_kafka import Message

from runtime import records
from runtime.stores import PartitionStore, Put, Stores
from schemas import codec
from schemas.deliveries import BoardJob, DeliveryState
from schemas.enums import JobHeld
from schemas.model import Destination
from schemas.partitioning import partition_for

UNRESOLVED = b"\x00unresolved/"  # no posting id starts with a NUL byte
OPEN_JOBS = b"\x00open/"
_MILLIS = struct.Struct(">q")


class Watch(Protocol):
    """Who follows the jobs the board holds open (`consumers.job_watch.JobWatch`)."""

    def track(self, partition: int, posting_id: str, job: BoardJob | None) -> None: ...

    def forget(self, partitions: set[int]) -> None: ...


class _Unwatched:
    def track(self, partition: int, posting_id: str, job: BoardJob | None) -> None:
        pass

    def forget(self, partitions: set[int]) -> None:
        pass


class StoredStates:
    """The lanes' `states` (get by posting id) over the stores handed to the event loop;
    `record` and `restore` are the only writers."""

    def __init__(self, stores: Stores, destination: Destination, partitions: int) -> None:
        self.stores = stores
        self.destination = destination
        self.partitions = partitions
        self.reader = f"{destination.value}-restore"  # label of the poison records it skips
        self.ready: dict[int, PartitionStore] = {}  # the event loop's: restored and serving
        self.letters: dict[int, dict[str, int]] = {}  # posting -> its oldest unresolved letter (ms)
        self.watch: Watch = _Unwatched()

    def get(self, posting_id: str, /) -> DeliveryState | None:
        """The posting's state, None when none was recorded or its partition is not ours."""
        store = self.ready.get(partition_for(posting_id, self.partitions))
        raw = store.get(posting_id.encode()) if store is not None else None
        return None if raw is None else codec.delivery_states().decode(raw)

    def record(self, partition: int, state: DeliveryState, raw: bytes, offset: int) -> None:
        """Keep a state Kafka acknowledged at `offset` of `partition`, and move the
        checkpoint past it (see the module's docstring for why that is sound)."""
        store = self.ready.get(partition)
        if store is None or offset < store.checkpoint:
            return  # the partition is gone (its next owner restores it), or restored past it
        oldest = _oldest_letter(state)
        key = state.posting_id.encode()
        store.write(
            [(key, raw), _index(state.posting_id, oldest), _open(state)],
            checkpoint=offset + 1,
            erased=[key]
            if state.held == JobHeld.CLOSED
            else [],  # the content a board restated goes from disk
        )
        letters = self.letters.setdefault(partition, {})
        if oldest is None:
            letters.pop(state.posting_id, None)
        else:
            letters[state.posting_id] = oldest
        self.watch.track(partition, state.posting_id, state.job)

    def restore(self, partition: int) -> tuple[PartitionStore, dict[str, int], dict[str, BoardJob]]:
        """Bring the partition's store up to the end of the log (blocking: a worker thread's
        job) and read its indexes: unresolved letters, open jobs. It serves nothing until
        `opened`."""
        store = self.stores.restore(partition, self._fold, erases=True)
        return store, unresolved_in(store), open_jobs_in(store)

    def opened(
        self, partition: int, store: PartitionStore, letters: dict[str, int], jobs: dict[str, BoardJob]
    ) -> None:
        """A restored store starts serving (on the event loop), its open jobs followed."""
        self.ready[partition] = store
        self.letters[partition] = letters
        for posting_id, job in jobs.items():
            self.watch.track(partition, posting_id, job)

    def give_up(self, partitions: set[int]) -> None:
        """Stop serving the partitions (on the event loop); `close` them afterwards."""
        for partition in partitions:
            self.ready.pop(partition, None)
            self.letters.pop(partition, None)
        self.watch.forget(partitions)

    def close(self, partitions: set[int] | None = None) -> None:
        """Close the stores (on the thread that restores them, or once it is idle)."""
        for partition in sorted(partitions if partitions is not None else set(self.stores.open)):
            self.stores.close(partition)

    def oldest_unresolved_letter_at(self) -> int | None:
        """When the oldest dead letter not yet resolved was written (ms), None when none."""
        oldest = [min(letters.values()) for letters in list(self.letters.values()) if letters]
        return min(oldest) if oldest else None

    def _fold(self, message: Message) -> list[Put]:
        try:
            destination, posting_id, state = records.delivery_state(message)
        except records.PoisonRecord as exc:
            records.note_poison(self.reader, message, exc.reason)
            return []
        if destination != self.destination:
            return []
        if state is None:
            return [
                (posting_id.encode(), None),
                _index(posting_id, None),
                (OPEN_JOBS + posting_id.encode(), None),
            ]
        return [
            (posting_id.encode(), message.value()),
            _index(posting_id, _oldest_letter(state)),
            _open(state),
        ]


def unresolved_in(store: PartitionStore) -> dict[str, int]:
    """The store's index: each posting with unresolved letters, and the oldest one's time."""
    return {
        key[len(UNRESOLVED) :].decode(): _MILLIS.unpack(value)[0] for key, value in store.items(UNRESOLVED)
    }


def open_jobs_in(store: PartitionStore) -> dict[str, BoardJob]:
    """The store's open jobs, each as its state has it."""
    found: dict[str, BoardJob] = {}
    for key, _ in store.items(OPEN_JOBS):
        posting_id = key[len(OPEN_JOBS) :]
        raw = store.get(posting_id)
        state = codec.delivery_states().decode(raw) if raw is not None else None
        if state is not None and state.job is not None:
            found[posting_id.decode()] = state.job
    return found


def _open(state: DeliveryState) -> Put:
    key = OPEN_JOBS + state.posting_id.encode()
    return (key, b"" if state.job is not None and state.job.held == JobHeld.OPEN else None)


def _oldest_letter(state: DeliveryState) -> int | None:
    times = [letter.dead_lettered_at for letter in state.unresolved_letters]
    return min(times) if times else None


def _index(posting_id: str, oldest: int | None) -> Put:
    return (UNRESOLVED + posting_id.encode(), None if oldest is None else _MILLIS.pack(oldest))
