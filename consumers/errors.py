"""What a job board's answer means to the runner: try again later, or never."""

from __future__ import annotations


class DeliveryError(Exception):
    """A board did not take the posting."""


class RetryableError(DeliveryError):
    """Timeouts, connection errors, 408, 429, 5xx: the same call may succeed later."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class RejectedError(DeliveryError):
    """The board refused the posting itself (4xx, a per-element 4xx, BAD_USER_INPUT)."""
