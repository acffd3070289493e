"""What a replay request re-delivers: the events of one partition that happened at or after
a time, from both sources, found by the time index of each (`offsets_for_times`: a record's
timestamp is when it was written, at or just after its event), read to where each partition
ends now. `jobpost.listing-events` keeps 7 days, `jobpost.postings` keeps every version for
7 days (then its newest): a replay reaches a week back."""

from __future__ import annotations

from confluent_kafka import Message, TopicPartition

from runtime import records
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.replay import replay
from schemas.listing_events import ListingEvent
from schemas.topics import ReaderGroup, Topics
from webhooks import events

Found = tuple[str, int, ListingEvent]  # (source, offset, event)


def events_since(kafka: KafkaSettings, partition: int, since_ms: int) -> list[Found]:
    """Every event of the partition at or after `since_ms`, per source in offset order
    (blocking: a worker thread's job). Records nobody can use are counted and passed over."""
    topics = Topics(kafka.topic_prefix)
    found: list[Found] = []
    for source, topic in ((events.LISTING_EVENTS, topics.listing_events), (events.POSTINGS, topics.postings)):
        start = _first_offset_at(kafka, topic, partition, since_ms)
        if start is None:
            continue

        def take(message: Message, source: str = source) -> None:
            try:
                event = events.read(source, message)
            except records.PoisonRecord as exc:
                records.note_poison("webhook-replay", message, exc.reason)
                return
            offset = message.offset()
            if event is not None and event.at >= since_ms and offset is not None:
                found.append((source, offset, event))

        replay(kafka, topic, [partition], take, start={partition: start})
    return found


def _first_offset_at(kafka: KafkaSettings, topic: str, partition: int, since_ms: int) -> int | None:
    """The first offset whose timestamp is at or after `since_ms`; None when there is none."""
    consumer = KafkaClients(kafka).probe(Topics(kafka.topic_prefix).reader_group(ReaderGroup.WEBHOOK_PROBE))
    try:
        [found] = consumer.offsets_for_times([TopicPartition(topic, partition, since_ms)], timeout=10)
    finally:
        consumer.close()
    return found.offset if found.offset >= 0 else None
