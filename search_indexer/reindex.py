"""`jobpost reindex`: build a fresh index from the compacted topic, then switch the alias.

The live indexer keeps writing through the alias meanwhile. After the switch, a second
pass replays what was appended since the first pass ended, so a record the live indexer
wrote into the old index just before the switch is in the new one too (external
versions make every pass idempotent).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import Message, TopicPartition
from elasticsearch import Elasticsearch

from runtime import records
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.replay import replay
from schemas.model import PostingUpdate
from schemas.topics import ReaderGroup, Topics
from search_indexer import index
from search_indexer.config import IndexerSettings

log = logging.getLogger(__name__)
BATCH = 1000


@dataclass
class ReindexReport:
    index: str
    previous: list[str]
    documents: int


Progress = Callable[[int, int], None]  # (records read, records in the log)
PROGRESS_EVERY = 10_000


class _BulkLoader:
    def __init__(self, es: Elasticsearch, target: str, progress: Progress, total: int) -> None:
        self.es = es
        self.target = target
        self.pending: dict[str, PostingUpdate] = {}
        self.documents = 0
        self.read = 0
        self.progress = progress
        self.total = total

    def take(self, message: Message) -> None:
        self.read += 1
        if self.read % PROGRESS_EVERY == 0:
            self.progress(self.read, self.total)
        try:
            _, update = records.posting_update(message)
        except records.PoisonRecord as exc:
            records.note_poison("reindex", message, exc.reason)
            return
        if update is None:
            return
        current = self.pending.get(update.posting_id)
        if current is None or current.version < update.version:
            self.pending[update.posting_id] = update
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        response = self.es.bulk(operations=index.bulk_operations(self.target, list(self.pending.values())))
        failed = [
            i["index"]
            for i in response["items"]
            if i["index"]["status"] >= 300 and i["index"]["status"] != 409
        ]
        if failed:
            raise RuntimeError(f"reindex: {len(failed)} documents refused, e.g. {failed[0].get('error')}")
        self.documents += len(self.pending)
        self.pending.clear()


def reindex(settings: IndexerSettings, progress: Progress = lambda read, total: None) -> ReindexReport:
    """Build a fresh index; `progress(read, total)` is told every 10,000 records read."""
    es = settings.elasticsearch.client(request_timeout=60)
    topic = Topics(settings.kafka.topic_prefix).postings
    index.ensure_index(es, settings.alias, settings.index_description, settings.replicas)
    target = index.new_index_name(settings.alias)
    es.indices.create(index=target)
    partitions = range(settings.kafka.partitions)
    loader = _BulkLoader(es, target, progress, _records_in(settings.kafka, topic, partitions))

    ends = replay(settings.kafka, topic, partitions, loader.take, timeout_s=3600)
    loader.flush()
    progress(loader.read, loader.total)
    es.indices.refresh(index=target)
    previous = index.switch_alias(es, settings.alias, target)
    replay(settings.kafka, topic, partitions, loader.take, timeout_s=3600, start=ends)
    loader.flush()
    es.indices.refresh(index=target)
    log.info(
        "alias %s now points to %s (%d documents); previous: %s",
        settings.alias,
        target,
        loader.documents,
        previous,
    )
    return ReindexReport(target, previous, loader.documents)


def _records_in(kafka: KafkaSettings, topic: str, partitions: range) -> int:
    """How many records the partitions hold now (end minus start offsets; compaction and
    transaction markers make it an upper bound)."""
    consumer = KafkaClients(kafka).probe(Topics(kafka.topic_prefix).reader_group(ReaderGroup.REINDEX_SIZE))
    try:
        bounds = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in partitions]
    finally:
        consumer.close()
    return sum(high - low for low, high in bounds)
