"""A destination's circuit: whether its board is up, so a failure of the whole board is
handled once, for the whole board, and costs no posting its retry budget.

- **closed**: calls flow. `BoardDown` a couple of times in a row (connection refused, DNS,
  TLS, a token endpoint that fails, credentials refused with a fresh token) opens it, and so
  do failures that say nothing about an element (`CallFailed`: timeouts, 5xx, answers nobody
  can read; or every element of a call `Unsure`) for several distinct postings, over more
  than one call, within a short window with no call answered in between: one posting that
  keeps failing is that posting's problem, many at once are the board's.
- **open**: no lane calls and nothing is charged to any posting; after a wait (1 s,
  doubling, at most 30 s by default) one call is let through as a probe.
- **probing**: that one call is in flight; nothing else goes. Answered → closed, and every
  lane resumes where it was, in order; failed → open again with a longer wait.

Pure: time is passed in (milliseconds), so it is unit-tested without waiting.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum, StrEnum

from pydantic import BaseModel, Field


class CircuitSettings(BaseModel):
    board_down_to_open: int = Field(default=2, ge=1, description="BoardDown answers in a row that open it")
    failing_postings_to_open: int = Field(
        default=5, ge=1, description="distinct postings failing without an answered call in between"
    )
    failure_window_s: float = Field(default=10.0, gt=0, description="how recent those failures must be")
    probe_first_wait_s: float = Field(default=1.0, gt=0, description="open → first probe")
    probe_max_wait_s: float = Field(default=30.0, gt=0, description="longest wait between probes")


class CircuitState(IntEnum):
    """The values of `jobpost_destination_circuit_state`."""

    CLOSED = 0
    OPEN = 1
    PROBING = 2


class OpenedBecause(StrEnum):
    """The `reason` label of `jobpost_destination_circuit_opened_total`."""

    BOARD_DOWN = "board_down"
    CALL_FAILURES = "call_failures"


@dataclass(frozen=True, slots=True)
class Permit:
    """What the circuit lets a caller do now: call (`probe` when it is the one probe), or
    wait `wait_ms` (None: until the probe in flight is answered)."""

    call: bool
    probe: bool = False
    wait_ms: int | None = None


class Circuit:
    def __init__(self, settings: CircuitSettings | None = None) -> None:
        self.settings = settings or CircuitSettings()
        self.state = CircuitState.CLOSED
        self.since_ms = 0
        self.reason = ""  # why it opened (the last failure's words)
        self.opened_because: OpenedBecause | None = None
        self._board_down_in_a_row = 0
        self._failures: deque[tuple[int, str, int]] = deque()  # (when, posting id, call number)
        self._calls = 0
        self._probe_wait_ms = 0
        self._next_probe_at = 0

    @property
    def closed(self) -> bool:
        return self.state == CircuitState.CLOSED

    def permit(self, now: int) -> Permit:
        if self.state == CircuitState.CLOSED:
            return Permit(call=True)
        if self.state == CircuitState.PROBING:
            return Permit(call=False)
        if now < self._next_probe_at:
            return Permit(call=False, wait_ms=self._next_probe_at - now)
        self.state = CircuitState.PROBING
        return Permit(call=True, probe=True)

    @property
    def next_probe_at(self) -> int | None:
        """When the next probe may go, while open (epoch ms); None otherwise."""
        return self._next_probe_at if self.state == CircuitState.OPEN else None

    def release(self, now: int) -> None:
        """The probe taken by `permit` was not used (nothing to send after all): the next
        caller may probe at once."""
        if self.state == CircuitState.PROBING:
            self.state = CircuitState.OPEN
            self._next_probe_at = now

    def answered(self, now: int) -> bool:
        """The board took a call (whatever it said of each element, a 429 included): the
        board is up. Returns True when that closed the circuit."""
        self._board_down_in_a_row = 0
        self._failures.clear()
        if self.state == CircuitState.CLOSED:
            return False
        self.state, self.since_ms, self.reason, self.opened_because = CircuitState.CLOSED, now, "", None
        self._probe_wait_ms = 0
        return True

    def board_down(self, now: int, reason: str) -> bool:
        """A `BoardDown`. Returns True when it opened the circuit."""
        self._board_down_in_a_row += 1
        if self.state != CircuitState.CLOSED:
            return self._reopen(now, reason)
        if self._board_down_in_a_row >= self.settings.board_down_to_open:
            return self._open(now, OpenedBecause.BOARD_DOWN, reason)
        return False

    def call_failed(self, now: int, posting_ids: Iterable[str], reason: str) -> bool:
        """A call that says nothing about its elements failed (or answered every element
        `Unsure`). Returns True when it opened the circuit."""
        if self.state != CircuitState.CLOSED:
            return self._reopen(now, reason)
        self._calls += 1
        self._failures.extend((now, posting_id, self._calls) for posting_id in posting_ids)
        horizon = now - int(self.settings.failure_window_s * 1000)
        while self._failures and self._failures[0][0] < horizon:
            self._failures.popleft()
        postings = {posting_id for _, posting_id, _ in self._failures}
        calls = {call for _, _, call in self._failures}
        if len(postings) >= self.settings.failing_postings_to_open and len(calls) >= 2:
            return self._open(now, OpenedBecause.CALL_FAILURES, reason)
        return False

    def _open(self, now: int, because: OpenedBecause, reason: str) -> bool:
        self.state, self.since_ms, self.reason, self.opened_because = CircuitState.OPEN, now, reason, because
        self._failures.clear()
        self._probe_wait_ms = int(self.settings.probe_first_wait_s * 1000)
        self._next_probe_at = now + self._probe_wait_ms
        return True

    def _reopen(self, now: int, reason: str) -> bool:
        """A failure while open or probing (the probe's, or a call that left before it opened):
        wait longer before the next probe."""
        if self.state == CircuitState.PROBING:
            self._probe_wait_ms = min(int(self.settings.probe_max_wait_s * 1000), self._probe_wait_ms * 2)
            self._next_probe_at = now + self._probe_wait_ms
            self.state = CircuitState.OPEN
        self.reason = reason
        return False
