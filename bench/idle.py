"""The whole system at rest (issue 40): the cores each component spends while nothing is asked
of it, `make run` as it starts (the servers, the API with its sequencer, both board
consumers, the indexer, the webhooks dispatcher, the sandbox, Prometheus when installed).
`python -m bench idle` measures it after the system has settled and names, for each process,
the threads that spent the most (librdkafka's `rdk:*`, the JVMs' request handlers, ...);
`python -m bench system` prints the same table before its loads."""

from __future__ import annotations

import re
import time
from collections import defaultdict

from bench.system import Pids, cpu_seconds, running_system, tasks_cpu

SETTLE_S = 30.0  # after /readyz: partitions assigned, stores restored, first scrapes done
AT_REST_S = 30.0
TOP_THREADS = 4


def at_rest(pids: Pids, seconds: float = AT_REST_S) -> dict[str, float]:
    """Each component's cores (CPU seconds per second) over `seconds` with nothing asked of it."""
    before = cpu_seconds(pids)
    time.sleep(seconds)
    after = cpu_seconds(pids)
    return {name: (after[name] - before[name]) / seconds for name in before}


def cores_table(idle: dict[str, float]) -> str:
    """Cores at rest by component, most first, and the whole system's."""
    lines = ["| component | cores at rest |", "| --- | --- |"]
    lines += [f"| {name} | {cores:.3f} |" for name, cores in sorted(idle.items(), key=lambda i: -i[1])]
    lines.append(f"| **whole system** | **{sum(idle.values()):.3f}** |")
    return "\n".join(lines)


def threads(pids: list[int]) -> dict[str, float]:
    """CPU seconds so far of each kind of thread of these processes, by the thread's OS name
    with its numbers dropped (`rdk:broker1` and `rdk:broker2` are one kind)."""
    spent: dict[str, float] = defaultdict(float)
    for pid in pids:
        for _, comm, cpu in tasks_cpu(pid):
            spent[re.sub(r"[-_:#/]?\d+$|\d+", "", comm) or comm] += cpu
    return dict(spent)


def main() -> None:
    with running_system() as system:
        time.sleep(SETTLE_S)
        pids = system.pids()
        before = {name: threads(numbers) for name, numbers in pids.items()}
        idle = at_rest(pids)
        after = {name: threads(numbers) for name, numbers in pids.items()}
    print(f"the whole system as make run starts it, at rest {AT_REST_S:.0f} s, {SETTLE_S:.0f} s after ready")
    print(cores_table(idle))
    for name in sorted(idle, key=lambda n: -idle[n]):
        spent = {kind: (after[name][kind] - before[name].get(kind, 0.0)) / AT_REST_S for kind in after[name]}
        top = sorted(spent.items(), key=lambda i: -i[1])[:TOP_THREADS]
        print(f"{name}: " + ", ".join(f"{kind} {cores:.3f}" for kind, cores in top if cores > 0))
