"""The audit trail: every accepted write and every operator action, as an `AuditEvent` on
`jobpost.audit` (kept a year) and as a JSON log line of the logger `jobpost.audit`.

The replica that answered writes the event once the sequencer accepted the write (or the
operator's action was done), without holding the answer for Kafka's acknowledgement: an
event Kafka refuses is logged and counted (`jobpost_audit_dropped_total`), and the log line
is there either way. A write's event is also in the log of record: the `PostingUpdate` on
`jobpost.postings` carries the same actor, op and version.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import KafkaError, KafkaException, Message
from prometheus_client import Counter

from producer_api.callers import Caller
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from schemas import codec
from schemas.audit import AuditAction, AuditEvent
from schemas.model import Action
from schemas.topics import Topics

log = logging.getLogger("jobpost.audit")
DROPPED = Counter("jobpost_audit_dropped_total", "Audit events Kafka refused (their log line was written)")
_ACTION_OF = {
    Action.CREATE: AuditAction.CREATE,
    Action.REPLACE: AuditAction.REPLACE,
    Action.DELETE: AuditAction.DELETE,
}


class Audit:
    def __init__(self, kafka: KafkaSettings) -> None:
        self.topic = Topics(kafka.topic_prefix).audit
        self._producer = KafkaClients(kafka).producer()

    def accepted(self, caller: Caller, action: Action, posting_id: str, version: int) -> None:
        """A write the sequencer accepted, at the version it resulted in."""
        self.record(caller, _ACTION_OF[action], posting_id=posting_id, version=version)

    def record(
        self,
        caller: Caller,
        action: AuditAction,
        *,
        posting_id: str | None = None,
        version: int | None = None,
        detail: str | None = None,
    ) -> None:
        event = AuditEvent(
            time.time_ns() // 1_000_000, caller.name, caller.employer, action, posting_id, version, detail
        )
        log.info("audit: %s by %s", action.value, caller.name, extra={"audit": event.to_avro()})
        try:
            self._producer.produce(
                self.topic, codec.audit_events().encode(event), event.key.encode(), on_delivery=_refused
            )
        except (BufferError, KafkaException) as exc:
            _dropped(event, str(exc))
        self._producer.poll(0)  # serve the delivery reports of earlier events

    def close(self) -> None:
        left = self._producer.flush(10)
        if left:
            log.error("%d audit events not acknowledged by Kafka at shutdown", left)
            DROPPED.inc(left)


def _refused(error: KafkaError | None, message: Message) -> None:
    if error is not None:
        DROPPED.inc()
        log.error("audit event refused by Kafka: %s (key %r)", error, message.key())


def _dropped(event: AuditEvent, why: str) -> None:
    DROPPED.inc()
    log.error("audit event not produced: %s", why, extra={"audit": event.to_avro()})
