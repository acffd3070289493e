"""One webhook attempt over HTTP, and what its answer means (Standard Webhooks): a 2xx is
delivered; 410 Gone disables the endpoint; anything else (3xx included: redirects are not
followed), a timeout or no connection is attempted again, not before a Retry-After the
answer carries. It never raises: every failure is an `Attempt`."""

from __future__ import annotations

import email.utils
from collections.abc import Callable, Sequence

import aiohttp

from schemas.webhooks import WebhookEndpoint
from webhooks import signing
from webhooks.clock import Clock, SystemClock
from webhooks.lanes import Attempt, Queued, Verdict

SigningSecrets = Callable[[WebhookEndpoint, int], Sequence[str]]
"""The endpoint's secrets that sign at a time (ms), newest first (raises SecretUnreadable)."""

USER_AGENT = "jobpost-webhooks/1 (Standard Webhooks)"
_DETAIL_CHARS = 300


class HttpSender:
    def __init__(
        self,
        session: aiohttp.ClientSession,
        secrets: SigningSecrets,
        timeout_s: float,
        clock: Clock | None = None,
    ) -> None:
        self.session = session
        self.secrets = secrets
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self.clock = clock or SystemClock()

    async def send(self, endpoint: WebhookEndpoint, queued: Queued) -> Attempt:
        now = self.clock.now_ms()
        try:
            secrets = self.secrets(endpoint, now)
        except Exception as exc:  # noqa: BLE001 - a secret no key opens: the endpoint's failure, retried
            return Attempt(Verdict.RETRY, f"cannot sign: {exc}"[:_DETAIL_CHARS])
        payload = signing.body(queued.event)
        headers = {
            **signing.headers(queued.delivery.event_id, payload, secrets, now),
            "user-agent": USER_AGENT,
        }
        try:
            async with self.session.post(
                endpoint.url,
                data=payload.encode(),
                headers=headers,
                allow_redirects=False,
                timeout=self.timeout,
            ) as response:
                status = response.status
                retry_after = retry_after_s(response.headers.get("Retry-After"), now)
        except TimeoutError:
            return Attempt(Verdict.RETRY, f"no answer within {self.timeout.total:g} s")
        except aiohttp.ClientError as exc:
            return Attempt(Verdict.RETRY, f"{type(exc).__name__}: {exc}"[:_DETAIL_CHARS])
        if 200 <= status < 300:
            return Attempt(Verdict.DELIVERED, f"HTTP {status}")
        if status == 410:
            return Attempt(Verdict.GONE, "HTTP 410")
        return Attempt(Verdict.RETRY, f"HTTP {status}", retry_after)


def retry_after_s(value: str | None, now_ms: int) -> float | None:
    """Seconds a Retry-After header asks to wait (delta-seconds or an HTTP date); None for
    none or one that cannot be read."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now_ms / 1000)
