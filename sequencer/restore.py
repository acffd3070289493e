"""How a sequencer member brings a partition's state up to date when it is assigned.

The state lives in a local store per partition (runtime.stores) that mirrors the compacted
changelog `jobpost.sequencer-state`: a restore reads the changelog from the store's
checkpoint to its end. A changelog that is empty while postings are not (a log written by
a release before the changelog) is derived from postings once, in one transaction. The
state holds no posting text, and needs none: a delete's DELETED version carries none.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import Consumer, Message, Producer

from runtime import records
from runtime.kafka import coordinates, end_offset, produce_waiting
from runtime.kafka_clients import KafkaClients
from runtime.replay import replay
from runtime.stores import URGENT, PartitionStore, Put, Stores
from schemas import codec
from schemas.changelog import SequencerState
from schemas.topics import Component, Topics
from sequencer.config import SequencerSettings
from sequencer.domain import PartitionState
from sequencer.posting_states import ChangelogRecords

log = logging.getLogger(__name__)


class Restorer:
    """The restore side of one session: its stores."""

    def __init__(self, settings: SequencerSettings, consumer: Consumer, producer: Producer) -> None:
        self.settings = settings
        self.topics = Topics(settings.kafka.topic_prefix)
        self.consumer = consumer  # the session's: asks where partitions end
        self.producer = producer  # the session's transactional producer
        self.stores = Stores(settings.state, settings.kafka, Component.SEQUENCER, self.topics.sequencer_state)

    def close(self) -> None:
        self.stores.close()

    def await_settled(self, numbers: list[int]) -> None:
        """Wait until no transaction is open on these partitions of `jobpost.postings` and
        the changelog: the last stable offset (what a read_committed reader may see) has
        reached the high watermark. A dead owner's transaction ends at the latest after
        its timeout."""
        probe = KafkaClients(self.settings.kafka).probe(f"{self.settings.group}-probe", committed=False)
        deadline = time.monotonic() + self.settings.transaction_timeout_ms / 1000 + 30
        topics = (self.topics.postings, self.topics.sequencer_state)
        try:
            while True:
                open_ = [
                    (topic, n)
                    for topic in topics
                    for n in numbers
                    if end_offset(self.consumer, topic, n) < end_offset(probe, topic, n)
                ]
                if not open_:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"transactions stay open on {open_}")
                time.sleep(0.1)
        finally:
            probe.close()

    def restore(self, number: int) -> PartitionState:
        """The partition's state: the local store brought up to the end of the changelog
        (only what was written since its checkpoint is read)."""
        changelog, postings = self.topics.sequencer_state, self.topics.postings
        with URGENT.restoring():  # a view reading from the start steps aside meanwhile
            if (
                end_offset(self.consumer, changelog, number) == 0
                and end_offset(self.consumer, postings, number) > 0
            ):
                store = self._derive_changelog(number)
            else:
                store = self.stores.restore(number, _changelog_puts, self.settings.restore_timeout_s)

        return PartitionState(StoredStates(store))

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
            produce_waiting(self.producer, self.topics.sequencer_state, key, value, number)
        self.producer.commit_transaction(60)
        store = self.stores.get(number)
        store.check_bounds(0, 0)  # whatever it held came from no changelog
        store.write(puts, end_offset(self.consumer, self.topics.sequencer_state, number))
        return store


class StoredStates:
    """A partition's posting states in its local store: the `PostingStateStore` of a
    session's `PartitionState`."""

    def __init__(self, store: PartitionStore) -> None:
        self._store = store

    def get(self, posting_id: str, /) -> SequencerState | None:
        value = self._store.get(posting_id.encode())
        return None if value is None else codec.sequencer_states().decode(value)

    def put(self, records: ChangelogRecords, checkpoint: int | None) -> None:
        self._store.write(records, checkpoint)

    @property
    def checkpoint(self) -> int:
        return self._store.checkpoint


def _changelog_puts(message: Message) -> list[Put]:
    """A changelog record as it goes into the local store: its bytes, once they are known
    to be a SequencerState of the key's posting (a poison record is counted and skipped)."""
    try:
        posting_id, state = records.sequencer_state(message)
    except records.PoisonRecord as exc:
        records.note_poison("sequencer-restore", message, exc.reason)
        return []
    return [(posting_id.encode(), None if state is None else message.value())]
