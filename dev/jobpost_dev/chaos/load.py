"""A steady write load that keeps what it was answered.

Each client owns its postings (so it knows what each one must end as) and writes at a
fixed pace: creates, replacements, now and then a delete. Two kinds of client, as the
contract's retry rules have two:

- keyed: every request carries an Idempotency-Key; on a 503, a 504, a timeout or a lost
  connection it is sent again, with the same key, to the next API replica, until it is
  answered or its deadline passes;
- unkeyed: creates and replacements carry no key (a delete still does), each attempt
  marked by a token of its own in `notes`, so the log tells which attempt was applied. A
  503 promises "not applied, ever": the client sends the write again as a new attempt. A
  504, a timeout or a connection lost mid-request leave the outcome unknown, and a retry
  without a key could apply it twice, so the client notes it and moves on.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass(frozen=True)
class Ack:
    posting_id: str
    version: int
    op: str  # CREATED, UPDATED, DELETED
    marker: str = ""  # an unkeyed attempt's token (its body's notes)


@dataclass
class Sample:
    started: float  # monotonic
    latency_s: float
    ok: bool
    posting_id: str = ""  # of an acknowledged write


@dataclass
class Ledger:
    attempted: int = 0
    acked: dict[str, Ack] = field(default_factory=dict)  # Idempotency-Key -> what was acknowledged
    acked_unkeyed: dict[str, Ack] = field(default_factory=dict)  # marker -> what was acknowledged
    gave_up: list[str] = field(default_factory=list)  # keys never answered before their deadline
    refused: int = 0  # 4xx answers (none expected: each client owns its postings)
    not_applied: list[str] = field(default_factory=list)  # markers of unkeyed attempts answered 503
    unknown: list[str] = field(default_factory=list)  # markers of unkeyed writes left unknown (504, lost)
    answered_504: int = 0  # every 504 answer, keyed or not
    samples: list[Sample] = field(default_factory=list)

    @property
    def settled(self) -> int:
        """Writes that came to an end: acknowledged, refused, given up, or left unknown."""
        return (
            len(self.acked) + len(self.acked_unkeyed) + len(self.gave_up) + self.refused + len(self.unknown)
        )

    def versions(self) -> dict[str, list[Ack]]:
        """Acknowledged writes per posting, in version order."""
        found: dict[str, list[Ack]] = {}
        for ack in [*self.acked.values(), *self.acked_unkeyed.values()]:
            found.setdefault(ack.posting_id, []).append(ack)
        return {p: sorted(acks, key=lambda a: a.version) for p, acks in found.items()}


class Load:
    def __init__(
        self,
        api_urls: list[str],
        token: str,
        *,
        rate: float,
        postings: int,
        clients: int = 10,
        unkeyed_clients: int = 4,
        seed: int = 7,
    ) -> None:
        self.api_urls = api_urls
        self.headers = {"Authorization": f"Bearer {token}"}
        self.rate = rate
        self.postings_per_client = max(1, postings // clients)
        self.clients = clients
        self.unkeyed_clients = unkeyed_clients  # the last ones
        self.ledger = Ledger()
        self.random = random.Random(seed)
        self._stop = asyncio.Event()
        self._keys = 0

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        limits = httpx.Limits(max_connections=4 * self.clients)
        # Longer than the API's write timeout (10 s): the API's own answer, 503 or 504, comes first.
        async with httpx.AsyncClient(headers=self.headers, timeout=15, limits=limits) as http:
            await asyncio.gather(*(self._client(http, n) for n in range(self.clients)))

    async def _client(self, http: httpx.AsyncClient, number: int) -> None:
        live: list[str] = []
        interval = self.clients / self.rate
        next_at = time.monotonic() + self.random.random() * interval
        keyed = number < self.clients - self.unkeyed_clients
        write = self._write if keyed else self._write_unkeyed
        while not self._stop.is_set():
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            next_at += interval
            roll = self.random.random()
            if len(live) < self.postings_per_client and (roll < 0.3 or not live):
                body = listable(f"Chaos {number}")
                created = await write(http, "POST", "/postings", body, number)
                if created is not None:
                    live.append(created.posting_id)
            elif roll < 0.05:
                posting_id = live.pop(self.random.randrange(len(live)))
                await self._write(http, "DELETE", f"/postings/{posting_id}", None, number)
            else:
                posting_id = self.random.choice(live)
                body = listable(f"Chaos {number} {self._keys}")
                await write(http, "PUT", f"/postings/{posting_id}", body, number)

    def _token(self, number: int) -> str:
        self._keys += 1
        return f"chaos-{number}-{self._keys}-{self.random.getrandbits(32):08x}"

    async def _write(
        self, http: httpx.AsyncClient, method: str, path: str, body: dict | None, number: int
    ) -> Ack | None:
        key = self._token(number)
        self.ledger.attempted += 1
        started = time.monotonic()
        deadline = started + 60
        attempt = 0
        while time.monotonic() < deadline:
            url = self.api_urls[(number + attempt) % len(self.api_urls)] + path
            attempt += 1
            try:
                response = await http.request(method, url, json=body, headers={"Idempotency-Key": key})
            except httpx.TransportError:
                await asyncio.sleep(0.2)
                continue
            if response.status_code >= 500:  # 503 not applied, 504 unknown: the key makes either safe
                self.ledger.answered_504 += response.status_code == 504
                await asyncio.sleep(0.2)
                continue
            ack = _ack(method, response.json()) if response.is_success else None
            self.ledger.samples.append(_sample(started, ack))
            if ack is None:
                self.ledger.refused += 1
                return None
            self.ledger.acked[key] = ack
            return ack
        self.ledger.gave_up.append(key)
        self.ledger.samples.append(Sample(started, time.monotonic() - started, False))
        return None

    async def _write_unkeyed(
        self, http: httpx.AsyncClient, method: str, path: str, body: dict, number: int
    ) -> Ack | None:
        self.ledger.attempted += 1
        started = time.monotonic()
        deadline = started + 60
        attempt = 0
        marker = ""
        while time.monotonic() < deadline:
            marker = self._token(number)
            url = self.api_urls[(number + attempt) % len(self.api_urls)] + path
            attempt += 1
            try:
                response = await http.request(method, url, json={**body, "notes": marker})
            except httpx.ConnectError:  # never reached an API: nothing was written
                await asyncio.sleep(0.2)
                continue
            except httpx.TransportError:  # reached one, and lost: unknown
                response = None
            if response is not None and response.status_code == 503:  # not applied, ever: send it again
                self.ledger.not_applied.append(marker)
                await asyncio.sleep(0.2)
                continue
            if response is None or response.status_code >= 500:
                self.ledger.answered_504 += response is not None and response.status_code == 504
                self.ledger.unknown.append(marker)
                self.ledger.samples.append(Sample(started, time.monotonic() - started, False))
                return None
            ack = _ack(method, response.json(), marker) if response.is_success else None
            self.ledger.samples.append(_sample(started, ack))
            if ack is None:
                self.ledger.refused += 1
                return None
            self.ledger.acked_unkeyed[marker] = ack
            return ack
        self.ledger.gave_up.append(marker)
        self.ledger.samples.append(Sample(started, time.monotonic() - started, False))
        return None


def _sample(started: float, ack: Ack | None) -> Sample:
    return Sample(started, time.monotonic() - started, ack is not None, "" if ack is None else ack.posting_id)


def _ack(method: str, answer: dict, marker: str = "") -> Ack:
    op = {"POST": "CREATED", "PUT": "UPDATED", "DELETE": "DELETED"}[method]
    return Ack(answer["id"], answer["version"], op, marker)


def listable(title: str) -> dict[str, Any]:
    """A body both boards would list (the API refuses any other): the chaos run writes as the
    sandbox's employer, a real-looking ad under a title that names the client and the write."""
    return {
        "title": title,
        "description": "Join the platform team that keeps our hiring systems running through failures. "
        "You will build streaming services in Python on Kafka and own their monitoring and on-call.",
        "notes": "",
        "locations": [{"city": "Berlin", "region": "Berlin", "postal_code": "10115", "country": "DE"}],
        "apply_url": "https://careers.example.com/jobs/chaos",
    }
