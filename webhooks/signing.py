"""A webhook as the Standard Webhooks specification has it: the body `{"type", "timestamp",
"data"}` and the headers `webhook-id` (the event's id, the same on every retry and replay),
`webhook-timestamp` (this attempt's time) and `webhook-signature`, one `v1,<base64>` per
secret that signs now, space-separated (a rotated secret signs beside the new one for an
overlap), made by the `standardwebhooks` library.

The signature covers the body's exact bytes, so the body is made once, as text, and sent
as its UTF-8 bytes. The library reads a datetime's fields as UTC whatever its zone
(`timestamp.replace(tzinfo=utc)`), so the time given to it is UTC.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

from standardwebhooks import Webhook

from schemas.listing_events import ListingEvent


def body(event: ListingEvent) -> str:
    """The JSON body of the event's webhook (compact, UTF-8 as is)."""
    return json.dumps(event.webhook(), separators=(",", ":"), ensure_ascii=False)


def headers(event_id: str, payload: str, secrets: Sequence[str], now_ms: int) -> dict[str, str]:
    """The headers of one attempt at `now_ms`, signed with each of `secrets` (`whsec_...`)."""
    if not secrets:
        raise ValueError("a webhook is signed with at least one secret")
    moment = datetime.fromtimestamp(now_ms // 1000, tz=UTC)
    signatures = " ".join(Webhook(secret).sign(event_id, moment, payload) for secret in secrets)
    return {
        "webhook-id": event_id,
        "webhook-timestamp": str(now_ms // 1000),
        "webhook-signature": signatures,
        "content-type": "application/json",
    }
