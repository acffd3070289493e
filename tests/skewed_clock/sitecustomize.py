"""A skewed wall clock for a test's child process: on PYTHONPATH, Python imports this at
start-up, and every `time.time()` / `time.time_ns()` of that process (and what reads it:
logging, the API's `received_at`) is off by `JOBPOST_TEST_CLOCK_SKEW_S` seconds, as a host
whose clock drifted would be. The monotonic clock and librdkafka's own clock are not
touched (a skewed host keeps a steady monotonic clock)."""

import os
import time

_skew_s = float(os.environ.get("JOBPOST_TEST_CLOCK_SKEW_S") or 0)
if _skew_s:
    _time, _time_ns = time.time, time.time_ns
    time.time = lambda: _time() + _skew_s
    time.time_ns = lambda: _time_ns() + int(_skew_s * 1e9)
