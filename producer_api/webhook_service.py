"""The webhooks' service layer: an employer's endpoints registered, listed, rotated, deleted,
replayed, and their dead letters read.

A registration is a record of `jobpost.webhooks` keyed by its id; the API answers only once
Kafka acknowledged it (else 503, nothing promised). Its secret is made here, shown once in
the answer, and kept sealed (`runtime.webhook_secrets`). Reads wait until this replica's
view has read every registration written before the request (one small partition), so an
endpoint is seen by the next request that asks, whichever replica answers. Another
employer's endpoint does not exist for a caller; an operator sees every employer's.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from producer_api.audit import Audit
from producer_api.callers import Caller
from producer_api.config import ApiSettings
from producer_api.read.log_view import StrongReadTimeout
from producer_api.read.webhook_views import EndpointsView, WebhookLetter, WebhookLettersView
from producer_api.service import Unavailable
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.outbox import Outgoing
from runtime.webhook_secrets import SecretBox, new_secret
from schemas import codec
from schemas.audit import AuditAction
from schemas.topics import Topics
from schemas.webhooks import WebhookEndpoint, WebhookReplay, WebhookSecret

URL_MAX_CHARS = 2000
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


class WebhookNotFound(Exception):
    """No endpoint of the caller's employer has this id."""


class WebhooksOff(Unavailable):
    """No key to seal secrets with (JOBPOST_WEBHOOK_SECRETS_KEY): webhooks cannot be registered."""


@dataclass(frozen=True)
class WithSecret:
    """An endpoint and the secret just made for it: the one time it is shown."""

    endpoint: WebhookEndpoint
    secret: str


def url_problem(url: str, local_http: bool) -> str | None:
    """Why a URL cannot receive webhooks; None when it can. HTTPS only, with a host and no
    credentials in it, not to an address of a private, loopback or link-local network given
    by number; plain HTTP only to this machine. Both exceptions only when `local_http` allows
    them (development)."""
    if len(url) > URL_MAX_CHARS:
        return f"at most {URL_MAX_CHARS} characters"
    try:
        parts = urlsplit(url)
        host, _port = parts.hostname, parts.port  # the port is read for its check: not a number raises
    except ValueError as exc:
        return f"not a URL: {exc}"
    if parts.username is not None or parts.password is not None:
        return "credentials do not belong in the URL"
    if not host:
        return "an absolute URL with a host is needed"
    if parts.fragment:
        return "a fragment is never sent: leave it out"
    local = host in _LOCAL_HOSTS
    if parts.scheme == "http" and local:
        return (
            None
            if local_http
            else "plain http to this machine only when JOBPOST_API_WEBHOOK_LOCAL_HTTP allows it"
        )
    if parts.scheme != "https":
        return "an https URL is needed"
    if not local_http and (local or _internal_address(host)):
        return "an address of this machine or a private network cannot receive webhooks"
    return None


def _internal_address(host: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False  # a name: where it points is not checked here (see the docs)
    return address.is_private or address.is_loopback or address.is_link_local or address.is_reserved


class WebhookService:
    def __init__(
        self,
        kafka: KafkaSettings,
        box: SecretBox | None,
        endpoints: EndpointsView,
        letters: WebhookLettersView,
        audit: Audit,
        *,
        overlap_s: float,
        read_timeout_s: float,
        write_timeout_s: float,
    ) -> None:
        self.topics = Topics(kafka.topic_prefix)
        self.partitions = kafka.partitions
        self.box = box
        self.endpoints = endpoints
        self.letters = letters
        self.audit = audit
        self.overlap_ms = round(overlap_s * 1000)
        self.read_timeout_s = read_timeout_s
        self.write_timeout_s = write_timeout_s
        self._producer = KafkaClients(kafka).producer()
        self._changing: dict[str, asyncio.Lock] = {}

    def close(self) -> None:
        self._producer.flush(10)
        self.endpoints.close()
        self.letters.close()

    async def register(self, caller: Caller, url: str, events: tuple[str, ...]) -> WithSecret:
        box = self._box()
        secret = new_secret()
        endpoint = WebhookEndpoint(
            f"ep_{uuid.uuid4().hex}",
            caller.employer,
            url,
            events,
            (WebhookSecret(box.seal(secret)),),
            _now_ms(),
        )
        await self._write([self._record(endpoint)])
        self.audit.record(caller, AuditAction.WEBHOOK_REGISTER, detail=f"{endpoint.id} {url}")
        return WithSecret(endpoint, secret)

    async def endpoints_of(self, caller: Caller) -> list[WebhookEndpoint]:
        await self._caught_up()
        found = [e for e in self.endpoints.all() if caller.sees(e.employer)]
        return sorted(found, key=lambda e: (e.created_at, e.id))

    async def get(self, caller: Caller, endpoint_id: str) -> WebhookEndpoint:
        await self._caught_up()
        endpoint = self.endpoints.get(endpoint_id)
        if endpoint is None or not caller.sees(endpoint.employer):
            raise WebhookNotFound(endpoint_id)
        return endpoint

    async def delete(self, caller: Caller, endpoint_id: str) -> None:
        async with self._change(endpoint_id):
            endpoint = await self.get(caller, endpoint_id)
            deleted = WebhookEndpoint(
                endpoint.id, endpoint.employer, endpoint.url, (), (), endpoint.created_at, True
            )
            await self._write([self._record(deleted), Outgoing(self.topics.webhooks, endpoint.id, None)])
        self.audit.record(caller, AuditAction.WEBHOOK_DELETE, detail=endpoint_id)

    async def rotate(self, caller: Caller, endpoint_id: str) -> tuple[WithSecret, int]:
        """A new secret for the endpoint; the old one signs beside it until the time returned."""
        box = self._box()
        async with self._change(endpoint_id):
            endpoint = await self.get(caller, endpoint_id)
            secret, now = new_secret(), _now_ms()
            rotated = endpoint.rotated(box.seal(secret), now, self.overlap_ms)
            await self._write([self._record(rotated)])
        self.audit.record(caller, AuditAction.WEBHOOK_ROTATE, detail=endpoint_id)
        return WithSecret(rotated, secret), now + self.overlap_ms

    async def replay(self, caller: Caller, endpoint_id: str, since_ms: int) -> WebhookReplay:
        """Ask the dispatcher to deliver the endpoint's events since `since_ms` again: one
        request per partition, each handled by the member owning it."""
        endpoint = await self.get(caller, endpoint_id)
        request = WebhookReplay(f"rp_{uuid.uuid4().hex}", endpoint.id, since_ms, caller.name, _now_ms())
        value = codec.webhook_replays().encode(request)
        topic = self.topics.webhook_replays
        await self._write([Outgoing(topic, endpoint.id, value, partition=p) for p in range(self.partitions)])
        self.audit.record(caller, AuditAction.WEBHOOK_REPLAY, detail=f"{endpoint_id} since {since_ms}")
        return request

    async def dead_letters(self, caller: Caller, endpoint_id: str, limit: int) -> list[WebhookLetter]:
        await self.get(caller, endpoint_id)
        return self.letters.newest(endpoint_id, limit)

    def _box(self) -> SecretBox:
        if self.box is None:
            raise WebhooksOff(
                "webhooks are off: no key to seal their secrets with is set (JOBPOST_WEBHOOK_SECRETS_KEY)"
            )
        return self.box

    def _record(self, endpoint: WebhookEndpoint) -> Outgoing:
        return Outgoing(self.topics.webhooks, endpoint.id, codec.webhook_endpoints().encode(endpoint))

    async def _caught_up(self) -> None:
        try:
            await self.endpoints.wait_for_end("", self.read_timeout_s)
        except StrongReadTimeout as exc:
            raise Unavailable(f"the webhooks view did not catch up: {exc}") from exc

    async def _write(self, records: Iterable[Outgoing]) -> None:
        """Produce the records and return once Kafka acknowledged every one (Unavailable:
        not acknowledged in time, so not promised)."""
        await asyncio.to_thread(_produce_acknowledged, self._producer, list(records), self.write_timeout_s)

    def _change(self, endpoint_id: str) -> asyncio.Lock:
        """One change of an endpoint at a time on this replica (read, then write)."""
        return self._changing.setdefault(endpoint_id, asyncio.Lock())


def open_webhooks(settings: ApiSettings, audit: Audit) -> WebhookService:
    """The service with its views, following their topics (`close` stops them)."""
    endpoints = EndpointsView(settings.kafka, settings.state)
    letters = WebhookLettersView(settings.kafka, settings.state)
    endpoints.start()
    letters.start()
    return WebhookService(
        settings.kafka,
        settings.webhook_secrets.box(),
        endpoints,
        letters,
        audit,
        overlap_s=settings.webhook_secret_overlap_s,
        read_timeout_s=settings.strong_read_timeout_s,
        write_timeout_s=settings.write_timeout_s,
    )


def _produce_acknowledged(producer: Producer, records: list[Outgoing], timeout_s: float) -> None:
    refused: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            refused.append(error)

    try:
        for record in records:
            record.produce(producer, on_delivery)
    except (BufferError, KafkaException) as exc:
        raise Unavailable(f"Kafka did not take the change: {exc}; nothing was changed") from exc
    if producer.flush(timeout_s) > 0:
        raise Unavailable("Kafka did not acknowledge the change in time; GET shows whether it was made")
    if refused:
        raise Unavailable(f"Kafka refused the change: {refused[0].str()}; GET shows whether it was made")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
