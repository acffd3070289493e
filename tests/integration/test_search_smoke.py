"""An index + search round trip on the real search server with the official client."""

from elasticsearch import Elasticsearch


def test_external_versions_and_title_search(elasticsearch_url: str, unique: str):
    es = Elasticsearch(elasticsearch_url)
    index = f"{unique}-postings"
    es.indices.create(
        index=index,
        settings={"number_of_shards": 1, "number_of_replicas": 0},
        mappings={"properties": {"title": {"type": "text"}, "version": {"type": "long"}}},
    )
    try:
        es.bulk(
            operations=[
                {"index": {"_index": index, "_id": "a", "version": 5, "version_type": "external"}},
                {"title": "Senior Kafka Engineer", "version": 5},
                {"index": {"_index": index, "_id": "b", "version": 1, "version_type": "external"}},
                {"title": "Barista", "version": 1},
            ],
            refresh=True,
        )
        stale = es.bulk(
            operations=[
                {"index": {"_index": index, "_id": "a", "version": 3, "version_type": "external"}},
                {"title": "Junior Kafka Engineer", "version": 3},
            ],
            refresh=True,
        )
        assert stale["items"][0]["index"]["status"] == 409  # Elasticsearch drops the stale write

        hits = es.search(index=index, query={"match": {"title": "kafka"}})["hits"]["hits"]
        assert [(h["_id"], h["_source"]["version"]) for h in hits] == [("a", 5)]
    finally:
        es.indices.delete(index=index)
