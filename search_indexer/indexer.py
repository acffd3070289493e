"""The indexer: each poll of `jobpost.postings` becomes one bulk request.

Stale writes (version conflicts) are dropped silently; 429/5xx answers and connection
errors are retried with backoff (tenacity) until they settle; a document the server
rejects for good goes to `jobpost.search-indexer.dlq`. Offsets are committed only after
the bulk request has settled, and the indexed version of each posting is recorded in
`jobpost.deliveries` as destination `search`.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from elasticsearch import ApiError, Elasticsearch
from elasticsearch import ConnectionError as EsConnectionError
from prometheus_client import Counter, Histogram
from tenacity import Retrying, retry_if_exception, wait_exponential

from schemas import codec
from schemas.codec import SerializationError
from schemas.dead_letters import send_dead_letter
from schemas.deliveries import record_delivery
from schemas.kafka import poll_batch, record_lag
from schemas.topics import Topics
from search_indexer import index
from search_indexer.config import IndexerSettings

log = logging.getLogger(__name__)

DOCUMENTS = Counter("jobpost_indexer_documents_total", "Documents by outcome", ["outcome"])
BULK_SECONDS = Histogram("jobpost_indexer_bulk_seconds", "Time for one poll to settle in the index")
RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}


class RetryableBulk(Exception):
    """Some documents were answered with a retryable status."""


class SearchIndexer:
    def __init__(self, settings: IndexerSettings) -> None:
        self.settings = settings
        self.topics = Topics(settings.kafka.topic_prefix)
        self.es = Elasticsearch(settings.elasticsearch_url, max_retries=0, request_timeout=30)
        self._stop = threading.Event()

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
                **{"max.poll.interval.ms": 900_000},
            )
        )
        producer = Producer(kafka.producer_config())
        consumer.subscribe([self.topics.postings])
        try:
            while not self._stop.is_set():
                messages = poll_batch(consumer, self.settings.max_batch, 0.5)
                if messages:
                    self._settle(messages, producer)
                    producer.flush(30)
                    offsets = _next_offsets(messages)
                    consumer.commit(offsets=offsets, asynchronous=False)
                    record_lag(consumer, self.settings.group, offsets)
        finally:
            consumer.close()
            producer.flush(10)

    def _settle(self, messages: list[Message], producer: Producer) -> None:
        started = time.perf_counter()
        latest: dict[str, tuple[Message, dict[str, Any]]] = {}
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF and not error.retriable():
                    raise KafkaException(error)
                continue
            if message.value() is None:
                continue  # the tombstone after a DELETED version, which is what we index
            try:
                update = codec.posting_updates().decode(message.value())
            except SerializationError as exc:
                send_dead_letter(
                    producer, self.topics.dlq("search-indexer"), "search-indexer", message, str(exc)
                )
                continue
            current = latest.get(update["posting_id"])
            if current is None or current[1]["version"] < update["version"]:
                latest[update["posting_id"]] = (message, update)
        if latest:
            pending = list(latest.values())
            indexed: list[tuple[Message, dict[str, Any]]] = []
            rejected: list[tuple[Message, str]] = []
            self._retrying(lambda: self._bulk(pending, indexed, rejected))
            for message, reason in rejected:
                send_dead_letter(
                    producer, self.topics.dlq("search-indexer"), "search-indexer", message, reason
                )
            self._record_progress(producer, indexed)
        BULK_SECONDS.observe(time.perf_counter() - started)

    def _bulk(
        self,
        pending: list[tuple[Message, dict[str, Any]]],
        indexed: list[tuple[Message, dict[str, Any]]],
        rejected: list[tuple[Message, str]],
    ) -> None:
        """One bulk request for `pending`. What settles moves to `indexed` / `rejected` (or
        is dropped as stale); raises RetryableBulk, leaving the rest in `pending`."""
        operations = index.bulk_operations(self.settings.alias, [u for _, u in pending])
        response = self.es.bulk(operations=operations)
        retry: list[tuple[Message, dict[str, Any]]] = []
        for (message, update), item in zip(pending, response["items"], strict=True):
            status = item["index"]["status"]
            if status < 300:
                DOCUMENTS.labels("indexed").inc()
                indexed.append((message, update))
            elif status == 409:
                DOCUMENTS.labels("stale").inc()  # a newer version is indexed already
            elif status in RETRYABLE_STATUS:
                retry.append((message, update))
            else:
                DOCUMENTS.labels("rejected").inc()
                rejected.append((message, str(item["index"].get("error"))))
        pending[:] = retry
        if retry:
            DOCUMENTS.labels("retried").inc(len(retry))
            raise RetryableBulk(f"{len(retry)} documents answered with a retryable status")

    def _retrying(self, attempt: Any) -> Any:
        def retryable(exc: BaseException) -> bool:
            if isinstance(exc, ApiError):
                return exc.meta.status in RETRYABLE_STATUS
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

    def _record_progress(self, producer: Producer, indexed: list[tuple[Message, dict[str, Any]]]) -> None:
        for message, update in indexed:
            record_delivery(
                producer,
                self.topics.deliveries,
                message.partition(),
                destination="search",
                posting_id=update["posting_id"],
                status="CLOSED" if update["op"] == "DELETED" else "DELIVERED",
                delivered_version=update["version"],
            )


def _next_offsets(messages: list[Message]) -> list[TopicPartition]:
    highest: dict[tuple[str, int], int] = {}
    for m in messages:
        key = (m.topic(), m.partition())
        highest[key] = max(highest.get(key, -1), m.offset())
    return [TopicPartition(t, p, o + 1) for (t, p), o in highest.items()]
