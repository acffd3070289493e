"""Which HTTP answers are worth another try: one definition for the boards and the index."""

from __future__ import annotations


def retryable_status(status: int) -> bool:
    """408 Request Timeout, 429 Too Many Requests and every 5xx: the same request may
    succeed later. Every other 4xx is a refusal of the request itself."""
    return status in (408, 429) or status >= 500
