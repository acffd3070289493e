"""The dead-letter contract: the original key and value, plus headers saying why."""

from __future__ import annotations

import time

from prometheus_client import Counter

DEAD_LETTERS = Counter("jobpost_dead_letters_total", "Records sent to a dead-letter topic", ["destination"])


def dead_letter_headers(
    error: str,
    *,
    topic: str,
    partition: int,
    offset: int,
    attempts: int,
    first_attempt_ms: int | None = None,
    last_attempt_ms: int | None = None,
) -> list[tuple[str, str | bytes | None]]:
    now = time.time_ns() // 1_000_000
    return [
        ("jobpost.error", error.encode()[:4000]),
        ("jobpost.attempts", str(attempts).encode()),
        ("jobpost.first_attempt_ms", str(first_attempt_ms or now).encode()),
        ("jobpost.last_attempt_ms", str(last_attempt_ms or now).encode()),
        ("jobpost.source_topic", topic.encode()),
        ("jobpost.source_partition", str(partition).encode()),
        ("jobpost.source_offset", str(offset).encode()),
    ]
