"""Where a write's time goes, as histograms on /metrics (`jobpost_write_stage_seconds`):

    API:       HTTP in ─accepted─▶ command produced ─command_written─▶ acknowledged
                                   command produced ─sequenced─▶ reply read
                                   reply read ─resume─▶ handler runs ─respond─▶ HTTP out
    sequencer: command received ─to_sequencer─▶ polled ─transaction─▶ committed
    and `request`: the whole of it, HTTP in to HTTP out, as the API saw it.

`sequenced` spans the sequencer's two stages and the reply's way back, so the reply read
is `sequenced - to_sequencer - transaction` (the benchmark prints it). A request's
timestamps live in a context variable the HTTP middleware opens, so the command client
marks them without being handed anything.
"""

from __future__ import annotations

import contextvars
import time
from dataclasses import dataclass

from prometheus_client import Histogram

STAGE_SECONDS = Histogram(
    "jobpost_write_stage_seconds",
    "Time of each stage of an accepted write (see producer_api/write_stages.py)",
    ["stage"],
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5),
)
STAGES = (
    "accepted",
    "command_written",
    "to_sequencer",
    "transaction",
    "sequenced",
    "resume",
    "respond",
    "request",
)


@dataclass
class WriteTiming:
    """One request's marks (time.perf_counter())."""

    started: float
    resumed: float | None = None


_current: contextvars.ContextVar[WriteTiming | None] = contextvars.ContextVar("write_timing", default=None)


def open_request() -> WriteTiming:
    timing = WriteTiming(time.perf_counter())
    _current.set(timing)
    return timing


def current() -> WriteTiming | None:
    return _current.get()


def observe(stage: str, seconds: float) -> None:
    STAGE_SECONDS.labels(stage).observe(max(seconds, 0.0))
