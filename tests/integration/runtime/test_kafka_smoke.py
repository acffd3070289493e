"""A transactional PostingUpdate read back by a read_committed consumer, on the real broker."""

import uuid

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

from runtime.kafka_clients import KafkaClients
from runtime.topics import TopicMismatchError, ensure_topics
from schemas import codec
from schemas.model import Op, PostingUpdate
from schemas.partitioning import partition_for
from schemas.topics import Topics
from tests import postings
from tests.processes import wait_until


def test_transactional_update_is_read_committed_on_javas_partition(kafka, topics: Topics):
    producer = KafkaClients(kafka).transactional(f"smoke-{uuid.uuid4()}")
    producer.init_transactions(30)
    posting_ids = [f"posting-{i}" for i in range(12)]
    records = {}
    producer.begin_transaction()
    for version, posting_id in enumerate(posting_ids):
        records[posting_id] = PostingUpdate(
            posting_id=posting_id,
            version=version,
            op=Op.CREATED,
            idempotency_key=f"{posting_id}:{version}",
            request_id="smoke",
            posting=postings.posting(0, title="Smoke"),
            last_update_time_millis=1,
            accepted_at=1,
        )
        producer.produce(
            topics.postings, key=posting_id, value=codec.posting_updates().encode(records[posting_id])
        )
    producer.commit_transaction(30)

    # An aborted transaction must stay invisible to read_committed readers.
    producer.begin_transaction()
    producer.produce(topics.postings, key="aborted", value=b"never seen")
    producer.abort_transaction(30)

    consumer = KafkaClients(kafka).reader(f"{kafka.topic_prefix}-smoke")
    consumer.assign([TopicPartition(topics.postings, p, 0) for p in range(kafka.partitions)])
    seen = {}
    try:
        for _ in range(100):
            message = consumer.poll(0.5)
            if message is None or message.error():
                if len(seen) == len(posting_ids):
                    break
                continue
            seen[message.key().decode()] = (
                message.partition(),
                codec.posting_updates().decode(message.value()),
            )
    finally:
        consumer.close()

    assert set(seen) == set(posting_ids)
    for posting_id, (partition, record) in seen.items():
        assert partition == partition_for(posting_id, kafka.partitions)
        assert record == records[posting_id]


def test_ensure_topics_is_idempotent_and_reports_mismatch(kafka, topics: Topics):
    assert ensure_topics(kafka) == []  # the fixture created them already
    with pytest.raises(TopicMismatchError, match="partitions"):
        ensure_topics(kafka.model_copy(update={"partitions": 4}))


def test_topics_made_before_log_append_time_are_switched_to_it(kafka, topics: Topics):
    admin = KafkaClients(kafka).admin()
    resource = ConfigResource(ConfigResource.Type.TOPIC, topics.commands)
    entry = ConfigEntry("message.timestamp.type", "CreateTime", incremental_operation=AlterConfigOpType.SET)
    change = ConfigResource(ConfigResource.Type.TOPIC, topics.commands, incremental_configs=[entry])
    admin.incremental_alter_configs([change])[change].result(30)
    # The change is acknowledged before every broker answers with it: wait until it does.
    wait_until(
        lambda: (
            admin.describe_configs([resource])[resource].result(30)["message.timestamp.type"].value
            == "CreateTime"
        ),
        30,
        "the commands' timestamps to be the producers'",
    )

    ensure_topics(kafka)

    wait_until(
        lambda: (
            admin.describe_configs([resource])[resource].result(30)["message.timestamp.type"].value
            == "LogAppendTime"
        ),
        30,
        "the commands' timestamps to be the broker's",
    )
