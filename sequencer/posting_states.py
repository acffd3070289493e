"""What a partition's `PartitionState` (sequencer.domain) stands on: a store of posting
states, as a small protocol, with its in-memory form. The session gives it the local store
(`sequencer.restore.StoredStates`)."""

from __future__ import annotations

from typing import Protocol

from schemas import codec
from schemas.changelog import SequencerState

# Changelog records as `jobpost.sequencer-state` and the local store hold them: (posting id,
# encoded SequencerState). The store takes them encoded, as produced: encoding a busy
# posting's state (1,000 keys) costs 3 ms, too much to pay twice per transaction.
ChangelogRecords = list[tuple[bytes, bytes]]


class PostingStateStore(Protocol):
    """One partition's posting states between transactions: a cache of the changelog, with
    the changelog offset it reflects."""

    def get(self, posting_id: str, /) -> SequencerState | None: ...

    def put(self, records: ChangelogRecords, checkpoint: int | None) -> None:
        """Keep records of the changelog that Kafka committed; `checkpoint` is the changelog
        offset after them (None: not known, the checkpoint stays)."""

    @property
    def checkpoint(self) -> int: ...


class MemoryStates:
    """A store in memory: a partition nothing was kept for yet (deriving the changelog from
    postings), and the unit tests' fake."""

    def __init__(self, records: ChangelogRecords | None = None, checkpoint: int = 0) -> None:
        self.records = dict(records or [])
        self.checkpoint = checkpoint

    def get(self, posting_id: str, /) -> SequencerState | None:
        value = self.records.get(posting_id.encode())
        return None if value is None else codec.sequencer_states().decode(value)

    def put(self, records: ChangelogRecords, checkpoint: int | None) -> None:
        self.records.update(records)
        if checkpoint is not None:
            self.checkpoint = checkpoint
