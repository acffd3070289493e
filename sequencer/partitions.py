"""The partitions of `jobpost.commands` one session serves, from the group's assignment to
serving them, without holding up the ones it already serves.

When the group gives a member partitions (another member died or left), that member's
transaction may still be open on them: until it ends — committed or aborted, at the
latest after its timeout and the broker's next sweep of timed-out transactions — neither
the group's committed offsets nor the changelog are final, and a member that restored
earlier would sequence some commands twice (`make chaos` found exactly that). Waiting for
it inside the rebalance callback stopped every partition the member already served for
that long. So a new partition is only noted: the consumer is not given it yet (the
callback assigns nothing). Between batches the session asks, without blocking, whether
its transactions have ended; one that has is restored and only then assigned, at its
committed offset, while the others go on being served.

A revoked partition is dropped at once. A lost one (the group went on without this member)
may be served by another member already: the session must end.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from runtime.kafka import end_offset
from schemas.topics import Topics
from sequencer.config import SequencerSettings
from sequencer.domain import PartitionState
from sequencer.placements import Placements
from sequencer.restore import Restorer

log = logging.getLogger(__name__)

_CHECK_EVERY_S = 0.05  # between asks whether a new partition's transactions have ended


class AssignmentLost(RuntimeError):
    """The group took this member's partitions without a revocation (its session timed
    out): another member may be serving them."""


class Partitions:
    def __init__(
        self,
        settings: SequencerSettings,
        consumer: Consumer,
        restorer: Restorer,
        placements: Placements,
        publish: Callable[[], None],
    ) -> None:
        self.settings = settings
        self.topics = Topics(settings.kafka.topic_prefix)
        self.consumer = consumer
        self.restorer = restorer
        self.placements = placements
        self.publish = publish  # the member's status changed
        self.states: dict[int, PartitionState] = {}  # served: restored and assigned
        self.waiting: dict[int, float] = {}  # given by the group, not served yet -> deadline
        self.lost = False
        self._checked_at = 0.0

    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        consumer.incremental_assign([])  # nothing yet: each is assigned once it is restored
        # A dead owner's transaction ends within its timeout, the broker's sweep of timed-out
        # transactions runs every 10 s: past both (and a restore) something else is wrong.
        deadline = time.monotonic() + 2 * self.settings.transaction_timeout_ms / 1000 + 10
        deadline += self.settings.restore_timeout_s
        for tp in partitions:
            self.waiting[tp.partition] = deadline
        self.publish()

    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        numbers = {tp.partition for tp in partitions}
        # Unassign only what the consumer was given; the library would unassign them all.
        consumer.incremental_unassign([tp for tp in consumer.assignment() if tp.partition in numbers])
        for number in numbers:
            self.states.pop(number, None)
            self.waiting.pop(number, None)
            self.placements.forget(number)
            self.restorer.stores.close(number)
        self.publish()

    def on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.lost = True
        self.on_revoke(consumer, partitions)

    def advance(self) -> None:
        """Serve the next partition whose previous owner's transactions have ended (at most
        one per call, so a restore holds up the others for one partition's time only)."""
        if self.lost:
            raise AssignmentLost("the group went on without this member")
        now = time.monotonic()
        if not self.waiting or now - self._checked_at < _CHECK_EVERY_S:
            return
        self._checked_at = now
        for number, deadline in sorted(self.waiting.items()):
            if self._settled(number):
                self._serve(number)
                return
            if now > deadline:
                raise TimeoutError(f"transactions stay open on partition {number}")

    def _settled(self, number: int) -> bool:
        try:
            return self.restorer.settled(number)
        except KafkaException as exc:  # a leader moving: ask again next turn (until the deadline)
            log.info("cannot tell yet whether partition %d settled: %s", number, exc)
            return False

    def _serve(self, number: int) -> None:
        started = time.monotonic()
        # Only now, with no transaction open, are the committed offset and the changelog final.
        (committed,) = self.consumer.committed([TopicPartition(self.topics.commands, number)], timeout=30)
        self.states[number] = self.restorer.restore(number)
        self.placements.start(number, end_offset(self.consumer, self.topics.postings, number, timeout=30))
        offset = committed.offset if committed.offset >= 0 else OFFSET_BEGINNING
        self.consumer.incremental_assign([TopicPartition(self.topics.commands, number, offset)])
        del self.waiting[number]
        self.publish()
        log.info("sequencer partition %d served from offset %d, ready in %.1f s",
                 number, committed.offset, time.monotonic() - started)  # fmt: skip
        if not self.waiting:
            log.info("sequencer serves partitions %s", sorted(self.states))
