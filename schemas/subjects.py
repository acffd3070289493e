"""Which record type is the value of which topic: the Schema Registry subjects of a system.

A subject is named after its topic, `<topic>-value` (the registry clients' default
TopicNameStrategy), so Kafka Connect, ksqlDB and `AvroDeserializer` find a topic's
schemas without being told. Dead-letter topics have none: their values are the original
records' bytes, whichever record type and wire format those had.
"""

from __future__ import annotations

from typing import Any

from schemas import codec
from schemas.codec import AvroCodec
from schemas.topics import BOARDS, Topics


def subject(topic: str) -> str:
    return f"{topic}-value"


def value_codecs(topics: Topics) -> dict[str, AvroCodec]:
    """Every topic whose values this system encodes, with the codec of their record type."""
    typed: dict[str, Any] = {
        topics.postings: codec.posting_updates(),
        topics.commands: codec.commands(),
        topics.replies: codec.replies(),
        topics.deliveries: codec.delivery_states(),
        topics.delivery_events: codec.delivery_events(),
        topics.sequencer_state: codec.sequencer_states(),
        topics.audit: codec.audit_events(),
        **{topics.redrive(board): codec.redrive_requests() for board in BOARDS},
        topics.listing_events: codec.listing_events(),
        topics.webhooks: codec.webhook_endpoints(),
        topics.webhook_pending: codec.webhook_deliveries(),
        topics.webhook_replays: codec.webhook_replays(),
        topics.board_status: codec.board_statuses(),
    }
    return {topic: record_codec.avro for topic, record_codec in typed.items()}
