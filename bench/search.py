"""Search: the indexer's throughput against a direct bulk load, and write -> searchable.

20,000 updates over 5,000 postings written straight to a postings topic; the indexer (in
this process) indexes them into a fresh alias, timed until its group has committed the
end of every partition. The same documents are then bulk-loaded with the client's
`helpers.bulk` into another index. Last, 100 writes through the real API and indexer,
each timed from the accepted write until search finds it.
"""

from __future__ import annotations

import threading
import time
import uuid

import httpx
from confluent_kafka import Consumer, TopicPartition
from elasticsearch import Elasticsearch, helpers

from bench.common import local_kafka, percentiles
from jobpost_dev import stack
from jobpost_dev.processes import ApiProcess, Process, kafka_env, wait_until
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.search_server import ElasticsearchSettings
from schemas import codec
from schemas.model import Op, PostingUpdate
from schemas.search import SearchDocument
from search_indexer import index
from search_indexer.config import IndexerSettings
from search_indexer.indexer import DOCUMENTS, SearchIndexer
from tests import postings

UPDATES, POSTINGS = 20_000, 5_000


def updates() -> list[PostingUpdate]:
    ids = [f"s-{uuid.uuid4().hex[:12]}" for _ in range(POSTINGS)]
    return [
        PostingUpdate(
            posting_id=ids[n % POSTINGS],
            version=n // POSTINGS,
            op=Op.CREATED if n < POSTINGS else Op.UPDATED,
            idempotency_key=f"{ids[n % POSTINGS]}:{n // POSTINGS}",
            request_id=uuid.uuid4().hex,
            posting=postings.posting(n, title=f"Search Engineer {n}"),
            last_update_time_millis=1,
            accepted_at=1,
        )
        for n in range(UPDATES)
    ]


def indexer_rate(kafka: KafkaSettings, es_url: str, records: list[PostingUpdate]) -> float:
    producer = KafkaClients(kafka).producer()
    for update in records:
        value = codec.posting_updates().encode(update)
        producer.produce(f"{kafka.topic_prefix}.postings", key=update.posting_id, value=value)
        producer.poll(0)
    producer.flush(30)
    settings = IndexerSettings(
        kafka=kafka, elasticsearch=ElasticsearchSettings(url=es_url), alias=f"{kafka.topic_prefix}-postings"
    )
    indexer = SearchIndexer(settings)
    thread = threading.Thread(target=indexer.run)
    thread.start()
    # Timed from the first indexed document (group join and index creation excluded).
    wait_until(lambda: indexed() > 0, 120, "the first document", interval=0.001)
    started = time.perf_counter()
    probe = KafkaClients(kafka).probe(settings.group)
    wait_until(lambda: caught_up(probe, kafka), 600, "the indexer to commit every record", interval=0.1)
    elapsed = time.perf_counter() - started
    probe.close()
    indexer.stop()
    thread.join()
    return len(records) / elapsed


def indexed() -> float:
    return sum(s.value for m in DOCUMENTS.collect() for s in m.samples if s.name.endswith("_total"))


def caught_up(probe: Consumer, kafka: KafkaSettings) -> bool:
    """The group (whose committed offsets `probe` reads) has committed every partition's end."""
    topic = f"{kafka.topic_prefix}.postings"
    partitions = [TopicPartition(topic, p) for p in range(kafka.partitions)]
    committed = probe.committed(partitions, timeout=10)
    return all(c.offset == probe.get_watermark_offsets(c, timeout=10)[1] for c in committed)


def direct_rate(es_url: str, alias: str, records: list[PostingUpdate]) -> float:
    es = Elasticsearch(es_url, request_timeout=120)
    index.ensure_index(es, alias)
    target = index.new_index_name(alias)
    es.indices.create(index=target)
    actions = (
        {
            "_index": target,
            "_id": u.posting_id,
            "version": u.version,
            "version_type": "external",
            "_source": SearchDocument.of(u).to_source(),
        }
        for u in records
    )
    started = time.perf_counter()
    helpers.bulk(es, actions, chunk_size=1000, raise_on_error=False)
    return len(records) / (time.perf_counter() - started)


def searchable_latency(kafka: KafkaSettings, es_url: str, writes: int = 100) -> list[float]:
    alias = f"{kafka.topic_prefix}-live"
    api = ApiProcess(kafka, "bench", es_url, JOBPOST_API_SEARCH_ALIAS=alias)
    indexer = Process("bench-indexer", ["indexer"], {**kafka_env(kafka), "JOBPOST_INDEXER_ALIAS": alias})
    latencies = []
    try:
        api.wait_ready()
        with httpx.Client(headers=api.headers, timeout=30, base_url=api.url) as http:
            for _ in range(writes):
                word = f"zq{uuid.uuid4().hex[:10]}"
                http.post("/postings", json=postings.body(0, title=f"Latency {word}")).raise_for_status()
                started = time.perf_counter()
                found = lambda: http.get("/postings", params={"q": word}).json().get("items")  # noqa: E731
                wait_until(found, 60, "searchable", interval=0.005)
                latencies.append(time.perf_counter() - started)
    finally:
        api.stop()
        indexer.stop()
    return latencies


def main() -> None:
    es_url = stack.StackSettings().elasticsearch_url
    stack.ElasticsearchServer(stack.StackSettings()).start()
    records = updates()
    kafka = local_kafka()
    indexed = indexer_rate(kafka, es_url, records)
    direct = direct_rate(es_url, f"{kafka.topic_prefix}-direct", records)
    print(f"indexer: {indexed:.0f} updates/s; direct helpers.bulk: {direct:.0f} docs/s")
    print(f"ratio indexer / direct: {indexed / direct:.2f}")
    print(f"accepted write -> searchable: {percentiles(searchable_latency(local_kafka(), es_url))}")
