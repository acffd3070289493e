"""The indexer: the search server follows `jobpost.postings`, one bulk request at a time.

It is a work of the consume loop (`runtime.consume_loop`): the loop reads the records,
dead-letters a record nobody can read, and commits each partition's finished prefix; here
each record waits for the next bulk request, which carries the newest version of each
posting among up to `max_batch` waiting records. Stale writes (version conflicts) are
dropped silently; 429/5xx answers and connection errors are retried with backoff (tenacity)
until they settle; a document the server rejects for good goes to
`jobpost.search-indexer.dlq`. The indexed version of each posting is recorded in
`jobpost.deliveries` as destination `search`, and what each version came to in
`jobpost.delivery-events` (the timeline). A record is finished only after its bulk request
has settled and Kafka has acknowledged every dead letter, delivery state and event of it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Message, Producer
from elasticsearch import ApiError
from elasticsearch import ConnectionError as EsConnectionError
from prometheus_client import Counter, Histogram
from tenacity import Retrying, retry_if_exception, wait_exponential

from runtime import records
from runtime.consume_loop import ConsumeLoop, Source
from runtime.dead_letters import dead_letter
from runtime.deliveries import event_record, publish, state_record
from runtime.http import retryable_status
from runtime.kafka import coordinates
from runtime.kafka_clients import KafkaClients
from runtime.outbox import Outgoing, deliver
from schemas.deliveries import delivery_event, delivery_state
from schemas.enums import DeliveryOutcome, DeliveryStatus
from schemas.model import Destination, Op, PostingUpdate
from schemas.topics import Component, Topics
from search_indexer import index
from search_indexer.config import IndexerSettings
from search_indexer.index import BulkOutcome

log = logging.getLogger(__name__)

DOCUMENTS = Counter("jobpost_indexer_documents_total", "Documents by outcome", ["outcome"])
BULK_SECONDS = Histogram("jobpost_indexer_bulk_seconds", "Time for one bulk request to settle in the index")
# Its dead-letter topic (jobpost.search-indexer.dlq) and its counters' label. What it delivers
# to is the destination `search` (in jobpost.deliveries).
GROUP = Component.SEARCH_INDEXER


class RetryableBulk(Exception):
    """Some documents were answered with a retryable status."""


@dataclass(frozen=True, eq=False)
class _Waiting:
    """A version read, waiting for its bulk request."""

    message: Message
    update: PostingUpdate
    finished: asyncio.Future[None]


class SearchIndexer:
    def __init__(self, settings: IndexerSettings) -> None:
        self.settings = settings
        self.topics = Topics(settings.kafka.topic_prefix)
        self.es = settings.elasticsearch.client(max_retries=0, request_timeout=30)
        self._stopping = threading.Event()  # read by the bulk retries, on a worker thread
        self._loop: asyncio.AbstractEventLoop | None = None
        self._consume: ConsumeLoop | None = None
        self._producer: Producer | None = None
        self._waiting: list[_Waiting] = []
        self._arrived = asyncio.Event()

    def stop(self) -> None:
        """Stop (from any thread, a signal handler's included)."""
        self._stopping.set()
        if self._loop is not None and self._consume is not None:
            self._loop.call_soon_threadsafe(self._consume.stop)

    def run(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        await asyncio.to_thread(
            self._retrying,
            lambda: index.ensure_index(
                self.es, self.settings.alias, self.settings.index_description, self.settings.replicas
            ),
        )
        clients = KafkaClients(self.settings.kafka)
        self._producer = clients.producer()
        self._consume = ConsumeLoop(
            self,
            self._producer,
            self.topics,
            member=clients.member(self.settings.group, gathered=True),
            main=Source(self.topics.postings, GROUP, dead_letters=GROUP),
            group=self.settings.group,
            max_buffered=2 * self.settings.max_batch,
        )
        if self._stopping.is_set():
            self._consume.stop()
        writer = asyncio.create_task(self._write())
        writer.add_done_callback(lambda _: self._consume.stop() if self._consume else None)
        try:
            await self._consume.run()
        finally:
            writer.cancel()
            (ended,) = await asyncio.gather(writer, return_exceptions=True)
        if isinstance(ended, Exception) and not self._stopping.is_set():
            raise RuntimeError("the indexer's writes failed") from ended

    # The consume loop's work.

    async def open(self, partition: int) -> None:
        """Nothing to restore: the index is its own state."""

    def take(self, message: Message) -> Awaitable[None]:
        _, update = records.posting_update(message)
        finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if update is None:
            finished.set_result(None)  # the tombstone after a DELETED version, which is what we index
        else:
            self._waiting.append(_Waiting(message, update, finished))
            self._arrived.set()
        return finished

    def close(self, partitions: set[int]) -> None:
        gone = [w for w in self._waiting if coordinates(w.message)[1] in partitions]
        for waiting in gone:
            waiting.finished.cancel()
        self._waiting = [w for w in self._waiting if not w.finished.cancelled()]

    async def _write(self) -> None:
        """One bulk request at a time, for what waits (at most `max_batch` records)."""
        assert self._producer is not None
        while True:
            await self._arrived.wait()
            self._arrived.clear()
            while self._waiting:
                batch = self._waiting[: self.settings.max_batch]
                del self._waiting[: self.settings.max_batch]
                outgoing = await asyncio.to_thread(self._settle, batch)
                wait_s = self.settings.retry_max_wait_s
                await asyncio.gather(*(deliver(self._producer, record, wait_s) for record in outgoing))
                for waiting in batch:
                    if not waiting.finished.done():
                        waiting.finished.set_result(None)

    def _settle(self, batch: list[_Waiting]) -> list[Outgoing]:
        """Index the newest version of each posting in the batch; return the dead letters,
        delivery states and events to write before the batch is finished."""
        started = time.perf_counter()
        outgoing: list[Outgoing] = []
        latest: dict[str, tuple[Message, PostingUpdate]] = {}
        superseded: list[tuple[Message, PostingUpdate]] = []
        for waiting in batch:
            message, update = waiting.message, waiting.update
            current = latest.get(update.posting_id)
            if current is None or current[1].version < update.version:
                if current is not None:
                    superseded.append(current)
                latest[update.posting_id] = (message, update)
        outgoing += [
            self._event(m, u, DeliveryOutcome.SKIPPED, 0, "superseded in the same batch")
            for m, u in superseded
        ]
        if latest:
            pending = list(latest.values())
            indexed: list[tuple[Message, PostingUpdate, int]] = []
            rejected: list[tuple[Message, PostingUpdate, str, int]] = []
            attempts = itertools.count(1)
            self._retrying(lambda: self._bulk(pending, indexed, rejected, next(attempts)))
            for m, update, reason, attempt in rejected:
                outgoing.append(dead_letter(self.topics, GROUP, m, reason, posting_id=records.text_key(m)))
                outgoing.append(self._event(m, update, DeliveryOutcome.DEAD_LETTERED, attempt, reason))
            for m, update, attempt in indexed:
                outgoing.append(self._progress(m, update))
                closed = update.op == Op.DELETED
                outcome = DeliveryOutcome.CLOSED if closed else DeliveryOutcome.DELIVERED
                outgoing.append(self._event(m, update, outcome, attempt))
        BULK_SECONDS.observe(time.perf_counter() - started)
        return outgoing

    def _bulk(
        self,
        pending: list[tuple[Message, PostingUpdate]],
        indexed: list[tuple[Message, PostingUpdate, int]],
        rejected: list[tuple[Message, PostingUpdate, str, int]],
        attempt: int,
    ) -> None:
        """One bulk request (the `attempt`th) for `pending`. What settles moves to `indexed`
        / `rejected` (or is dropped as stale); raises RetryableBulk, leaving the rest in
        `pending`, each announced on the timeline as retrying."""
        operations = index.bulk_operations(self.settings.alias, [u for _, u in pending])
        response = self.es.bulk(operations=operations)
        retry: list[tuple[Message, PostingUpdate]] = []
        for entry, item in zip(pending, response["items"], strict=True):
            outcome, reason = index.classify(item)
            DOCUMENTS.labels(outcome).inc()
            if outcome == BulkOutcome.INDEXED:
                indexed.append((*entry, attempt))
            elif outcome == BulkOutcome.RETRY:
                retry.append(entry)
                if self._producer is not None:
                    publish(self._producer, self._event(*entry, DeliveryOutcome.RETRYING, attempt, reason))
            elif outcome == BulkOutcome.REJECTED:
                rejected.append((*entry, reason, attempt))
            # BulkOutcome.STALE: a newer version is indexed; nothing to do
        pending[:] = retry
        if retry:
            raise RetryableBulk(f"{len(retry)} documents answered with a retryable status")

    def _retrying(self, attempt: Any) -> Any:
        def retryable(exc: BaseException) -> bool:
            if isinstance(exc, ApiError):
                return retryable_status(exc.meta.status)
            return isinstance(exc, RetryableBulk | EsConnectionError)

        def log_retry(state: Any) -> None:
            error, attempt = state.outcome.exception(), state.attempt_number
            log.warning("search server not accepting writes (%s); retry %d", error, attempt)

        retrying = Retrying(
            retry=retry_if_exception(retryable),
            wait=wait_exponential(multiplier=0.2, max=self.settings.retry_max_wait_s),
            stop=lambda _state: self._stopping.is_set(),
            before_sleep=log_retry,
            reraise=True,
        )
        return retrying(attempt)

    def _progress(self, message: Message, update: PostingUpdate) -> Outgoing:
        state = delivery_state(
            Destination.SEARCH,
            update.posting_id,
            status=DeliveryStatus.CLOSED if update.op == Op.DELETED else DeliveryStatus.DELIVERED,
            delivered_version=update.version,
        )
        return state_record(self.topics.deliveries, coordinates(message)[1], state)

    def _event(
        self,
        message: Message,
        update: PostingUpdate,
        outcome: DeliveryOutcome,
        attempt: int,
        error: str | None = None,
    ) -> Outgoing:
        event = delivery_event(
            Destination.SEARCH, update.posting_id, update.version, outcome, attempt, error=error
        )
        return event_record(self.topics.delivery_events, coordinates(message)[1], event)
