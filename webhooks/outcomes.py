"""Where the dispatcher's outcomes go, each returning once Kafka acknowledged it: a delivery
queued or retrying to `jobpost.webhook-pending` (keyed `{endpoint_id}/{event_id}`, on the
posting's partition number), its tombstone once it waits no longer, its dead letter to
`jobpost.webhooks.dlq` (the delivery, with the dead-letter headers), and an endpoint
disabled after a 410 to `jobpost.webhooks`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from confluent_kafka import Producer

from runtime.outbox import Outgoing, deliver
from schemas import codec
from schemas.dead_letters import DeadLetterHeaders
from schemas.topics import Component, Topics
from schemas.webhooks import WebhookEndpoint
from webhooks.clock import Clock, SystemClock
from webhooks.endpoints import EndpointRegistry
from webhooks.lanes import Queued

log = logging.getLogger(__name__)


class KafkaOutcomes:
    def __init__(
        self,
        producer: Producer,
        topics: Topics,
        registry: EndpointRegistry,
        clock: Clock | None = None,
        on_finished: Callable[[Queued], None] = lambda _queued: None,
    ) -> None:
        self.producer = producer
        self.topics = topics
        self.registry = registry
        self.clock = clock or SystemClock()
        self.on_finished = on_finished  # told once a delivery's tombstone is acknowledged

    def pending_record(self, queued: Queued) -> Outgoing:
        value = codec.webhook_deliveries().encode(queued.delivery)
        return Outgoing(self.topics.webhook_pending, queued.key, value, partition=queued.partition)

    async def queue(self, queued: Queued) -> None:
        """The delivery, now waiting (so a restart finds it)."""
        await deliver(self.producer, self.pending_record(queued))

    async def retrying(self, queued: Queued) -> None:
        await deliver(self.producer, self.pending_record(queued))

    async def finished(self, queued: Queued) -> None:
        await deliver(
            self.producer, Outgoing(self.topics.webhook_pending, queued.key, None, partition=queued.partition)
        )
        self.on_finished(queued)

    async def dead_lettered(self, queued: Queued, error: str) -> None:
        delivery = queued.delivery
        extra = {"posting_id": delivery.posting_id, "group": Component.WEBHOOKS.value}
        log.error("webhook dead-lettered for endpoint %s: %s", delivery.endpoint_id, error, extra=extra)
        source = self.topics.postings if delivery.source == "postings" else self.topics.listing_events
        headers = DeadLetterHeaders(
            error=error,
            source_topic=source,
            source_partition=queued.partition,
            source_offset=delivery.source_offset,
            attempts=delivery.attempts,
            first_attempt_ms=delivery.first_attempt_at,
            last_attempt_ms=self.clock.now_ms(),
        )
        letter = codec.webhook_deliveries().encode(replace(delivery, last_error=error))
        await deliver(
            self.producer,
            Outgoing(
                self.topics.dlq(Component.WEBHOOKS),
                queued.key,
                letter,
                queued.partition,
                headers.to_headers(),
            ),
        )
        await self.finished(queued)

    async def disable(self, endpoint: WebhookEndpoint, reason: str) -> None:
        current = self.registry.get(endpoint.id) or endpoint
        if current.disabled_at is not None or current.deleted:
            return
        disabled = replace(current, disabled_at=self.clock.now_ms(), disabled_reason=reason)
        value = codec.webhook_endpoints().encode(disabled)
        await deliver(self.producer, Outgoing(self.topics.webhooks, disabled.id, value))
        self.registry.apply(disabled.id, disabled)
        log.warning("webhook endpoint %s disabled: %s", disabled.id, reason)
