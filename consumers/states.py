"""Each posting's DeliveryState at one destination, on disk: one store per partition of
`jobpost.deliveries` this consumer owns (`runtime.stores`), so a restart reads only what was
written since its checkpoint and memory does not grow with the number of postings.

A store holds, by posting id, the raw DeliveryState bytes of this destination's records
(key `{destination}/{posting_id}`; the other destination's records share the partition and
are ignored). A posting's state is looked up in the store of `partition_for(posting_id)`,
the partition the sequencer writes its versions to. The store's checkpoint, the next offset
of the partition still to read, is a claim: every record of this destination below it is
reflected in the store. Two writers keep it:

- `restore` (on assignment) folds the partition from the checkpoint to its end.
- `record` (while running), after Kafka acknowledged a state this consumer wrote at
  offset `o`, writes the state and checkpoint `o + 1` in one batch. The claim holds because
  this consumer is the only writer of the destination's records on a partition it owns (its
  group gives a partition to one member) and its producer is idempotent: acknowledgements
  on one partition arrive in produce order, and each resumes its waiting lane in that order
  with no `await` between the acknowledgement and the write, so the store is written in
  offset order. Records of ours refused and produced again land later, past `o`, and are
  written when acknowledged. Whatever else lies below `o` belongs to the other destination.
  A lane is cancelled (between an acknowledgement and its write) only with its partition,
  whose store closes too, so no later write claims past a state it did not keep. A state
  acknowledged below the checkpoint was already read by `restore`: it is not written again
  (it could hide a newer one).

Where the claim can fail: a member that lost its partitions without knowing it (a zombie)
or `jobpost dlq redrive` writing a state for the destination after the restore. The runner
flushes its producer before giving a partition up, so an orderly hand-over loses nothing;
otherwise the store misses that one state until it is next rebuilt. A missed state makes a
version look undelivered (it is delivered again, and the boards deduplicate by idempotency
key) or a retry budget start over.
"""

from __future__ import annotations

from confluent_kafka import Message

from runtime import records
from runtime.stores import Put, Stores
from schemas import codec
from schemas.model import DeliveryState, Destination
from schemas.partitioning import partition_for


class StoredStates:
    """The scheduler's `states` (get by posting id) over the open stores; `record` and
    `restore` are the only writers."""

    def __init__(self, stores: Stores, destination: Destination, partitions: int) -> None:
        self.stores = stores
        self.destination = destination
        self.partitions = partitions
        self.reader = f"{destination.value}-restore"  # label of the poison records it skips

    def get(self, posting_id: str, /) -> DeliveryState | None:
        """The posting's state, None when none was recorded or its partition is not ours."""
        store = self.stores.open.get(partition_for(posting_id, self.partitions))
        raw = store.get(posting_id.encode()) if store is not None else None
        return None if raw is None else codec.delivery_states().decode(raw)

    def record(self, partition: int, posting_id: str, raw: bytes, offset: int) -> None:
        """Keep a state Kafka acknowledged at `offset` of `partition`, and move the
        checkpoint past it (see the module's docstring for why that is sound)."""
        store = self.stores.open.get(partition)
        if store is None or offset < store.checkpoint:
            return  # the partition is gone (its next owner restores it), or restored past it
        store.write([(posting_id.encode(), raw)], checkpoint=offset + 1)

    def restore(self, partition: int) -> None:
        self.stores.restore(partition, self._fold)

    def close(self, partitions: set[int] | None = None) -> None:
        for partition in sorted(partitions if partitions is not None else set(self.stores.open)):
            self.stores.close(partition)

    def _fold(self, message: Message) -> list[Put]:
        try:
            destination, posting_id, state = records.delivery_state(message)
        except records.PoisonRecord as exc:
            records.note_poison(self.reader, message, exc.reason)
            return []
        if destination != self.destination:
            return []
        return [(posting_id.encode(), None if state is None else message.value())]
