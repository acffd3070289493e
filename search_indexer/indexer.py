"""The indexer: each poll of `jobpost.postings` becomes one bulk request.

Stale writes (version conflicts) are dropped silently; 429/5xx answers and connection
errors are retried with backoff (tenacity) until they settle; a document the server
rejects for good, and a record nobody can read, go to `jobpost.search-indexer.dlq`. The
indexed version of each posting is recorded in `jobpost.deliveries` as destination
`search`, and what each version came to in `jobpost.delivery-events` (the timeline).
Offsets are committed only after the bulk request has settled and Kafka has acknowledged
every dead letter, delivery state and event of the batch.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaException, Message, Producer, TopicPartition
from elasticsearch import ApiError
from elasticsearch import ConnectionError as EsConnectionError
from prometheus_client import Counter, Histogram
from tenacity import Retrying, retry_if_exception, wait_exponential

from runtime import records
from runtime.dead_letters import dead_letter
from runtime.deliveries import event_record, publish, state_record
from runtime.http import retryable_status
from runtime.kafka import GATHERED_FETCH, coordinates, is_record, poll_batch, record_lag
from runtime.outbox import Outgoing, deliver_all
from schemas.deliveries import delivery_event, delivery_state
from schemas.enums import DeliveryOutcome
from schemas.model import DeliveryStatus, Destination, Op, PostingUpdate
from schemas.topics import Component, Topics
from search_indexer import index
from search_indexer.config import IndexerSettings
from search_indexer.index import BulkOutcome

log = logging.getLogger(__name__)

DOCUMENTS = Counter("jobpost_indexer_documents_total", "Documents by outcome", ["outcome"])
BULK_SECONDS = Histogram("jobpost_indexer_bulk_seconds", "Time for one poll to settle in the index")
# Its dead-letter topic (jobpost.search-indexer.dlq) and its counters' label. What it delivers
# to is the destination `search` (in jobpost.deliveries).
GROUP = Component.SEARCH_INDEXER


class RetryableBulk(Exception):
    """Some documents were answered with a retryable status."""


class SearchIndexer:
    def __init__(self, settings: IndexerSettings) -> None:
        self.settings = settings
        self.topics = Topics(settings.kafka.topic_prefix)
        self.es = settings.elasticsearch.client(max_retries=0, request_timeout=30)
        self._stop = threading.Event()
        self._producer: Producer | None = None

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        self._retrying(lambda: index.ensure_index(
            self.es, self.settings.alias, self.settings.index_description, self.settings.replicas
        ))  # fmt: skip
        kafka = self.settings.kafka
        consumer = Consumer(
            kafka.consumer_config(
                self.settings.group,
                # An outage of the search server holds a batch while it is retried.
                **{"max.poll.interval.ms": 900_000, **GATHERED_FETCH},
            )
        )
        producer = self._producer = Producer(kafka.producer_config())
        consumer.subscribe([self.topics.postings])
        try:
            while not self._stop.is_set():
                messages = [m for m in poll_batch(consumer, self.settings.max_batch, 0.5) if is_record(m)]
                if not messages:
                    continue
                outgoing = self._settle(messages)
                if not deliver_all(producer, outgoing, self._stop.is_set, self.settings.retry_max_wait_s):
                    break  # stopping before Kafka acknowledged them: the batch is read again
                offsets = _next_offsets(messages)
                try:
                    consumer.commit(offsets=offsets, asynchronous=False)
                except KafkaException as exc:
                    # A coordinator on the move after a broker left ("Coordinator load in
                    # progress" ended both indexers at once in `make chaos`), or a rebalance:
                    # the next batch's commit carries these offsets along, and a batch read
                    # again is harmless (external versions), as the board consumers do.
                    log.warning("commit failed (the next one covers it): %s", exc)
                    continue
                record_lag(consumer, self.settings.group, offsets)
        finally:
            consumer.close()
            producer.flush(10)

    def _settle(self, messages: list[Message]) -> list[Outgoing]:
        """Index the newest version of each posting in the batch; return the dead letters
        and delivery states to write before the batch's offsets may be committed."""
        started = time.perf_counter()
        outgoing: list[Outgoing] = []
        latest: dict[str, tuple[Message, PostingUpdate]] = {}
        superseded: list[tuple[Message, PostingUpdate]] = []
        for message in messages:
            try:
                posting_id, update = records.posting_update(message)
            except records.PoisonRecord as exc:
                records.note_poison(GROUP, message, exc.reason)
                outgoing.append(dead_letter(self.topics, GROUP, message, exc.reason))
                continue
            if update is None:
                continue  # the tombstone after a DELETED version, which is what we index
            current = latest.get(posting_id)
            if current is None or current[1].version < update.version:
                if current is not None:
                    superseded.append(current)
                latest[posting_id] = (message, update)
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
            log.warning("search server not accepting writes (%s); retry %d", state.outcome.exception(),
                        state.attempt_number)  # fmt: skip

        retrying = Retrying(
            retry=retry_if_exception(retryable),
            wait=wait_exponential(multiplier=0.2, max=self.settings.retry_max_wait_s),
            stop=lambda _state: self._stop.is_set(),
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


def _next_offsets(messages: list[Message]) -> list[TopicPartition]:
    highest: dict[tuple[str, int], int] = {}
    for m in messages:
        topic, partition, offset = coordinates(m)
        highest[topic, partition] = max(highest.get((topic, partition), -1), offset)
    return [TopicPartition(t, p, o + 1) for (t, p), o in highest.items()]
