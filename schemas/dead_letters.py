"""The dead-letter contract: the original key and value, plus headers saying why.

A dead-letter topic belongs to the consumer group that writes it, not to a destination:
`jobpost.<group>.dlq`, where `group` is a `schemas.topics.Component` (`sequencer`,
`linkedin`, `indeed`, `search-indexer`). The indexer's group is `search-indexer` while its
progress is recorded for the destination `search`.

`DeadLetterHeaders` is the one place the header names live: writers call `to_headers()`,
readers `parse()`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

ERROR = "jobpost.error"
ATTEMPTS = "jobpost.attempts"
FIRST_ATTEMPT_MS = "jobpost.first_attempt_ms"
LAST_ATTEMPT_MS = "jobpost.last_attempt_ms"
SOURCE_TOPIC = "jobpost.source_topic"
SOURCE_PARTITION = "jobpost.source_partition"
SOURCE_OFFSET = "jobpost.source_offset"
_MAX_ERROR_BYTES = 4000

RawHeaders = Iterable[tuple[str, str | bytes | None]] | Mapping[str, str | bytes | None] | None


@dataclass(frozen=True, slots=True)
class DeadLetterHeaders:
    """Why a record was dead-lettered and where it came from."""

    error: str
    source_topic: str
    source_partition: int
    source_offset: int
    attempts: int = 1
    first_attempt_ms: int | None = None
    last_attempt_ms: int | None = None

    def to_headers(self) -> list[tuple[str, str | bytes | None]]:
        first = self.first_attempt_ms
        last = self.last_attempt_ms if self.last_attempt_ms is not None else first
        return [
            (ERROR, self.error.encode()[:_MAX_ERROR_BYTES]),
            (ATTEMPTS, str(self.attempts).encode()),
            (FIRST_ATTEMPT_MS, str(first if first is not None else "").encode()),
            (LAST_ATTEMPT_MS, str(last if last is not None else "").encode()),
            (SOURCE_TOPIC, self.source_topic.encode()),
            (SOURCE_PARTITION, str(self.source_partition).encode()),
            (SOURCE_OFFSET, str(self.source_offset).encode()),
        ]

    @classmethod
    def parse(cls, headers: RawHeaders) -> DeadLetterHeaders:
        """The headers of a dead letter as written by `to_headers`; a missing or garbled
        header reads as unknown (empty text, -1, or None), never as an error: a letter must
        stay listable whatever wrote it."""
        text = _as_text(headers)
        return cls(
            error=text.get(ERROR, ""),
            source_topic=text.get(SOURCE_TOPIC, ""),
            source_partition=_int(text.get(SOURCE_PARTITION), -1),
            source_offset=_int(text.get(SOURCE_OFFSET), -1),
            attempts=_int(text.get(ATTEMPTS), 1),
            first_attempt_ms=_optional_int(text.get(FIRST_ATTEMPT_MS)),
            last_attempt_ms=_optional_int(text.get(LAST_ATTEMPT_MS)),
        )


def _as_text(headers: RawHeaders) -> dict[str, str]:
    if headers is None:
        return {}
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    return {k: v.decode(errors="replace") if isinstance(v, bytes) else (v or "") for k, v in pairs}


def _int(text: str | None, default: int) -> int:
    value = _optional_int(text)
    return default if value is None else value


def _optional_int(text: str | None) -> int | None:
    try:
        return int(text) if text else None
    except ValueError:
        return None
