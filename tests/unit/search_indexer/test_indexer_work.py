"""The indexer as the consume loop's work, with the bulk request replaced: records wait for
the next bulk request (at most `max_batch` a request, one request at a time) and are finished
only once it settled and its writes were acknowledged; a tombstone is finished at once; a
partition given up forgets what of it still waits."""

from __future__ import annotations

import asyncio
from typing import Any

from confluent_kafka import Message

from runtime.kafka import KafkaSettings
from schemas import codec
from schemas.model import Op, Posting, PostingUpdate
from search_indexer.config import IndexerSettings
from search_indexer.indexer import SearchIndexer

TOPIC = "unit.postings"


def record(posting_id: str, version: int, partition: int = 0, tombstone: bool = False) -> Message:
    update = PostingUpdate(
        posting_id, version, Op.UPDATED, f"{posting_id}:{version}", "r", Posting("t", "d", ""), 1, 1
    )
    value = None if tombstone else codec.posting_updates().encode(update)
    return Message(topic=TOPIC, partition=partition, offset=version, key=posting_id.encode(), value=value)


def indexer(bulks: list[list[str]]) -> SearchIndexer:
    """An indexer whose bulk requests are only recorded (by the batches' versions)."""
    settings = IndexerSettings(kafka=KafkaSettings(topic_prefix="unit"), max_batch=2)
    work = SearchIndexer(settings)
    work._producer = object()  # type: ignore[assignment]  # nothing is written: _settle answers no records

    def settle(batch: list[Any]) -> list[Any]:
        bulks.append([f"{w.update.posting_id}:{w.update.version}" for w in batch])
        return []

    work._settle = settle  # type: ignore[method-assign]
    return work


def test_records_wait_for_their_bulk_request_and_finish_with_it():
    async def main() -> None:
        bulks: list[list[str]] = []
        work = indexer(bulks)
        writer = asyncio.create_task(work._write())
        finished = [work.take(record("a", 0)), work.take(record("b", 0)), work.take(record("c", 0))]
        gone = work.take(record("x", 0, tombstone=True))
        assert gone.done()  # the tombstone after a DELETED version: nothing to index
        assert not any(f.done() for f in finished)
        await asyncio.wait_for(asyncio.gather(*finished), 1)
        assert bulks == [["a:0", "b:0"], ["c:0"]]  # max_batch 2
        writer.cancel()

    asyncio.run(main())


def test_a_partition_given_up_forgets_its_waiting_records():
    async def main() -> None:
        bulks: list[list[str]] = []
        work = indexer(bulks)
        kept, dropped = work.take(record("a", 0, partition=0)), work.take(record("b", 0, partition=1))
        work.close({1})
        assert dropped.cancelled() and not kept.done()
        writer = asyncio.create_task(work._write())
        await asyncio.wait_for(kept, 1)
        assert bulks == [["a:0"]]
        writer.cancel()

    asyncio.run(main())
