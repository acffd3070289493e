"""N postings written straight to the log, as the real system would have left them.

For each posting: its version 0 (CREATED) in `<prefix>.postings`, then the sequencer's
small state of it in `<prefix>.sequencer-state` (pointing at that version's offset), then
a DELIVERED state for LinkedIn and Indeed in `<prefix>.deliveries`, all on the posting's
partition; finally the board consumers and the indexer have committed the end of every
postings partition, so nothing is delivered again. One producer with big batches, the
real codec and the real partitioner: a million postings take minutes, not an hour.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)

from consumers.config import ConsumerSettings
from runtime.deliveries import state_record
from runtime.kafka import KafkaSettings, produce_waiting
from runtime.kafka_clients import KafkaClients
from runtime.topics import ensure_topics
from schemas import codec
from schemas.changelog import SequencerState
from schemas.deliveries import DeliveryState
from schemas.enums import DeliveryStatus
from schemas.model import Destination, Op, Posting, PostingUpdate
from schemas.partitioning import partition_for
from schemas.topics import Topics
from search_indexer.config import IndexerSettings

DESCRIPTION_CHARS = 1500
_WORDS = (
    "We build streaming systems in Python and Kafka. You will own services end to end, from design "
    "to on-call, review code with care, measure before you optimise, and write for the next reader. "
    "Remote within Europe, flexible hours, a learning budget and a team that ships every day. "
)


class SeedError(RuntimeError):
    """Kafka refused records of the seed."""


@dataclass(frozen=True)
class Seeded:
    posting_ids: list[str]
    partitions: list[int]  # of each posting, in the same order
    postings_end: dict[int, int]  # end offset of each postings partition
    seconds: float

    def on_partition(self, partition: int) -> list[str]:
        return [p for p, n in zip(self.posting_ids, self.partitions, strict=True) if n == partition]


def seed(kafka: KafkaSettings, n: int, progress: Callable[[str], None] = print) -> Seeded:
    """Write n postings with their sequencer and delivery states; commit the consumers'
    offsets at the end of the postings topic."""
    started = time.perf_counter()
    ensure_topics(kafka)
    topics = Topics(kafka.topic_prefix)
    ids = [str(uuid.uuid4()) for _ in range(n)]
    partitions = [partition_for(posting_id, kafka.partitions) for posting_id in ids]
    producer = KafkaClients(kafka).producer(bulk=True)
    offsets = _write_postings(producer, topics.postings, ids, partitions)
    progress(f"seed: {n:,} postings written ({time.perf_counter() - started:.0f} s)")
    _write_states(producer, topics, ids, partitions, offsets)
    progress(f"seed: sequencer and delivery states written ({time.perf_counter() - started:.0f} s)")
    ends = end_offsets(kafka, topics.postings)
    commit_offsets(kafka, consumer_groups(kafka), topics.postings, ends)
    return Seeded(ids, partitions, ends, time.perf_counter() - started)


def consumer_groups(kafka: KafkaSettings) -> list[str]:
    """The groups that read postings and must not deliver the seed again."""
    boards = [
        ConsumerSettings(kafka=kafka, destination=d).group for d in (Destination.LINKEDIN, Destination.INDEED)
    ]
    return [*boards, IndexerSettings(kafka=kafka).group]


class _Reports:
    """Delivery reports: the offset of each record, and the errors."""

    def __init__(self, n: int) -> None:
        self.offsets = [-1] * n
        self.errors: list[str] = []

    def callback(self, index: int) -> Callable[[KafkaError | None, Message], None]:
        def report(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                self.errors.append(str(error))
            else:
                self.offsets[index] = message.offset() or 0

        return report

    def check(self) -> None:
        if self.errors:
            raise SeedError(f"{len(self.errors)} records refused, e.g. {self.errors[0]}")


def _write_postings(producer: Producer, topic: str, ids: list[str], partitions: list[int]) -> list[int]:
    encode = codec.posting_updates().encode
    reports = _Reports(len(ids))
    now = time.time_ns() // 1_000_000
    for i, (posting_id, partition) in enumerate(zip(ids, partitions, strict=True)):
        update = PostingUpdate(
            posting_id=posting_id,
            version=0,
            op=Op.CREATED,
            idempotency_key=f"{posting_id}:0",
            request_id=uuid.uuid4().hex,
            posting=Posting(f"Stream Processing Engineer {i}", _description(i)),
            last_update_time_millis=now,
            accepted_at=now,
        )
        produce_waiting(producer, topic, posting_id, encode(update), partition, reports.callback(i))
    _flush(producer)
    reports.check()
    return reports.offsets


def _write_states(
    producer: Producer, topics: Topics, ids: list[str], partitions: list[int], offsets: list[int]
) -> None:
    encode_state = codec.sequencer_states().encode
    reports = _Reports(1)
    report = reports.callback(0)
    now = time.time_ns() // 1_000_000
    for posting_id, partition, offset in zip(ids, partitions, offsets, strict=True):
        state = SequencerState(
            posting_id, version=0, deleted=False, last_update_time_millis=now, offset=offset
        )
        produce_waiting(producer, topics.sequencer_state, posting_id, encode_state(state), partition, report)
        for destination in (Destination.LINKEDIN, Destination.INDEED):
            delivered = DeliveryState(
                destination, posting_id, DeliveryStatus.DELIVERED, delivered_version=0, updated_at=now
            )
            record = state_record(topics.deliveries, partition, delivered)
            produce_waiting(producer, record.topic, record.key, record.value, partition, report)
    _flush(producer)
    reports.check()


def _flush(producer: Producer, timeout: float = 600.0) -> None:
    if producer.flush(timeout):
        raise SeedError(f"records still unsent after {timeout:.0f} s")


def _description(i: int) -> str:
    text = _WORDS * (DESCRIPTION_CHARS // len(_WORDS) + 2)
    start = i % len(_WORDS)
    return text[start : start + DESCRIPTION_CHARS]


def end_offsets(kafka: KafkaSettings, topic: str) -> dict[int, int]:
    consumer = KafkaClients(kafka).probe("bench-seed-probe", committed=False)
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
            for p in range(kafka.partitions)
        }
    finally:
        consumer.close()


def commit_offsets(kafka: KafkaSettings, groups: list[str], topic: str, ends: dict[int, int]) -> None:
    admin = KafkaClients(kafka).admin()
    for group in groups:
        request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p, o) for p, o in ends.items()])
        for future in admin.alter_consumer_group_offsets([request]).values():
            future.result(30)
