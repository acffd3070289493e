"""Every registered endpoint, in memory (the endpoints are few): `jobpost.webhooks` read
from its beginning and followed on a thread of its own, with the secrets each signs with.

An event is matched against the endpoints only once they are known as of the moment the
event was read: while an event waits (`wait_caught_up`), the follower asks where the topic
ends, at most every `check_s`, and, once it has read that far, records when it asked
(`caught_up_at`, monotonic). With no event waiting it asks nothing (an idle dispatcher's
follower would otherwise ask the broker ten times a second). An endpoint acknowledged
before an event was appended is in the topic before that moment, so an event read at time
t and matched after `caught_up_at >= t` cannot miss it (`wait_caught_up`). Without that, an
employer who registers an endpoint and then changes a posting could miss the first events.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Message, TopicPartition

from runtime import records
from runtime.kafka import IDLE_POLL_S, KafkaSettings, is_record, poll_batch
from runtime.kafka_clients import KafkaClients
from runtime.webhook_secrets import SecretBox
from schemas.listing_events import ListingEvent
from schemas.topics import ReaderGroup, Topics
from schemas.webhooks import WebhookEndpoint

log = logging.getLogger(__name__)


class EndpointRegistry:
    def __init__(
        self,
        kafka: KafkaSettings,
        topic: str,
        box: SecretBox,
        check_s: float = 0.1,
        on_change: Callable[[str], None] | None = None,
    ) -> None:
        self.kafka = kafka
        self.topic = topic
        self.box = box
        self.check_s = check_s
        self.on_change = on_change or (lambda _endpoint_id: None)
        self.caught_up_at = float("-inf")  # monotonic: every endpoint written before it is known
        self._wanted = float("-inf")  # monotonic: the latest moment an event waits to be caught up to
        self.failure: BaseException | None = None
        self._endpoints: dict[str, WebhookEndpoint] = {}
        self._by_employer: dict[str, set[str]] = {}
        self._opened: dict[bytes, str] = {}  # sealed secret -> the secret
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="webhook-endpoints", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(10)

    def get(self, endpoint_id: str) -> WebhookEndpoint | None:
        return self._endpoints.get(endpoint_id)

    def matching(self, event: ListingEvent) -> list[WebhookEndpoint]:
        """The endpoints the event is delivered to."""
        with self._lock:
            found = [self._endpoints[i] for i in self._by_employer.get(event.employer, ())]
        return [e for e in found if e.takes(event.type, event.employer, event.at)]

    def signing_secrets(self, endpoint: WebhookEndpoint, now_ms: int) -> list[str]:
        """The endpoint's secrets that sign at `now_ms`, newest first (SecretUnreadable when
        no key opens one)."""
        opened = []
        for secret in endpoint.secrets:
            if secret.live(now_ms):
                text = self._opened.get(secret.secret_encrypted)
                if text is None:
                    text = self._opened[secret.secret_encrypted] = self.box.open(secret.secret_encrypted)
                opened.append(text)
        return opened

    def apply(self, endpoint_id: str, endpoint: WebhookEndpoint | None) -> None:
        """Take a record of the topic (None: a tombstone), as read, or as this process just
        wrote it (a disabled endpoint, before the follower reads it back)."""
        with self._lock:
            before = self._endpoints.pop(endpoint_id, None)
            if before is not None:
                self._by_employer.get(before.employer, set()).discard(endpoint_id)
            if endpoint is not None and not endpoint.deleted:
                self._endpoints[endpoint_id] = endpoint
                self._by_employer.setdefault(endpoint.employer, set()).add(endpoint_id)
        if before is not None and before != endpoint:
            self.on_change(endpoint_id)

    async def wait_caught_up(self, read_at: float) -> None:
        """Return once every endpoint written before `read_at` (monotonic) is known."""
        self._wanted = max(self._wanted, read_at)
        while self.caught_up_at < read_at:
            if self.failure is not None:
                raise RuntimeError("the endpoints' follower failed") from self.failure
            await asyncio.sleep(0.01)

    def _run(self) -> None:
        topics = Topics(self.kafka.topic_prefix)
        # Read to where the topic ends is told by the consumer's position, not by an
        # end-of-partition event: its fetches may wait (a record is answered at once).
        consumer = KafkaClients(self.kafka).reader(
            topics.reader_group(ReaderGroup.WEBHOOK_ENDPOINTS), patient=True
        )
        # Ends are asked of a consumer of its own: a broker answers a connection's requests in
        # turn, so one asked of the reading consumer waits behind its fetch.
        probe = KafkaClients(self.kafka).probe(topics.reader_group(ReaderGroup.WEBHOOK_PROBE))
        try:
            partitions = sorted(consumer.list_topics(self.topic, timeout=30).topics[self.topic].partitions)
            consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in partitions])
            asked_at, ends = float("-inf"), {p: 0 for p in partitions}
            while not self._stopping.is_set():
                waited_for = self._wanted > self.caught_up_at
                if waited_for and time.monotonic() - asked_at >= self.check_s:
                    asking = time.monotonic()
                    try:
                        ends = {p: self._end(probe, p) for p in partitions}
                        asked_at = asking
                    except KafkaException as exc:  # its leader gone: asked again next time
                        log.debug("the endpoints' end not known yet: %s", exc)
                for message in poll_batch(consumer, 500, 0.02 if waited_for else IDLE_POLL_S):
                    if is_record(message):
                        self._take(message)
                if self._reached(consumer, ends) and asked_at > self.caught_up_at:
                    self.caught_up_at = asked_at
        except BaseException as exc:
            log.exception("the webhook endpoints' follower failed")
            self.failure = exc
        finally:
            consumer.close()
            probe.close()

    def _take(self, message: Message) -> None:
        try:
            endpoint_id, endpoint = records.webhook_endpoint(message)
        except records.PoisonRecord as exc:
            records.note_poison("webhook-endpoints", message, exc.reason)
            return
        self.apply(endpoint_id, endpoint)

    def _end(self, consumer: Consumer, partition: int) -> int:
        _, end = consumer.get_watermark_offsets(
            TopicPartition(self.topic, partition), timeout=10, cached=False
        )
        return int(end)

    def _reached(self, consumer: Consumer, ends: dict[int, int]) -> bool:
        for tp in consumer.position([TopicPartition(self.topic, p) for p in ends]):
            end = ends[tp.partition]
            if end > 0 and tp.offset < end:  # a partition not read from yet has no position (< 0)
                return False
        return True
