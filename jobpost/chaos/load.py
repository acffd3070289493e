"""A steady write load that keeps what it was acknowledged.

Each client owns its postings (so it knows what each one must end as) and writes at a
fixed pace: creates, replacements, now and then a delete. Every request carries an
Idempotency-Key; on a 503, a timeout or a lost connection the client sends it again, with
the same key, to the next API replica, until it is answered or its deadline passes.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field

import httpx


@dataclass(frozen=True)
class Ack:
    posting_id: str
    version: int
    op: str  # CREATED, UPDATED, DELETED


@dataclass
class Sample:
    started: float  # monotonic
    latency_s: float
    ok: bool


@dataclass
class Ledger:
    attempted: int = 0
    acked: dict[str, Ack] = field(default_factory=dict)  # Idempotency-Key -> what was acknowledged
    gave_up: list[str] = field(default_factory=list)  # keys never answered before their deadline
    refused: int = 0  # 4xx answers (none expected: each client owns its postings)
    samples: list[Sample] = field(default_factory=list)

    def versions(self) -> dict[str, list[Ack]]:
        """Acknowledged writes per posting, in version order."""
        found: dict[str, list[Ack]] = {}
        for ack in self.acked.values():
            found.setdefault(ack.posting_id, []).append(ack)
        return {p: sorted(acks, key=lambda a: a.version) for p, acks in found.items()}


class Load:
    def __init__(
        self, api_urls: list[str], token: str, *, rate: float, postings: int, clients: int = 10, seed: int = 7
    ) -> None:
        self.api_urls = api_urls
        self.headers = {"Authorization": f"Bearer {token}"}
        self.rate = rate
        self.postings_per_client = max(1, postings // clients)
        self.clients = clients
        self.ledger = Ledger()
        self.random = random.Random(seed)
        self._stop = asyncio.Event()
        self._keys = 0

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        limits = httpx.Limits(max_connections=4 * self.clients)
        async with httpx.AsyncClient(headers=self.headers, timeout=5, limits=limits) as http:
            await asyncio.gather(*(self._client(http, n) for n in range(self.clients)))

    async def _client(self, http: httpx.AsyncClient, number: int) -> None:
        live: list[str] = []
        interval = self.clients / self.rate
        next_at = time.monotonic() + self.random.random() * interval
        while not self._stop.is_set():
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            next_at += interval
            roll = self.random.random()
            if len(live) < self.postings_per_client and (roll < 0.3 or not live):
                body = {"title": f"Chaos {number}", "description": "written under faults", "notes": ""}
                created = await self._write(http, "POST", "/postings", body, number)
                if created is not None:
                    live.append(created.posting_id)
            elif roll < 0.05:
                posting_id = live.pop(self.random.randrange(len(live)))
                await self._write(http, "DELETE", f"/postings/{posting_id}", None, number)
            else:
                posting_id = self.random.choice(live)
                body = {"title": f"Chaos {number} {self._keys}", "description": "under faults", "notes": ""}
                await self._write(http, "PUT", f"/postings/{posting_id}", body, number)

    async def _write(
        self, http: httpx.AsyncClient, method: str, path: str, body: dict | None, number: int
    ) -> Ack | None:
        self._keys += 1
        key = f"chaos-{number}-{self._keys}-{self.random.getrandbits(32):08x}"
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
            if response.status_code == 503 or response.status_code >= 500:
                await asyncio.sleep(0.2)
                continue
            self.ledger.samples.append(Sample(started, time.monotonic() - started, response.is_success))
            if not response.is_success:
                self.ledger.refused += 1
                return None
            answer = response.json()
            op = {"POST": "CREATED", "PUT": "UPDATED", "DELETE": "DELETED"}[method]
            ack = Ack(answer["id"], answer["version"], op)
            self.ledger.acked[key] = ack
            return ack
        self.ledger.gave_up.append(key)
        self.ledger.samples.append(Sample(started, time.monotonic() - started, False))
        return None
