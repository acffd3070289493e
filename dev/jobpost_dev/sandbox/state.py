"""What one sandbox board holds, in plain types: its faults and limits, its counters, the
tokens it issued, and per posting what it applied and when it was asked."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from jobpost_dev.sandbox.faults import Faults
from jobpost_dev.sandbox.limits import DEFAULT_LIMITS, Limits, RollingWindow
from jobpost_dev.sandbox.tokens import Tokens


@dataclass
class Stats:
    """`GET /_sandbox/{board}/stats`: since the last reset."""

    calls: int = 0  # calls to the board's API (its token endpoint apart)
    records: int = 0  # jobs carried by the calls the budget admitted
    throttled: int = 0  # 429s answered
    expired_token_calls: int = 0  # 401s answered: an expired or unknown token
    tokens_issued: int = 0
    max_records_in_60s: int = 0  # the most records admitted within any 60 s
    max_records_per_call: int = 0

    def to_json(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class Submission:
    """One version as the board took it: for LinkedIn the task it started, so a test can
    check that no version was submitted before the previous one's task ended."""

    version: int
    operation: str
    submitted_at_ms: int
    task_id: str | None = None
    ended_at_ms: int | None = None
    state: str = "IN_PROGRESS"  # IN_PROGRESS, SUCCEEDED, FAILED; Indeed: APPLIED at once
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "operation": self.operation,
            "submitted_at": self.submitted_at_ms,
            "task_id": self.task_id,
            "ended_at": self.ended_at_ms,
            "state": self.state,
            "error": self.error,
        }


@dataclass
class SandboxPosting:
    versions: list[int] = field(default_factory=list)  # applied, in the order applied
    applied_at_ms: list[int] = field(default_factory=list)
    status: Literal["open", "closed"] = "open"
    requests: int = 0  # calls that carried this posting
    duplicates: int = 0  # elements answered from their idempotency record
    log: list[Submission] = field(default_factory=list)

    def apply(self, version: int, at_ms: int, closes: bool) -> None:
        self.status = "closed" if closes else "open"
        if version not in self.versions:
            self.versions.append(version)
            self.applied_at_ms.append(at_ms)

    def to_json(self) -> dict[str, Any]:
        return {
            "versions": self.versions,
            "applied_at_ms": self.applied_at_ms,
            "status": self.status,
            "requests": self.requests,
            "duplicates": self.duplicates,
            "log": [s.to_json() for s in self.log],
        }


@dataclass(frozen=True)
class Clock:
    """Monotonic seconds for windows, lifetimes and task delays; epoch milliseconds for
    what the sandbox reports."""

    now: Callable[[], float] = time.monotonic
    wall_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000


@dataclass
class BoardState:
    name: str
    faults: Faults = field(default_factory=Faults)
    limits: Limits = field(default_factory=Limits)
    stats: Stats = field(default_factory=Stats)
    window: RollingWindow = field(default_factory=RollingWindow)
    tokens: Tokens = field(default_factory=Tokens)
    postings: dict[str, SandboxPosting] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.limits = DEFAULT_LIMITS[self.name]

    def reset(self) -> None:
        """Forget everything but the tokens issued: a reset is not a revocation, and the
        consumers running against the sandbox keep theirs until they expire."""
        self.faults = Faults()
        self.limits = DEFAULT_LIMITS[self.name]
        self.stats = Stats()
        self.window = RollingWindow()
        self.postings = {}

    def posting(self, posting_id: str) -> SandboxPosting:
        return self.postings.setdefault(posting_id, SandboxPosting())

    def admitted(self, now: float, size: int) -> None:
        in_window = self.window.admit(now, size)
        self.stats.records += size
        self.stats.max_records_in_60s = max(self.stats.max_records_in_60s, in_window)
        self.stats.max_records_per_call = max(self.stats.max_records_per_call, size)


class BadKeys(ValueError):
    """The Idempotency-Key header does not name one key per element."""


def element_keys(header: str | None, count: int) -> list[tuple[str, int]]:
    """`Idempotency-Key: <posting id>:<version>[, …]`, one key per element in element order.
    Neither board defines per-element idempotency (the real ones ignore the header); the
    sandbox reads it to apply each version once and to know which version it applies."""
    keys = [k.strip() for k in (header or "").split(",")] if header else []
    if len(keys) != count:
        raise BadKeys(f"Idempotency-Key must name {count} key(s) {{posting_id}}:{{version}}, one per element")
    parsed = []
    for key in keys:
        posting_id, _, version = key.rpartition(":")
        if not posting_id or not version.isdigit():
            raise BadKeys(f"Idempotency-Key {key!r} is not {{posting_id}}:{{version}}")
        parsed.append((posting_id, int(version)))
    return parsed
