"""A partition's deliveries as `jobpost.webhook-pending` holds them, read back on
assignment: those still waiting, and those finished lately.

The topic is compacted, and read from its beginning: what a restore reads is what waits
and what finished since the log was last cleaned (its segments close every 10 minutes).
A delivery's record followed by its tombstone in what is read finished lately: its event may
be read again from a source whose offset was not committed yet (a restart, a rebalance),
and `Restored.finished` lets the dispatcher recognise it instead of sending it twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from confluent_kafka import Message

from runtime import records
from runtime.kafka import KafkaSettings
from runtime.replay import replay
from schemas.topics import Topics
from schemas.webhooks import WebhookDelivery


@dataclass
class Restored:
    waiting: dict[str, WebhookDelivery] = field(default_factory=dict)  # key -> the delivery
    finished: dict[str, tuple[str, int]] = field(default_factory=dict)  # key -> (source, offset)

    def fold(self, message: Message) -> None:
        try:
            key, delivery = records.webhook_delivery(message)
        except records.PoisonRecord as exc:
            records.note_poison("webhook-pending", message, exc.reason)
            return
        if delivery is not None:
            self.waiting[key] = delivery
            self.finished.pop(key, None)
            return
        done = self.waiting.pop(key, None)
        if done is not None:
            self.finished[key] = (done.source, done.source_offset)


def restore(kafka: KafkaSettings, partition: int) -> Restored:
    """Read the partition of `jobpost.webhook-pending` to its end (blocking: a worker
    thread's job)."""
    restored = Restored()
    replay(kafka, Topics(kafka.topic_prefix).webhook_pending, [partition], restored.fold)
    return restored
