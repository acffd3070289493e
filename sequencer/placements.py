"""Where a sequencer transaction's new versions land in `jobpost.postings`.

The changelog record of a posting names the offset of its newest version (a delete reads
the text it must carry from there). Waiting for Kafka to acknowledge the versions before
writing the changelog cost a round trip inside every transaction, so the offset is
predicted instead: the sequencer member is its partition's one writer, so a record gets
the partition's next offset, and a committed transaction's marker takes one more. Kafka's
acknowledgements are checked against the predictions after the commit; whatever differs
is reported for correction, and the next predictions start from what Kafka acknowledged.
"""

from __future__ import annotations

import dataclasses

from confluent_kafka import KafkaError, Message
from prometheus_client import Counter

from schemas import codec
from sequencer.posting_states import ChangelogRecords

MISPREDICTED = Counter(
    "jobpost_sequencer_mispredicted_offsets_total",
    "New versions Kafka placed elsewhere than the sequencer expected (their changelog records are corrected)",
)
Puts = dict[int, ChangelogRecords]  # partition -> its changed states


class Placements:
    def __init__(self) -> None:
        self._next: dict[int, int] = {}  # partition -> the offset its next record will get
        self._predicted: dict[str, tuple[int, int]] = {}  # posting id -> (partition, offset)
        self._acknowledged: dict[str, int] = {}  # posting id -> offset of its new version
        self._last: dict[int, int] = {}  # partition -> its last acknowledged offset
        self.failed: list[KafkaError] = []

    def start(self, partition: int, end_offset: int) -> None:
        """The partition's log ends at `end_offset` (no transaction open on it)."""
        self._next[partition] = end_offset

    def forget(self, partition: int) -> None:
        self._next.pop(partition, None)

    def place(self, partition: int, posting_id: str | None) -> int:
        """The offset the next record produced to the partition is predicted to get; a
        posting's version (not a tombstone: `posting_id` None) is remembered for `settle`."""
        offset = self._next[partition]
        self._next[partition] = offset + 1
        if posting_id is not None:
            self._predicted[posting_id] = (partition, offset)
        return offset

    def on_delivery(self, error: KafkaError | None, message: Message) -> None:
        """The delivery report of every record produced to jobpost.postings."""
        if error is not None:
            self.failed.append(error)
            return
        partition, offset, key = message.partition(), message.offset(), message.key()
        if partition is None or offset is None:
            return
        self._last[partition] = max(self._last.get(partition, -1), offset)
        if key is not None and message.value() is not None:
            self._acknowledged[key.decode()] = offset

    def settle(self) -> dict[str, int]:
        """After the commit: the postings whose version Kafka put elsewhere than predicted,
        with where it did. The next transaction's predictions follow the commit marker."""
        wrong = {
            posting_id: self._acknowledged[posting_id]
            for posting_id, (_, offset) in self._predicted.items()
            if self._acknowledged.get(posting_id, offset) != offset
        }
        for partition, last in self._last.items():
            self._next[partition] = last + 2
        self._predicted.clear()
        self._acknowledged.clear()
        self._last.clear()
        return wrong

    def discard(self) -> None:
        """A transaction that did not commit: its predictions are void (the session ends)."""
        self._predicted.clear()
        self._acknowledged.clear()
        self._last.clear()


def corrected_states(changes: Puts, wrong: dict[str, int]) -> Puts:
    """Of the changed states (encoded SequencerStates), those whose version Kafka put
    elsewhere than predicted, rewritten with the acknowledged offset (for the changelog
    and the local store); `changes` stays as it is."""
    corrected: Puts = {}
    for number, puts in changes.items() if wrong else ():
        for key, value in puts:
            actual = wrong.get(key.decode())
            if actual is not None:
                MISPREDICTED.inc()
                record = dataclasses.replace(codec.sequencer_states().decode(value), offset=actual)
                corrected.setdefault(number, []).append((key, codec.sequencer_states().encode(record)))
    return corrected


def with_corrections(changes: Puts, corrected: Puts) -> Puts:
    """`changes` with each corrected state in place of the one it corrects."""
    if not corrected:
        return changes
    replaced = {number: dict(puts) for number, puts in corrected.items()}
    return {
        number: [(key, replaced.get(number, {}).get(key, value)) for key, value in puts]
        for number, puts in changes.items()
    }
