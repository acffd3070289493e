"""POST /postings:batch against the real API, sequencer and Kafka: 1,000 items in 10 batches
mixing valid writes, invalid ones, repeated keys, stale If-Match and deleted postings. The
same 1,000 requests sent one by one to a twin system (topics of its own) are the reference:
every item is answered as its request alone; sending every keyed item again applies nothing
twice; every posting's versions are gapless, in both logs alike."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from producer_api.service import create_id
from runtime.kafka import KafkaSettings
from runtime.topics import delete_topics, ensure_topics
from schemas.model import DEFAULT_EMPLOYER
from schemas.topics import Topics
from tests import postings
from tests.integration.producer_api.conftest import TOKEN
from tests.processes import ApiProcess, read_postings, running_api
from tests.servers import one_broker

BATCHES, ITEMS = 10, 100
METHODS = {"create": "POST", "replace": "PUT", "delete": "DELETE"}


class Script:
    """1,000 items, each chosen knowing what the items before it did (a posting's version,
    whether it is deleted), so that every kind of answer occurs."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.live: dict[str, int] = {}  # key of the create -> version
        self.deleted: list[str] = []
        self.accepted: list[dict[str, Any]] = []  # keyed writes expected to apply: to repeat
        self.serial = 0

    @staticmethod
    def id_of(key: str) -> str:
        """A create's posting id, which follows from its key (the same on both systems)."""
        return create_id(DEFAULT_EMPLOYER, key)

    def _key(self, kind: str) -> str:
        self.serial += 1
        return f"{kind}-{self.serial}"

    def posting(self, title: str) -> dict[str, Any]:
        return postings.body(len(title), title=title, notes="")

    def create(self) -> dict[str, Any]:
        key = self._key("create")
        self.live[key] = 0
        item = {"op": "create", "idempotency_key": key, "posting": self.posting(f"Job {key}")}
        self.accepted.append(item)
        return item

    def replace(self, stale: bool = False) -> dict[str, Any]:
        key = self.random.choice(list(self.live))
        version = self.live[key]
        item = {
            "op": "replace",
            "id": self.id_of(key),
            # stale: a version the posting has passed, or one it never reaches
            "if_match": f'"{(version - 1 if version else 1000) if stale else version}"',
            "idempotency_key": self._key("replace"),
            "posting": self.posting(f"Job {key} v{version + 1}"),
        }
        if not stale:
            self.live[key] = version + 1
            self.accepted.append(item)
        return item

    def delete(self) -> dict[str, Any]:
        key = self.random.choice(list(self.live))
        del self.live[key]
        self.deleted.append(key)
        item = {"op": "delete", "id": self.id_of(key), "idempotency_key": self._key("delete")}
        self.accepted.append(item)
        return item

    def on_deleted(self) -> dict[str, Any]:
        key = self.random.choice(self.deleted)
        if self.random.random() < 0.5:
            return {"op": "delete", "id": self.id_of(key)}
        return {"op": "replace", "id": self.id_of(key), "posting": self.posting("Back from the dead")}

    def invalid(self) -> dict[str, Any]:
        key = self.random.choice(list(self.live))
        good = self.posting("Fine")
        return self.random.choice(
            [
                {"op": "create", "posting": {**good, "title": " "}},
                {"op": "create", "posting": {**good, "salary": 1}},
                {"op": "create", "posting": {**good, "description": "x" * 25_001}},
                {"op": "create", "posting": {**good, "apply_url": "mailto:jobs@example.com"}},
                {"op": "create", "idempotency_key": "k" * 256, "posting": good},
                {"op": "replace", "id": "not an id!", "posting": good},
                {"op": "replace", "id": self.id_of(key), "if_match": "v3", "posting": good},
                {"op": "replace", "id": self.id_of(key)},
            ]
        )

    def key_reused(self) -> dict[str, Any]:
        """A key of an earlier write, on the same posting, with another body or op."""
        original = self.random.choice(self.accepted)
        if original["op"] == "delete":
            return {**original, "op": "replace", "posting": self.posting("A delete's key")}
        return {**original, "posting": self.posting("Another body")}

    def unknown(self) -> dict[str, Any]:
        return {"op": "replace", "id": f"unknown-{self.serial}", "posting": self.posting("Nobody")}

    def batches(self) -> list[list[dict[str, Any]]]:
        first = [self.create() for _ in range(50)]
        first += [dict(self.random.choice(first)) for _ in range(10)]  # repeats inside one batch
        first += [self.key_reused() for _ in range(5)]
        first += [self.invalid() for _ in range(10)]
        first += [{"op": "create", "posting": self.posting("No key")} for _ in range(5)]
        first += [self.replace() for _ in range(10)] + [self.replace(stale=True) for _ in range(10)]
        batches = [first]
        kinds = [
            (self.replace, 30), (lambda: self.replace(stale=True), 8), (self.create, 12), (self.delete, 6),
            (self.on_deleted, 8), (self.unknown, 4), (self.invalid, 10), (self.key_reused, 6),
            (lambda: dict(self.random.choice(self.accepted)), 16),  # a keyed write sent again
        ]  # fmt: skip
        makers = [maker for maker, weight in kinds for _ in range(weight)]
        for _ in range(BATCHES - 1):
            batch: list[dict[str, Any]] = []
            while len(batch) < ITEMS:
                maker = self.random.choice(makers)
                if maker == self.on_deleted and not self.deleted:
                    continue
                batch.append(maker())
            batches.append(batch)
        return batches


def alone(http: httpx.Client, item: dict[str, Any]) -> dict[str, Any]:
    """The single request the item stands for, its answer in a batch item's shape."""
    headers = {"If-Match": item["if_match"]} if "if_match" in item else {}
    if "idempotency_key" in item:
        headers["Idempotency-Key"] = item["idempotency_key"]
    path = "/postings" if item["op"] == "create" else f"/postings/{item['id']}"
    response = http.request(METHODS[item["op"]], path, headers=headers, json=item.get("posting"))
    kept = {h: response.headers[h] for h in ("Location", "ETag", "Retry-After") if h in response.headers}
    part = "problem" if response.status_code >= 400 else "posting"
    return {"status": response.status_code, "headers": kept, part: response.json()}


def comparable(item: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """What must be equal: all but the time of a write, and the id a create without a key
    gets at random."""
    posting = answer.get("posting")
    if posting is None or "title" not in posting:
        return answer
    posting = {**posting, "last_update_time_millis": "(a time)"}
    headers = answer["headers"]
    if item["op"] == "create" and "idempotency_key" not in item:
        posting["id"], headers = "(random)", {**headers, "Location": "(random)"}
    return {**answer, "headers": headers, "posting": posting}


def sequencer_transactions(api: ApiProcess) -> tuple[float, float]:
    """(transactions, commands) the API's sequencer member committed so far."""
    seen = dict.fromkeys(("count", "sum"), 0.0)
    for line in httpx.get(f"{api.url}/metrics", timeout=10).text.splitlines():
        for part in seen:
            if line.startswith(f"jobpost_sequencer_batch_commands_{part} "):
                seen[part] = float(line.split()[1])
    return seen["count"], seen["sum"]


def versions_per_posting(kafka: KafkaSettings) -> dict[str, list[tuple[int, str, str]]]:
    log: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    for key, _, update in read_postings(kafka, Topics(kafka.topic_prefix).postings):
        if update is not None:
            log[key].append((update.version, update.op, update.posting.title))
    return log


@pytest.fixture
def twin(kafka_bootstrap, unique, elasticsearch_url) -> Iterator[tuple[ApiProcess, KafkaSettings]]:
    """A second system, on topics of its own, taking the same requests one by one."""
    kafka = one_broker(kafka_bootstrap, f"{unique}alone", 3)
    ensure_topics(kafka)
    try:
        with running_api(kafka, TOKEN, elasticsearch_url) as process:
            yield process, kafka
    finally:
        delete_topics(kafka)


def test_a_thousand_items_are_each_answered_as_alone_and_applied_once(api, kafka, twin):
    single, single_kafka = twin
    with httpx.Client(base_url=api.url, headers=api.headers, timeout=60) as http:
        batches = Script(seed=26).batches()
        transactions_before, commands_before = sequencer_transactions(api)
        answers = []
        for batch in batches:
            response = http.post("/postings:batch", json={"items": batch})
            assert response.status_code == 200, response.text
            answers += response.json()["items"]
        transactions, commands = (
            a - b
            for a, b in zip(sequencer_transactions(api), (transactions_before, commands_before), strict=True)
        )
        items = [item for batch in batches for item in batch]
        assert len(answers) == len(items) == BATCHES * ITEMS

        with httpx.Client(base_url=single.url, headers=single.headers, timeout=60) as one_by_one:
            expected = [alone(one_by_one, item) for item in items]
        mismatched = [
            (n, item, answer, reference)
            for n, (item, answer, reference) in enumerate(zip(items, answers, expected, strict=True))
            if comparable(item, answer) != comparable(item, reference)
        ]
        assert not mismatched, mismatched[:3]
        statuses = Counter(a["status"] for a in answers)
        assert {s for s, n in statuses.items() if n >= 5} >= {200, 201, 404, 410, 412, 422}, statuses

        log = versions_per_posting(kafka)
        keyed = [(i, a) for i, a in zip(items, answers, strict=True) if "idempotency_key" in i]
        again = []
        for start in range(0, len(keyed), ITEMS):
            chunk = [item for item, _ in keyed[start : start + ITEMS]]
            response = http.post("/postings:batch", json={"items": chunk})
            assert response.status_code == 200, response.text
            again += response.json()["items"]
        for (item, first), repeated in zip(keyed, again, strict=True):
            if first["status"] < 300:  # an accepted write sent again: its original answer
                assert repeated == first, (item, first, repeated)
        assert versions_per_posting(kafka) == log  # nothing applied twice

    accepted = {(a["posting"]["id"], a["posting"]["version"]) for a in answers if a["status"] < 300}
    assert sum(len(versions) for versions in log.values()) == len(accepted)
    for posting_id, versions in log.items():
        assert [v for v, _, _ in versions] == list(range(len(versions))), posting_id
    alone_log = versions_per_posting(single_kafka)
    keyed_ids = {a["posting"]["id"] for i, a in keyed if a["status"] < 300}
    assert {p: log[p] for p in keyed_ids} == {p: alone_log[p] for p in keyed_ids}
    # The items of a batch go out together, so the sequencer takes them in a few polls, each
    # one transaction (66 transactions for these 895 commands when measured); one command
    # after another would be one transaction each.
    print(f"\n{commands:.0f} commands sequenced in {transactions:.0f} transactions for {len(items)} items")
    assert transactions <= commands / 5
