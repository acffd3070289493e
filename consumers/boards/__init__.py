"""One small adapter per job board: `upsert` and `close`, mapping answers to
RetryableError / RejectedError. They know nothing of retries, Kafka or offsets."""

from __future__ import annotations

import httpx

from consumers.errors import RejectedError, RetryableError

RETRYABLE_STATUS = {408, 429}


def raise_for_status(response: httpx.Response, board: str) -> None:
    """Map an HTTP status to the runner's errors (2xx passes)."""
    status = response.status_code
    if status < 300:
        return
    detail = f"{board} answered {status}: {response.text[:300]}"
    if status in RETRYABLE_STATUS or status >= 500:
        raise RetryableError(detail, retry_after(response))
    raise RejectedError(detail)


def retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


async def send(client: httpx.AsyncClient, board: str, request: httpx.Request) -> httpx.Response:
    """Send, turning timeouts and connection errors into RetryableError."""
    try:
        return await client.send(request)
    except httpx.TransportError as exc:
        raise RetryableError(f"{board}: {type(exc).__name__}: {exc}") from exc
