"""Bulk: 10,000 postings created through `POST /postings:batch` (100 batches of 100, a few
in flight at once) against the whole system as `make run` starts it; the time until all
10,000 are accepted, then until the same 10,000 are at both boards (the sandbox) and in
search. Where the time goes: the CPU each process spent per posting in each phase (from
/proc), the API's write stages, and how many sequencer transactions the commands took."""

from __future__ import annotations

import asyncio
import json
import resource
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from bench import profile, stages
from bench.system import System, cpu_seconds, running_system, thread_cpu
from tests import postings

POSTINGS, PER_BATCH, IN_FLIGHT = 10_000, 100, 4
BOARDS = ("linkedin", "indeed")
TARGET_S = 10.0
SAMPLED_S = 8
AT_REST_S = 5


def batches(run: str) -> list[bytes]:
    """The request bodies, encoded before the clock starts."""
    items = [
        {
            "op": "create",
            "idempotency_key": f"{run}-{n}",
            "posting": postings.body(n, title=f"{postings.posting(n).title} {n}"),
        }
        for n in range(POSTINGS)
    ]
    return [json.dumps({"items": items[n : n + PER_BATCH]}).encode() for n in range(0, POSTINGS, PER_BATCH)]


async def send(system: System, bodies: list[bytes], in_flight: int) -> tuple[list[str], list[dict[str, Any]]]:
    """Every batch, `in_flight` at a time: the ids created and every item that was not."""
    created: list[str] = []
    refused: list[dict[str, Any]] = []
    queue = iter(bodies)
    headers = {**system.headers, "Content-Type": "application/json"}

    async def client(http: httpx.AsyncClient) -> None:
        for body in queue:
            response = await http.post(f"{system.api}/postings:batch", content=body, headers=headers)
            response.raise_for_status()
            for item in response.json()["items"]:
                if item["status"] == 201:
                    created.append(item["posting"]["id"])
                else:
                    refused.append(item)

    async with httpx.AsyncClient(timeout=120) as http:
        await asyncio.gather(*(client(http) for _ in range(in_flight)))
    return created, refused


def counter(http: httpx.Client, url: str, name: str, **labels: str) -> float:
    """The sum of counter `name`'s samples with these labels (0 when it is absent)."""
    try:
        text = http.get(url).text
    except httpx.HTTPError:
        return 0.0
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def sequencer_batches(system: System) -> tuple[float, float]:
    """(transactions, commands) of the API's sequencer member so far."""
    text = httpx.get(f"{system.api}/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        if family.name == "jobpost_sequencer_batch_commands":
            values = {
                s.name.rsplit("_", 1)[1]: s.value for s in family.samples if not s.name.endswith("bucket")
            }
            return values["count"], values["sum"]
    return 0.0, 0.0


def searchable(http: httpx.Client, system: System, ids: list[str] | None = None) -> int:
    """Active documents behind the run's alias (of `ids` when given)."""
    matching: list[dict[str, Any]] = [{"term": {"status": "active"}}]
    if ids is not None:
        matching.append({"ids": {"values": ids}})
    query = {"query": {"bool": {"filter": matching}}}
    response = http.post(f"{system.elasticsearch}/{system.alias}/_count", json=query)
    return int(response.json().get("count", 0)) if response.status_code == 200 else 0


async def at_board(system: System, board: str, ids: list[str]) -> tuple[list[str], int]:
    """(ids the board does not show at version 0 yet, the latest time one was applied)."""
    missing: list[str] = []
    latest = 0
    limit = asyncio.Semaphore(16)

    async def check(http: httpx.AsyncClient, posting_id: str) -> None:
        nonlocal latest
        async with limit:
            response = await http.get(f"{system.sandbox}/_sandbox/{board}/postings/{posting_id}")
        seen = response.json() if response.status_code == 200 else {}
        if 0 not in seen.get("versions", []):
            missing.append(posting_id)
        latest = max(latest, *seen.get("applied_at_ms", [0]))

    async with httpx.AsyncClient(timeout=30) as http:
        await asyncio.gather(*(check(http, posting_id) for posting_id in ids))
    return missing, latest


def wait_for_deliveries(system: System, postings: int, started: float) -> dict[str, float]:
    """Seconds from the first batch sent until each board's consumer counts `postings`
    delivered and search holds as many: cheap to ask, so the asking costs the system little."""
    done: dict[str, float] = {}
    deadline = time.monotonic() + 900
    with httpx.Client(timeout=30) as http:
        while len(done) < 3:
            for board in BOARDS:
                if board not in done and postings <= counter(
                    http, system.metrics[board], "jobpost_deliveries_total", outcome="delivered"
                ):
                    done[board] = time.time() - started
            if "search" not in done and searchable(http, system) >= postings:
                done["search"] = time.time() - started
            if time.monotonic() > deadline:
                raise AssertionError(f"after 900 s only {sorted(done)} had every posting")
            time.sleep(0.25)
    return done


def confirm(system: System, ids: list[str], started: float, done: dict[str, float]) -> None:
    """From outside the code: each posting at version 0 at both boards (the sandbox) and in
    search; a board's time becomes the last time it applied one, where the sandbox says."""
    with httpx.Client(timeout=60) as http:
        found = searchable(http, system, ids)
        if found != len(ids):
            raise AssertionError(f"search holds {found} of the {len(ids)} postings")
    deadline = time.monotonic() + 120
    for board in BOARDS:
        missing, latest = ids, 0
        while missing:
            missing, applied = asyncio.run(at_board(system, board, missing))
            latest = max(latest, applied)
            if missing and time.monotonic() > deadline:
                raise AssertionError(f"{len(missing)} postings never reached {board}")
            time.sleep(0.5 if missing else 0)
        if latest:
            done[board] = latest / 1000 - started


def cpu_table(spent: dict[str, dict[str, float]], postings: int, idle: dict[str, float]) -> str:
    """CPU seconds and ms per posting of each process in each phase; `idle`: its CPU per
    second at rest before the load (the shared broker's own background work, for one)."""
    phases = list(spent)
    lines = [
        f"| process | at rest | {' | '.join(f'{p}: CPU s, ms per posting' for p in phases)} |",
        f"| --- | --- |{' --- |' * len(phases)}",
    ]
    for name in idle:
        cells = [f"{spent[p][name]:.1f} s, {1000 * spent[p][name] / postings:.2f}" for p in phases]
        lines.append(f"| {name} | {100 * idle[name]:.0f} % | {' | '.join(cells)} |")
    totals = [
        f"{sum(spent[p].values()):.1f} s, {1000 * sum(spent[p].values()) / postings:.2f}" for p in phases
    ]
    lines.append(f"| all | {100 * sum(idle.values()):.0f} % | {' | '.join(totals)} |")
    return "\n".join(lines)


def thread_table(spent: dict[str, float], postings: int) -> str:
    lines = ["| thread | CPU s | ms per posting |", "| --- | --- | --- |"]
    for name, seconds in sorted(spent.items(), key=lambda item: -item[1]):
        if seconds >= 0.05:
            lines.append(f"| {name} | {seconds:.1f} | {1000 * seconds / postings:.2f} |")
    return "\n".join(lines)


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(in_flight: int = IN_FLIGHT, sample_api: bool = False) -> None:
    """`in_flight` batches sent at once; `sample_api`: also sample every thread of the API
    with py-spy while it accepts."""
    bodies = batches(f"bulk-{uuid.uuid4().hex[:8]}")
    with running_system() as system, tempfile.TemporaryDirectory() as folder:
        pids = system.pids()
        print(f"the system as make run starts it; processes measured: {pids}", flush=True)
        rest = {**cpu_seconds(pids), "bench client": own_cpu()}
        time.sleep(AT_REST_S)  # what each process spends doing nothing, to tell from the load
        cpu = [{**cpu_seconds(pids), "bench client": own_cpu()}]
        stages0, batches0 = stages.scrape(system.api), sequencer_batches(system)
        api_pid, prefix = pids["api"][0], system.kafka.topic_prefix
        threads0 = thread_cpu(api_pid, prefix)
        samples = Path(folder, "api.txt")
        sampler = threading.Thread(target=profile.record, args=(pids["api"][0], SAMPLED_S, samples))
        if sample_api:
            sampler.start()
        started = time.time()
        created, refused = asyncio.run(send(system, bodies, in_flight))
        accepted_s = time.time() - started
        if sample_api:
            sampler.join()
            print(f"the API's threads over the first {SAMPLED_S} s of accepting (py-spy):")
            print(profile.summarise(samples))
        cpu.append({**cpu_seconds(pids), "bench client": own_cpu()})
        stages1, batches1 = stages.scrape(system.api), sequencer_batches(system)
        threads = {
            name: spent - threads0.get(name, 0.0) for name, spent in thread_cpu(api_pid, prefix).items()
        }
        verdict = "met" if accepted_s <= TARGET_S and not refused else "MISSED"
        example = f", e.g. {refused[0]}" if refused else ""
        print(
            f"{len(created):,} of {POSTINGS:,} postings created in {len(bodies)} batches of {PER_BATCH} "
            f"({in_flight} in flight): accepted in {accepted_s:.1f} s, {len(created) / accepted_s:,.0f} "
            f"postings/s (target ≤ {TARGET_S:.0f} s: {verdict}); {len(refused)} refused{example}",
            flush=True,
        )
        done = wait_for_deliveries(system, len(created), started)
        cpu.append({**cpu_seconds(pids), "bench client": own_cpu()})
        confirm(system, created, started, done)

    at = {
        name: f"{done[name]:.1f} s" if name in done else "never" for name in ("linkedin", "indeed", "search")
    }
    print(
        f"from the first batch sent: at LinkedIn after {at['linkedin']}, at Indeed after {at['indeed']}, "
        f"in search after {at['search']}"
    )
    transactions, commands = (after - before for after, before in zip(batches1, batches0, strict=True))
    print(
        f"sequencer: {commands:.0f} commands in {transactions:.0f} transactions "
        f"({100 * transactions / max(commands, 1):.1f} per 100 items)"
    )
    phases = {"accepting": (cpu[0], cpu[1]), "delivering and indexing": (cpu[1], cpu[2])}
    spent = {
        phase: {name: end[name] - begin[name] for name in begin} for phase, (begin, end) in phases.items()
    }
    idle = {name: (cpu[0][name] - rest[name]) / AT_REST_S for name in rest}
    print(cpu_table(spent, len(created) or 1, idle))
    print("the API process while accepting, by thread:")
    print(thread_table(threads, len(created) or 1))
    print("where an accepted write's time goes while accepting (the API's write stages):")
    print(stages.table(stages0, stages1))
