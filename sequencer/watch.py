"""How long a session's transaction has been open: the session marks each one, the member's
watch reads it from another thread (`sequencer.member`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class TransactionTimer:
    def __init__(self) -> None:
        self._since: float | None = None  # monotonic time the open transaction began

    def open_for(self) -> float:
        """Seconds the current transaction has been open (0: none is)."""
        since = self._since
        return 0.0 if since is None else time.monotonic() - since

    @contextmanager
    def open(self) -> Iterator[None]:
        """Marks the transaction made inside it as open."""
        self._since = time.monotonic()
        try:
            yield
        finally:
            self._since = None
