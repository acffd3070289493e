"""Waiting on the processes a benchmark starts: until ready, until a write is accepted,
and what they hold in memory and on disk."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path

import httpx

from bench.write_path import BODY, TOKEN
from jobpost_dev import stack
from jobpost_dev.processes import ApiProcess, Process
from runtime.kafka import KafkaSettings

# Long enough for today's restore from the whole log at a million postings; a figure not
# reached in time is reported as such, not waited for forever.
DEADLINE_S = 1800.0


class Stopwatch:
    """Seconds from a start, on the monotonic clock."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started


def start_api(kafka: KafkaSettings, state_dir: Path, **env: str) -> ApiProcess:
    return ApiProcess(
        kafka, TOKEN, stack.StackSettings().elasticsearch_url, JOBPOST_STATE_DIR=str(state_dir), **env
    )


def alive(process: Process) -> None:
    if process.popen.poll() is not None:
        raise AssertionError(f"{process.name} exited:\n{process.log_tail()}")


async def until_ready(api: ApiProcess, clock: Stopwatch) -> float | None:
    async with httpx.AsyncClient(timeout=5) as http:
        while clock.elapsed() < DEADLINE_S:
            alive(api)
            try:
                if (await http.get(f"{api.url}/readyz")).status_code == 200:
                    return clock.elapsed()
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    return None


async def until_written(api: ApiProcess, posting_id: str, clock: Stopwatch) -> tuple[float | None, int]:
    """Retry one update (same Idempotency-Key, as a client would) until it is accepted:
    (seconds, the version it made)."""
    headers = {**api.headers, "Idempotency-Key": uuid.uuid4().hex}
    async with httpx.AsyncClient(timeout=30, headers=headers) as http:
        while clock.elapsed() < DEADLINE_S:
            alive(api)
            try:
                response = await http.put(f"{api.url}/postings/{posting_id}", json=BODY)
            except httpx.HTTPError:
                await asyncio.sleep(0.1)
                continue
            if response.status_code == 200:
                return clock.elapsed(), int(response.json()["version"])
            if response.status_code < 500:
                raise AssertionError(f"update refused: {response.status_code} {response.text}")
            await asyncio.sleep(0.05)
    return None, -1


async def ready_and_written(
    api: ApiProcess, posting_id: str, clock: Stopwatch
) -> tuple[float | None, float | None]:
    ready, (written, _) = await asyncio.gather(until_ready(api, clock), until_written(api, posting_id, clock))
    return ready, written


def rss_mib(process: Process) -> float:
    """Resident memory of the process and its children (its own process group)."""
    total_kib = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if os.getpgid(int(proc.name)) != process.popen.pid:
                continue
            status = (proc / "status").read_text()
        except (OSError, ProcessLookupError):
            continue
        total_kib += next(
            (int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0
        )
    return total_kib / 1024


def disk_mib(folder: Path) -> float:
    """What `du` counts: allocated blocks."""
    total = sum(p.stat().st_blocks * 512 for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    return total / 2**20
