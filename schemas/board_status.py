"""The record of `jobpost.board-status`: what one member of a board's consumer group holds of
its destination now (budgets and their use, the circuit, a pause, the oldest unconfirmed
task), keyed `{board}/{member}`. The board consumers write it every few seconds and at each
change of the circuit; the API merges every member's into `GET /ops/boards`."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

STALE_INTERVALS = 3  # a status older than this many of its member's intervals is stale


@dataclass(frozen=True, slots=True)
class DailyUse:
    """One kind of the daily quota (records, requests, task_status_calls): the group's cap
    (None: none) and what this member used since the last reset."""

    kind: str
    cap: int | None
    used: int

    def to_avro(self) -> dict[str, Any]:
        return {"kind": self.kind, "cap": self.cap, "used": self.used}

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> DailyUse:
        return DailyUse(record["kind"], record["cap"], record["used"])


@dataclass(frozen=True, slots=True)
class BoardStatus:
    board: str
    member: str
    published_at: int  # epoch ms
    interval_ms: int
    share: float  # of the group's partitions, so of its budgets
    records_per_minute: float | None  # the group's configured budgets (None: none)
    requests_per_minute: float | None
    records_allowed: float | None  # this member's, now (None: unlimited)
    requests_allowed: float | None
    records_this_minute: int
    requests_this_minute: int
    daily: tuple[DailyUse, ...]
    daily_reset_at: int
    circuit: str  # closed, open, probing
    circuit_reason: str | None
    circuit_since: int | None
    paused_reason: str | None
    paused_until: int | None
    open_tasks: int
    oldest_task_submitted_at: int | None

    @property
    def key(self) -> str:
        return f"{self.board}/{self.member}"

    def stale(self, now: int) -> bool:
        """Not heard from for longer than `STALE_INTERVALS` of its own intervals."""
        return now - self.published_at > STALE_INTERVALS * self.interval_ms

    def to_avro(self) -> dict[str, Any]:
        record = {field.name: getattr(self, field.name) for field in fields(self)}
        record["daily"] = [use.to_avro() for use in self.daily]
        return record

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> BoardStatus:
        values = {field.name: record[field.name] for field in fields(cls)}
        values["daily"] = tuple(DailyUse.from_avro(use) for use in record["daily"])
        return cls(**values)
