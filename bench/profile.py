"""Where each thread of the API process spends its time under saturation: py-spy samples
every thread (idle ones too) while wrk drives 32 clients over 1,000 postings, and this
prints, per thread, its share of the samples and the functions it spends them in (self
time, then the innermost project frame, which says which of our lines is waiting)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
from collections import Counter, defaultdict
from pathlib import Path

from bench.common import local_kafka
from bench.write_path import TOKEN, create_postings, saturate
from jobpost_dev import stack
from jobpost_dev.processes import ApiProcess

PROJECT = ("producer_api/", "schemas/", "consumers/", "search_indexer/")


def record(pid: int, seconds: int, out: Path) -> None:
    py_spy = shutil.which("py-spy") or str(Path(__file__).parents[1] / ".venv" / "bin" / "py-spy")
    subprocess.run(
        [py_spy, "record", "--pid", str(pid), "--duration", str(seconds), "--rate", "200", "--threads",
         "--idle", "--nonblocking", "--format", "raw", "--output", str(out)],
        check=True, capture_output=True,
    )  # fmt: skip


def summarise(raw: Path, top: int = 6) -> str:
    """py-spy's raw format: one line per stack, `thread;frame;frame... count`."""
    per_thread: Counter[str] = Counter()
    leaf: dict[str, Counter[str]] = defaultdict(Counter)
    ours: dict[str, Counter[str]] = defaultdict(Counter)
    for line in raw.read_text().splitlines():
        stack_text, _, count_text = line.rpartition(" ")
        frames = stack_text.split(";")
        thread, count = frames[0], int(count_text)
        per_thread[thread] += count
        leaf[thread][_short(frames[-1])] += count
        project = [f for f in frames[1:] if any(p in f for p in PROJECT)]
        ours[thread][_short(project[-1]) if project else "(outside the project)"] += count
    total = sum(per_thread.values())
    lines = []
    for thread, count in per_thread.most_common():
        if count < total * 0.02:
            continue
        lines.append(f"\n{thread}: {100 * count / total:.0f} % of samples")
        lines.append(
            "  self: " + "; ".join(f"{f} {100 * c / count:.0f} %" for f, c in leaf[thread].most_common(top))
        )
        lines.append(
            "  in:   " + "; ".join(f"{f} {100 * c / count:.0f} %" for f, c in ours[thread].most_common(top))
        )
    return "\n".join(lines)


def _short(frame: str) -> str:
    """`function (path/to/file.py:12)` -> `function (file.py:12)`."""
    name, _, where = frame.partition(" (")
    return f"{name} ({where.rsplit('/', 1)[-1]}" if where else name


def main(seconds: int = 20) -> None:
    kafka = local_kafka()
    api = ApiProcess(kafka, TOKEN, stack.StackSettings().elasticsearch_url)
    try:
        api.wait_ready()
        postings = create_postings(api, 1000)
        with tempfile.TemporaryDirectory() as folder:
            raw = Path(folder, "profile.txt")
            profiler = threading.Thread(target=record, args=(api.popen.pid, seconds, raw))
            profiler.start()
            load = saturate(api, postings, 32, seconds)
            profiler.join()
            print(
                f"API process under 32 clients (wrk): {load.rate:.0f} updates/s, p50 {load.p50_ms:.0f} ms, "
                f"p99 {load.p99_ms:.0f} ms; py-spy at 200 samples/s, every thread, idle too"
            )
            print(summarise(raw))
    finally:
        api.stop()
