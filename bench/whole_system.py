"""The write loads against the whole system as `make run` starts it (the sandbox as both
boards, the API with its sequencer, both board consumers, the indexer), as issue 26 compares
jobpost with Restate and Temporal: 32 clients over 1,000 postings as fast as they go, an
open loop at 100 updates/s, 32 clients on one posting. For each load the CPU every process
of the system (Kafka's and Elasticsearch's JVMs included, the load tool not) spent per
accepted update, counted from the load's start until the system is quiet again (the
deliveries and the indexing the load caused finish after it), less what it spends at rest.
Then where a write's time goes at 100 updates/s, duplicate deliveries at the boards (the
sandbox's own count) and the system's memory."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from bench import stages, write_path
from bench.idle import at_rest, cores_table
from bench.system import Pids, System, cpu_seconds, rss_mib, running_system
from schemas.topics import BOARDS

SECONDS = 20.0
QUIET_FOR_S = 2.0  # the system's CPU back near its rate at rest for this long
QUIET_WITHIN_S = 120.0
SEARCH_PROCESSES = ("elasticsearch", "indexer")


@dataclass
class Phase:
    name: str
    load: write_path.Load
    accepted: int
    cpu_s: dict[str, float]  # per process, at-rest spending removed, from start to quiet
    drained_s: float  # from the load's end until the system was quiet

    def cpu_ms_per_update(self, without: tuple[str, ...] = ()) -> float:
        spent = sum(seconds for name, seconds in self.cpu_s.items() if name not in without)
        return 1000 * spent / max(self.accepted, 1)


def until_quiet(pids: Pids, idle: dict[str, float]) -> float:
    """Seconds until the system's CPU stays within 10 % of a core of its rate at rest for
    QUIET_FOR_S (at most QUIET_WITHIN_S)."""
    started = time.monotonic()
    quiet_since = None
    last, last_at = sum(cpu_seconds(pids).values()), time.monotonic()
    while time.monotonic() - started < QUIET_WITHIN_S:
        time.sleep(0.5)
        now, now_at = sum(cpu_seconds(pids).values()), time.monotonic()
        resting = (now - last) / (now_at - last_at) <= sum(idle.values()) + 0.1
        last, last_at = now, now_at
        if not resting:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now_at
        elif now_at - quiet_since >= QUIET_FOR_S:
            return quiet_since - started
    return time.monotonic() - started


def measure(
    pids: Pids, name: str, idle: dict[str, float], seconds: float, run: Callable[[], write_path.Load]
) -> Phase:
    before, started = cpu_seconds(pids), time.monotonic()
    load = run()
    drained = until_quiet(pids, idle)
    after, elapsed = cpu_seconds(pids), time.monotonic() - started
    spent = {process: after[process] - before[process] - idle[process] * elapsed for process in before}
    phase = Phase(name, load, round(load.rate * seconds), spent, drained)
    print(
        f"{name}: {load.rate:,.0f} updates/s, p99 {load.p99_ms:.1f} ms, "
        f"{phase.cpu_ms_per_update():.1f} ms CPU per update, quiet {drained:.1f} s after",
        flush=True,
    )
    return phase


def at_boards(system: System, posting_ids: list[str]) -> dict[str, tuple[int, int, int]]:
    """Per board, from the sandbox's record of each posting: (applications that changed
    nothing there, i.e. content it had applied already sent again: every request of the loads
    carries content of its own, `write_path.revision`; postings whose versions it applied out
    of order; versions it applied, the creations included)."""
    found: dict[str, tuple[int, int, int]] = {}
    with httpx.Client(timeout=30) as http:
        for board in BOARDS:
            again = disordered = applied = 0
            for posting_id in posting_ids:
                response = http.get(f"{system.sandbox}/_sandbox/{board}/postings/{posting_id}")
                seen = response.json() if response.status_code == 200 else {}
                again += int(seen.get("duplicates", 0))
                versions = seen.get("versions", [])
                disordered += versions != sorted(set(versions))
                applied += len(versions)
            found[board.value] = (again, disordered, applied)
    return found


def print_spending(
    phases: list[Phase], creations: int, boards: dict[str, tuple[int, int, int]], memory: dict[str, float]
) -> None:
    """Each load's CPU per update by process, what the boards applied, the system's memory."""
    for phase in phases:
        print(
            f"CPU per update, {phase.name}, by process (ms): "
            + ", ".join(
                f"{name} {1000 * spent / max(phase.accepted, 1):.2f}"
                for name, spent in sorted(phase.cpu_s.items(), key=lambda item: -item[1])
            )
        )
    accepted = creations + sum(phase.accepted for phase in phases)
    print(
        f"at the boards (the sandbox's record of each posting; {accepted:,} versions accepted, "
        "the creations included): "
        + "; ".join(
            f"{board}: {applied:,} versions applied, {again} sent again after they were applied, "
            f"{disordered} postings out of order"
            for board, (again, disordered, applied) in boards.items()
        )
    )
    print(
        f"memory of the system (RSS): {sum(memory.values()):,.0f} MiB ("
        + ", ".join(f"{name} {mib:,.0f}" for name, mib in sorted(memory.items(), key=lambda i: -i[1]))
        + ")"
    )


def main(seconds: float = SECONDS) -> None:
    with running_system() as system:
        postings = write_path.create_postings(system, 1000)
        pids = system.pids()
        idle = at_rest(pids)
        until_quiet(pids, idle)
        phases = [
            measure(
                pids,
                "32 clients, 1,000 postings (saturation)",
                idle,
                seconds,
                lambda: write_path.saturate(system, postings, 32, seconds),
            ),
        ]
        before = stages.scrape(system.api)
        phases.append(
            measure(
                pids,
                "100 updates/s offered, 1,000 postings",
                idle,
                seconds,
                lambda: write_path.fixed_rate(system, postings, 100, seconds),
            )
        )
        breakdown = stages.table(before, stages.scrape(system.api))
        phases.append(
            measure(
                pids,
                "32 clients, one posting",
                idle,
                seconds,
                lambda: write_path.saturate(system, postings[:1], 32, seconds),
            )
        )
        boards = at_boards(system, postings)
        memory = rss_mib(pids)
    print(
        f"the whole system as make run starts it, {seconds:.0f} s per load; CPU per update: every "
        "process of the system from the load's start until it is quiet again, less its rate at rest "
        f"({100 * sum(idle.values()):.0f} % of a core)"
    )
    print(cores_table(idle))
    print(
        "| load | updates/s | p50 ms | p99 ms | p99.9 ms | errors | client "
        "| CPU ms per update | … without search | quiet after |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for phase in phases:
        print(
            f"{phase.load.row(phase.name)} {phase.cpu_ms_per_update():.1f} "
            f"| {phase.cpu_ms_per_update(SEARCH_PROCESSES):.1f} | {phase.drained_s:.1f} s |"
        )
    print_spending(phases, len(postings), boards, memory)
    print("\nWhere a write's time goes at 100 updates/s, whole system (jobpost_write_stage_seconds):")
    print(breakdown)
