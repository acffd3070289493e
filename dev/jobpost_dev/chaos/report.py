"""What a fault run found, as the lines `make chaos` prints: the verdict, the answers, the
longest stretches without an acknowledged write (overall and per fault), the reads each
replica refused or failed, every process that exited and why, the sequencer members'
sessions.

A fault's window runs from its start to 30 s after it ended, or to the next fault's start
if that comes first (so an API replica killed right after a broker came back counts as the
API kill's, not the broker's)."""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass, field
from typing import NamedTuple

import httpx

from jobpost_dev.chaos import verify
from jobpost_dev.chaos.exits import Exit
from jobpost_dev.chaos.faults import Victim
from jobpost_dev.chaos.load import Ledger, Read
from schemas.topics import BOARDS

AFTER_FAULT_S = 30.0  # how long after a fault its window runs (unless the next one begins)
BROKER_FAULTS = ("broker-kill", "broker-pause")


@dataclass
class FaultWindow:
    name: str
    started: float
    ended: float
    what: str = ""


@dataclass
class Report:
    ledger: Ledger
    verdict: verify.Verdict
    windows: list[FaultWindow]
    converged_after_s: float | None
    load_ended: float = float("inf")
    members: dict[str, dict[str, float]] = field(default_factory=dict)  # API -> its sequencer's counters
    partitions: dict[str, int] = field(default_factory=dict)  # posting id -> its partition, from the log
    victims: list[Victim] = field(default_factory=list)  # what the faults ended
    exits: list[Exit] = field(default_factory=list)  # every process that exited during the run

    def lines(self) -> list[str]:
        ok = [s for s in self.ledger.samples if s.ok]
        during = [s.latency_s for s in ok if self._in_fault(s.started)]
        calm = [s.latency_s for s in ok if not self._in_fault(s.started)]
        gap, cause = self.longest_outage()
        v = self.verdict
        ledger = self.ledger
        return [
            f"writes attempted {ledger.attempted}, acknowledged "
            f"{len(ledger.acked) + len(ledger.acked_unkeyed)} ({len(ledger.acked_unkeyed)} without a key), "
            f"gave up {len(ledger.gave_up)}, refused {ledger.refused}",
            f"lost {len(v.lost)}, duplicated {len(v.duplicated)}, reordered {len(v.reordered)}, "
            f"accepted but never acknowledged {len(v.unacknowledged)}",
            f"answers 503 to writes without a key: {len(ledger.not_applied)}, of them applied: "
            f"{len(v.applied_after_503)}; answers 504 (outcome unknown): {ledger.answered_504}; "
            f"writes without a key left unknown: {len(ledger.unknown)}, of them applied: {v.unknown_applied}",
            "boards not as accepted: "
            + ", ".join(f"{board} {len(v.boards.get(board, []))}" for board in BOARDS)
            + f"; index not at the last version: {len(v.index)}",
            *(f"  not as accepted: {sample}" for sample in v.board_samples),
            f"dead letters: {v.dead_letters}",
            f"longest stretch without a successful write: {gap:.1f} s ({cause})",
            self._partition_line(),
            f"write latency during faults: {_percentiles(during)}; without: {_percentiles(calm)}",
            "converged "
            + (
                f"{self.converged_after_s:.1f} s after the last fault"
                if self.converged_after_s is not None
                else "NOT within the timeout"
            ),
            *(
                f"  sequencer member of {api} (since its last start): "
                + ", ".join(f"{name} {value:.0f}" for name, value in counters.items())
                for api, counters in self.members.items()
            ),
            self._reads_line(),
            *(self._fault_line(w) for w in self.windows),
            f"processes that exited during the run: {len(self.exits)}, of them not the run's doing: "
            f"{len(self.unexpected_exits)}",
            *(f"  exited: {e.said()}" for e in self.exits),
        ]

    @property
    def unexpected_exits(self) -> list[Exit]:
        return [e for e in self.exits if e.fault is None]

    def window_end(self, w: FaultWindow) -> float:
        """Where a fault's window ends: 30 s after it, the next fault's start, or the end
        of the load, whichever comes first."""
        later = [o.started for o in self.windows if o.started > w.started]
        return min([w.ended + AFTER_FAULT_S, self.load_ended, *later])

    def unanswered_reads(self, w: FaultWindow, replica: str | None = None) -> list[Read]:
        """Reads refused or failed in the fault's window (of one replica, or all)."""
        end = self.window_end(w)
        return [
            r
            for r in self.ledger.reads
            if r.outcome != "served" and w.started <= r.at <= end and replica in (None, r.api)
        ]

    def victim_replica(self, w: FaultWindow) -> str | None:
        """The URL of the API replica the fault killed, if it killed one."""
        ports = [v.port for v in self.victims if v.fault == w.name and v.port is not None]
        return next((api for api in self.members if ports and api.endswith(f":{ports[0]}")), None)

    def reads_lost_to_others(self, w: FaultWindow) -> int:
        """Reads refused or failed in the window by replicas the fault did not kill."""
        killed = self.victim_replica(w)
        return sum(1 for r in self.unanswered_reads(w) if r.api != killed)

    def partition_gap(self, w: FaultWindow) -> Stretch:
        return self.longest_partition_gap(w.started, self.window_end(w))

    def _reads_line(self) -> str:
        by_api: dict[str, dict[str, int]] = {}
        for r in self.ledger.reads:
            counts = by_api.setdefault(r.api, {"served": 0, "refused": 0, "failed": 0})
            counts[r.outcome] += 1
        return "reads: " + "; ".join(
            f"{api} served {c['served']}, refused {c['refused']}, failed {c['failed']}"
            for api, c in sorted(by_api.items())
        )

    @property
    def kept_every_promise(self) -> bool:
        v = self.verdict
        return (
            not (v.lost or v.duplicated or v.reordered or v.applied_after_503)
            and self.converged_after_s is not None
        )

    def _in_fault(self, at: float) -> bool:
        return any(w.started <= at <= w.ended + 5 for w in self.windows)

    def longest_gap(self, start: float, end: float) -> float:
        """The longest time in [start, end] in which no write was acknowledged."""
        return _longest_stretch(self._acknowledged_at(), start, end)

    def _acknowledged_at(self) -> list[float]:
        return [s.started + s.latency_s for s in self.ledger.samples if s.ok]

    def _acknowledged_by_partition(self) -> dict[int, list[float]]:
        done: dict[int, list[float]] = {}
        for s in self.ledger.samples:
            if s.ok and s.posting_id in self.partitions:
                done.setdefault(self.partitions[s.posting_id], []).append(s.started + s.latency_s)
        return done

    def longest_partition_gap(self, start: float | None = None, end: float | None = None) -> Stretch:
        """The longest time in [start, end] (default: from the first acknowledged write to
        the end of the load) in which one partition had no write acknowledged, that
        partition, and when the stretch began: a sequencer member that stalls takes its
        partitions' writes away while the others go on."""
        done = self._acknowledged_by_partition()
        if not done:
            return Stretch(0.0, -1, 0.0)
        if start is None:
            start = _first(done)
        if end is None:
            end = min(self.load_ended, max(max(times) for times in done.values()))
        stretches = []
        for n, times in done.items():
            seconds, began = _longest_span(times, start, end)
            stretches.append(Stretch(seconds, n, began))
        return max(stretches)

    def _fault_line(self, w: FaultWindow) -> str:
        until = self.window_end(w)
        gap, partition, _ = self.partition_gap(w)
        unanswered: dict[str, int] = {}
        for r in self.unanswered_reads(w):
            unanswered[r.api] = unanswered.get(r.api, 0) + 1
        killed = self.victim_replica(w)
        reads = ", ".join(
            f"{api}{' (killed)' if api == killed else ''} {n}" for api, n in sorted(unanswered.items())
        )
        return (
            f"  fault {w.name}: {w.what} ({w.ended - w.started:.1f} s); no write acknowledged for "
            f"{self.longest_gap(w.started, until):.1f} s at most, on one partition {gap:.1f} s "
            f"(number {partition}), until {until - w.ended:.0f} s after it; reads refused or failed: "
            f"{reads or 'none'}"
        )

    def _partition_line(self) -> str:
        gap, partition, began = self.longest_partition_gap()
        done = self._acknowledged_by_partition()
        first = _first(done) if done else began  # where longest_partition_gap starts looking
        return (
            f"longest stretch without a successful write on a partition: {gap:.1f} s (number {partition}, "
            f"from {began - first:.1f} s after the first acknowledged write; {self._cause(began)})"
        )

    def longest_outage(self) -> tuple[float, str]:
        done = sorted(self._acknowledged_at())
        if len(done) < 2:
            return 0.0, "no writes"
        gap, end = max((b - a, b) for a, b in itertools.pairwise(done))
        return gap, self._cause(end - gap)

    def _cause(self, began: float) -> str:
        """The fault a stretch without writes that began then is put down to."""
        return next((w.name for w in self.windows if w.started - 1 <= began <= w.ended + 5), "no fault")

    def broker_fault_windows(self) -> list[FaultWindow]:
        return [w for w in self.windows if w.name in BROKER_FAULTS]


class Stretch(NamedTuple):
    seconds: float
    partition: int
    began: float


def _first(by_partition: dict[int, list[float]]) -> float:
    return min(min(times) for times in by_partition.values())


def _longest_stretch(times: list[float], start: float, end: float) -> float:
    return _longest_span(times, start, end)[0]


def _longest_span(times: list[float], start: float, end: float) -> tuple[float, float]:
    """The longest time in [start, end] between two of `times` (or an edge), and when it
    began."""
    inside = sorted(t for t in times if start <= t <= end)
    return max((b - a, a) for a, b in itertools.pairwise([start, *inside, end]))


def _percentiles(samples: list[float]) -> str:
    if len(samples) < 2:
        return "too few samples"
    q = statistics.quantiles([s * 1000 for s in samples], n=100, method="inclusive")
    return f"p50 {q[49]:.0f} ms, p99 {q[98]:.0f} ms ({len(samples)} writes)"


_COUNTERS = {
    "jobpost_sequencer_sessions_total": "sessions",
}


def sequencer_counters(api: str) -> dict[str, float]:
    """How often the replica's sequencer member began a session (each one a rebalance of
    the group)."""
    try:
        text = httpx.get(f"{api}/metrics", timeout=5).text
    except httpx.HTTPError:
        return {}
    found = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in _COUNTERS:
            found[_COUNTERS[name]] = float(value)
    return found
