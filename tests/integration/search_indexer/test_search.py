"""The indexer and title search against real Kafka and the real search server."""

import subprocess
import sys
from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch

from runtime.kafka_clients import KafkaClients
from runtime.search_server import ElasticsearchSettings
from schemas import codec
from search_indexer.config import IndexerSettings
from search_indexer.reindex import reindex
from tests import postings
from tests.processes import (
    ApiProcess,
    Process,
    free_port,
    kafka_env,
    read_postings,
    running_api,
    wait_until,
)

TOKEN = "search-token"


@pytest.fixture
def alias(unique) -> str:
    return f"{unique}-postings"


@pytest.fixture
def indexer_env(kafka, elasticsearch_url, alias) -> dict[str, str]:
    return {
        **kafka_env(kafka),
        "JOBPOST_INDEXER_ELASTICSEARCH_URL": elasticsearch_url,
        "JOBPOST_INDEXER_ALIAS": alias,
        "JOBPOST_INDEXER_RETRY_MAX_WAIT_S": "1",
    }


@pytest.fixture
def indexer(indexer_env) -> Iterator[Process]:
    process = Process("indexer", ["indexer"], indexer_env)
    yield process
    process.stop()


@pytest.fixture
def api(kafka, elasticsearch_url, alias) -> Iterator[ApiProcess]:
    with running_api(kafka, TOKEN, elasticsearch_url, JOBPOST_API_SEARCH_ALIAS=alias) as process:
        yield process


def found(api: ApiProcess, q: str, field: str, limit: int | None = None) -> list | None:
    """`field` of each posting search finds; None while the search server answers 503 (a new
    index starting)."""
    page = api.client.search(q, limit=limit, expect=(200, 503))
    return [item[field] for item in page["items"]] if page.status_code == 200 else None


def ids_found(api: ApiProcess, q: str) -> list[str] | None:
    return found(api, q, "id")


def versions_found(api: ApiProcess, q: str) -> list[int] | None:
    return found(api, q, "version")


def test_search_follows_create_replace_and_delete(api, indexer):
    posting = api.client.create(title="Platypus Keeper")
    wait_until(lambda: ids_found(api, "platypus") == [posting["id"]], 60, "the new title to be searchable")

    api.client.replace(posting["id"], title="Wombat Keeper")
    wait_until(lambda: ids_found(api, "wombat") == [posting["id"]], 60, "the replaced title to be searchable")
    assert ids_found(api, "platypus") == []
    assert api.client.search("wombat")["items"][0]["version"] == 1

    api.client.delete(posting["id"])
    wait_until(lambda: ids_found(api, "wombat") == [], 60, "the deleted posting to leave the results")


def test_a_posting_found_reads_as_it_does_at_its_own_address(api, indexer):
    """One posting, one answer: a hit is the posting as `GET /postings/{id}` gives it, every
    field (the employer, the salary, the locations, the expiry) alike."""
    created = api.client.create(title="Narwhal Data Engineer")
    wait_until(lambda: ids_found(api, "narwhal") == [created["id"]], 60, "the posting to be searchable")

    (hit,) = api.client.search("narwhal")["items"]
    assert hit == api.client.get(created["id"]) == created
    assert hit["employer"] == "default"


def test_description_text_is_not_searched_by_default(api, indexer):
    gardener = api.client.create(
        title="Gardener",
        description=postings.body(4)["description"] + " You will look after a marsupial habitat.",
    )
    marker = api.client.create(title="Marsupial Vet")
    # Both are indexed (each is found by its title) before the description is searched for.
    wait_until(lambda: ids_found(api, "gardener") == [gardener["id"]], 60, "the gardener to be indexed")
    wait_until(lambda: ids_found(api, "vet") == [marker["id"]], 60, "the vet to be indexed")
    assert ids_found(api, "marsupial") == [marker["id"]]
    assert ids_found(api, "habitat") == []


def test_best_first_and_paged_with_a_cursor(api, indexer):
    exact = api.client.create(title="Kafka")
    others = [api.client.create(title=f"Kafka Streams Engineer {i}")["id"] for i in range(5)]
    wait_until(lambda: len(ids_found(api, "kafka") or []) == 6, 60, "all six to be searchable")

    pages, cursor = [], None
    while True:
        page = api.client.search("kafka", limit=4, cursor=cursor)
        pages.append([item["id"] for item in page["items"]])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    listed = [i for page in pages for i in page]
    assert listed[0] == exact["id"]  # the shortest title matches best
    assert sorted(listed) == sorted([exact["id"], *others])
    assert [len(p) for p in pages] == [4, 2]


def test_bad_search_parameters_are_422_naming_the_parameter(api):
    for q, limit, cursor, named in (
        ("", None, None, "q"),
        ("x", 0, None, "limit"),
        ("x", 101, None, "limit"),
        ("x", None, "garbage", "cursor"),
        (None, None, None, "q"),
    ):
        problem = api.client.search(q, limit=limit, cursor=cursor, expect=422)
        where = [e["loc"] for e in problem.get("errors", [])]
        assert ["query", named] in where or named in problem["detail"], (named, problem)


def test_a_stale_replay_leaves_the_newer_version(api, indexer, kafka, topics, elasticsearch_url, alias):
    posting = api.client.create(title="Otter Trainer v0")
    for v in range(1, 6):
        api.client.replace(posting["id"], title=f"Otter Trainer v{v}")
    wait_until(lambda: versions_found(api, "otter") == [5], 60, "version 5 indexed")

    # Replay version 3 of the posting, as a consumer restarted from an old offset would.
    key, partition, v3 = next(r for r in read_postings(kafka, topics.postings) if r[2] and r[2].version == 3)
    producer = KafkaClients(kafka).producer()
    producer.produce(topics.postings, key=key, value=codec.posting_updates().encode(v3), partition=partition)
    producer.flush(10)
    marker = api.client.create(title="Otter Marker")
    wait_until(lambda: marker["id"] in (ids_found(api, "marker") or []), 60, "a later record to be indexed")

    es = Elasticsearch(elasticsearch_url)
    document = es.get(index=alias, id=posting["id"])
    assert document["_version"] == 5
    assert document["_source"]["title"] == "Otter Trainer v5"


def test_reindex_gives_the_same_answers(api, indexer, kafka, elasticsearch_url, alias):
    created = [api.client.create(title=f"Heron Watcher {i}")["id"] for i in range(4)]
    api.client.replace(created[0], title="Heron Watcher renamed")
    api.client.delete(created[1])
    wait_until(lambda: len(ids_found(api, "heron") or []) == 3, 60, "three live herons")
    before = sorted((i["id"], i["version"], i["title"]) for i in api.client.search("heron")["items"])
    old_index = next(iter(Elasticsearch(elasticsearch_url).indices.get_alias(name=alias)))

    told: list[tuple[int, int]] = []
    report = reindex(
        IndexerSettings(kafka=kafka, elasticsearch=ElasticsearchSettings(url=elasticsearch_url), alias=alias),
        lambda read, total: told.append((read, total)),
    )

    assert report.previous == [old_index] and report.index != old_index
    read, total = told[-1]
    assert 7 <= read <= total  # 4 creates, 1 replace, 1 delete + its tombstone, of the log's records
    after = sorted((i["id"], i["version"], i["title"]) for i in api.client.search("heron")["items"])
    assert after == before


def test_nothing_is_lost_while_the_search_server_is_away(api, indexer_env, elasticsearch_url):
    """For its first 20 s the indexer's search server refuses connections while updates
    flow; then it answers, and the index catches up with every version."""
    port = free_port()
    outage_s = 20
    proxy = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.tcp_proxy",
            str(port),
            elasticsearch_url.rsplit(":", 1)[1],
            str(outage_s),
        ]
    )
    indexer = Process(
        "indexer",
        ["indexer"],
        {**indexer_env, "JOBPOST_INDEXER_ELASTICSEARCH_URL": f"http://127.0.0.1:{port}"},
    )
    try:
        ids = [api.client.create(title=f"Lynx Ranger {i}")["id"] for i in range(30)]
        for i in ids[:10]:
            api.client.replace(i, title=f"Lynx Ranger {i} updated")
        assert ids_found(api, "lynx") == []

        def caught_up() -> bool:
            # 503 while the index the indexer just created starts its shard
            return len(found(api, "lynx", "id", limit=100) or []) == 30

        wait_until(caught_up, 90, "the index to catch up")
        versions = sorted(item["version"] for item in api.client.search("lynx", limit=100)["items"])
        assert versions == [0] * 20 + [1] * 10
        assert indexer.popen.poll() is None, "the indexer rode out the outage"
    finally:
        indexer.stop()
        proxy.kill()
