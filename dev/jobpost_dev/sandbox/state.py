"""What one sandbox board holds besides its jobs, in plain types: its faults and limits, its
counters, the tokens it issued, and per posting (the partner's id for the job: LinkedIn's
`externalJobPostingId`, Indeed's `jobPostingId`) what it saw and applied, and when.

Neither board knows jobpost's version numbers, and neither reads `Idempotency-Key`. What a
board can tell apart is content: each distinct content (with whether it closes the job) a
posting's calls carried gets a number in the order the board first saw it, so a posting
whose every version differs from the one before reads 0, 1, 2 … as jobpost numbers them. An
application that changes nothing at the board (the same content again, a job closed twice,
a duplicate CREATE) is a repeat, counted in `duplicates`."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from jobpost_dev.sandbox.faults import Faults
from jobpost_dev.sandbox.limits import DEFAULT_LIMITS, Limits, RollingWindow, Today
from jobpost_dev.sandbox.refusals import RefusalLog
from jobpost_dev.sandbox.tokens import Tokens


@dataclass
class Stats:
    """`GET /_sandbox/{board}/stats`: since the last reset."""

    calls: int = 0  # calls to the board's API (its token endpoint apart)
    records: int = 0  # jobs carried by the calls the budget admitted
    throttled: int = 0  # 429s answered
    expired_token_calls: int = 0  # an expired or unknown token
    tokens_issued: int = 0
    max_records_in_60s: int = 0  # the most records admitted within any 60 s
    max_records_per_call: int = 0
    refused: int = 0  # jobs refused for their content in the call's answer
    failed_tasks: int = 0  # LinkedIn: tasks that ended FAILED
    rejected: int = 0  # Indeed: jobs rejected at indexing
    duplicates: int = 0  # repeats, as the board identifies a job

    def to_json(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class Submission:
    """One content as the board took it: for LinkedIn the task it started, so a test can
    check that no version was submitted before the previous one's task ended."""

    version: int
    operation: str
    submitted_at_ms: int
    task_id: str | None = None
    ended_at_ms: int | None = None
    state: str = "IN_PROGRESS"  # LinkedIn: IN_PROGRESS, SUCCEEDED, FAILED; Indeed: APPLIED or REFUSED
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


def content_key(content: Any, closes: bool) -> str:
    return json.dumps([content, closes], sort_keys=True, separators=(",", ":"), default=str)


@dataclass
class PostingRecord:
    """What the board saw and applied for one posting id, whatever job(s) it made of it."""

    versions: list[int] = field(default_factory=list)  # applied, in the order applied
    applied_at_ms: list[int] = field(default_factory=list)
    requests: int = 0  # calls that carried this posting
    duplicates: int = 0  # applications that changed nothing at the board
    log: list[Submission] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)  # content_key → its number

    def number(self, key: str) -> int:
        """The number of a content: the one it had when first seen, else the next."""
        return self.seen.setdefault(key, len(self.seen))

    def applied(self, version: int, at_ms: int) -> None:
        self.versions.append(version)
        self.applied_at_ms.append(at_ms)

    def to_json(self, status: str) -> dict[str, Any]:
        return {
            "versions": self.versions,
            "applied_at_ms": self.applied_at_ms,
            "status": status,
            "requests": self.requests,
            "duplicates": self.duplicates,
            "log": [s.to_json() for s in self.log],
        }


@dataclass
class BoardState:
    name: str
    faults: Faults = field(default_factory=Faults)
    limits: Limits = field(default_factory=Limits)
    stats: Stats = field(default_factory=Stats)
    window: RollingWindow = field(default_factory=RollingWindow)
    today: Today = field(default_factory=Today)
    tokens: Tokens = field(default_factory=Tokens)
    postings: dict[str, PostingRecord] = field(default_factory=dict)
    refusals: RefusalLog = field(default_factory=RefusalLog)

    def __post_init__(self) -> None:
        self.limits = DEFAULT_LIMITS[self.name]

    def reset(self) -> None:
        """Forget everything but the tokens issued: a reset is not a revocation, and the
        consumers running against the sandbox keep theirs until they expire."""
        self.faults = Faults()
        self.limits = DEFAULT_LIMITS[self.name]
        self.stats = Stats()
        self.window = RollingWindow()
        self.today = Today()
        self.postings = {}

    def posting(self, posting_id: str) -> PostingRecord:
        return self.postings.setdefault(posting_id, PostingRecord())

    def admitted(self, now: float, size: int) -> None:
        in_window = self.window.admit(now, size)
        self.stats.records += size
        self.stats.max_records_in_60s = max(self.stats.max_records_in_60s, in_window)
        self.stats.max_records_per_call = max(self.stats.max_records_per_call, size)

    def repeat(self, posting: PostingRecord) -> None:
        posting.duplicates += 1
        self.stats.duplicates += 1

    def refused(self, posting_id: str, where: str, status: int | str, message: str, at_ms: int) -> None:
        """A job refused for its content (`where`: in the call's answer, or in its task)."""
        if where == "task":
            self.stats.failed_tasks += 1
        elif where == "indexing":
            self.stats.rejected += 1
        else:
            self.stats.refused += 1
        self.refusals.write(self.name, posting_id, where, status, message, at_ms)
