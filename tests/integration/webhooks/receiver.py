"""An employer's endpoint for the tests: a real HTTP server on this machine that verifies
every delivery with `standardwebhooks`, as an integrator's receiver would."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from standardwebhooks import Webhook, WebhookVerificationError

from tests.processes import free_port


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    arrived_ms: int
    verified_with: list[int]  # which of the receiver's secrets verify it (their indexes)

    @property
    def event(self) -> dict:
        return json.loads(self.body)

    @property
    def id(self) -> str:
        return self.headers["webhook-id"]

    def key(self) -> tuple[str, str, int]:
        """(type, posting id, version)."""
        event = self.event
        return event["type"], event["data"]["posting_id"], event["data"]["version"]


@dataclass
class Receiver:
    """An employer's endpoint: a real HTTP server on this machine. It answers `status` (a
    number, or a function of the request count), checks every delivery's signature against
    each of `secrets` with `standardwebhooks`, and can be taken down (connections refused)
    and brought back on the same port."""

    status: int | Callable[[int], int] = 200
    secrets: list[str] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    port: int = field(default_factory=free_port)
    _server: http.server.ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def start(self) -> Receiver:
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                status = receiver._take(headers, body)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Down: nothing listens on the port (connections are refused)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _take(self, headers: dict[str, str], body: bytes) -> int:
        verified = []
        for index, secret in enumerate(list(self.secrets)):
            try:
                Webhook(secret).verify(body, headers)
                verified.append(index)
            except (WebhookVerificationError, ValueError):  # ValueError: a malformed signature entry
                pass
        with self._lock:
            self.received.append(Received(headers, body, now_ms(), verified))
            count = len(self.received)
        return self.status(count) if callable(self.status) else self.status

    def snapshot(self) -> list[Received]:
        with self._lock:
            return list(self.received)

    def first_of_each(self) -> list[Received]:
        """Each webhook-id's first delivery, in arrival order."""
        seen: set[str] = set()
        first = []
        for delivery in self.snapshot():
            if delivery.id not in seen:
                seen.add(delivery.id)
                first.append(delivery)
        return first

    def seen(self) -> set[tuple[str, str, int]]:
        return {d.key() for d in self.snapshot()}
