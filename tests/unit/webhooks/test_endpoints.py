"""The dispatcher's endpoints in memory: matching an event, the secrets that sign, changes
told to the lanes."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest
from confluent_kafka import TopicPartition
from cryptography.fernet import Fernet

from runtime.kafka import KafkaSettings
from runtime.webhook_secrets import SecretBox, SecretUnreadable
from schemas.webhooks import WebhookSecret
from tests.unit.webhooks.fakes import START, endpoint, event
from webhooks import endpoints as endpoints_module
from webhooks.endpoints import EndpointRegistry

BOX = SecretBox([Fernet.generate_key().decode()])


def registry(changed: list[str] | None = None) -> EndpointRegistry:
    return EndpointRegistry(
        KafkaSettings(), "jobpost.webhooks", BOX, on_change=None if changed is None else changed.append
    )


def test_an_event_matches_its_employers_endpoints_that_take_its_type():
    endpoints = registry()
    endpoints.apply("a", endpoint("a"))
    endpoints.apply("a2", replace(endpoint("a2"), events=("posting.*",)))
    endpoints.apply("b", endpoint("b", employer="globex"))
    assert [e.id for e in endpoints.matching(event("p", 0, START))] == ["a"]
    assert sorted(e.id for e in endpoints.matching(event("p", 0, START, kind="posting.accepted"))) == [
        "a",
        "a2",
    ]


def test_deleted_and_tombstoned_endpoints_are_gone_and_the_lanes_are_told():
    changed: list[str] = []
    endpoints = registry(changed)
    endpoints.apply("a", endpoint("a"))
    endpoints.apply("b", endpoint("b"))
    endpoints.apply("a", replace(endpoint("a"), deleted=True))
    endpoints.apply("b", None)
    assert (endpoints.get("a"), endpoints.get("b"), endpoints.matching(event("p", 0, START))) == (
        None,
        None,
        [],
    )
    assert changed == ["a", "b"]


def test_the_secrets_that_sign_now_newest_first():
    endpoints = registry()
    current, rotated = BOX.seal("whsec_new"), BOX.seal("whsec_old")
    ep = replace(endpoint("a"), secrets=(WebhookSecret(current), WebhookSecret(rotated, START + 10)))
    assert endpoints.signing_secrets(ep, START) == ["whsec_new", "whsec_old"]
    assert endpoints.signing_secrets(ep, START + 10) == ["whsec_new"]
    foreign = replace(ep, secrets=(WebhookSecret(SecretBox([Fernet.generate_key().decode()]).seal("x")),))
    with pytest.raises(SecretUnreadable):
        endpoints.signing_secrets(foreign, START)


def test_matching_waits_until_the_endpoints_are_known_as_of_the_read():
    endpoints = registry()

    async def run() -> bool:
        waiting = asyncio.create_task(endpoints.wait_caught_up(100.0))
        await asyncio.sleep(0.02)
        blocked = not waiting.done()
        endpoints.caught_up_at = 100.0
        await asyncio.wait_for(waiting, 1)
        return blocked

    assert asyncio.run(run())


class _Topic:
    """The endpoints topic as the follower sees it: one partition, `end` records, all read."""

    def __init__(self, end: int) -> None:
        self.end, self.ends_asked = end, 0

    def list_topics(self, topic: str, timeout: float) -> object:
        partitions = type("Metadata", (), {"partitions": {0: None}})
        return type("Cluster", (), {"topics": {topic: partitions}})

    def assign(self, partitions: list[TopicPartition]) -> None: ...

    def poll(self, timeout: float) -> None:
        time.sleep(timeout)  # nothing new

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self.end) for tp in partitions]

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float, cached: bool) -> tuple[int, int]:
        self.ends_asked += 1
        return 0, self.end

    def close(self) -> None: ...


def test_the_follower_asks_where_the_topic_ends_only_while_an_event_waits(monkeypatch):
    """An idle dispatcher asks the broker nothing; an event's wait is answered."""
    topic = _Topic(end=3)
    clients = type(
        "Clients", (), {"reader": lambda self, group, **_: topic, "probe": lambda self, group: topic}
    )
    monkeypatch.setattr(endpoints_module, "KafkaClients", lambda kafka: clients())
    endpoints = EndpointRegistry(KafkaSettings(), "jobpost.webhooks", BOX, check_s=0.01)
    endpoints.start()
    try:
        time.sleep(0.3)  # thirty check intervals with no event waiting
        idle_asks = topic.ends_asked

        async def an_event_waits() -> None:
            await asyncio.wait_for(endpoints.wait_caught_up(time.monotonic()), 2)

        asyncio.run(an_event_waits())
    finally:
        endpoints.stop()
    assert idle_asks == 0
    assert topic.ends_asked >= 1 and endpoints.failure is None
