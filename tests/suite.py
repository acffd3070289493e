"""`make test`: the whole suite on one set of servers, in two parts.

The tests keep to names of their own on the shared servers (topics, groups and indices under
a fresh prefix, processes on free ports), so most of them run two files at a time
(pytest-xdist, one file to a worker: a module's own broker or browser stays in one process).
Those marked `serial` (a time bound a busier machine could miss, a load, a cluster or a
browser of their own) run afterwards, alone.

The servers are opened here, once, before both parts, the way a session of the tests opens
them (`tests.servers`: named by KAFKA_BOOTSTRAP_SERVERS / ELASTICSEARCH_URL /
SCHEMA_REGISTRY_URL, else containers when Docker answers, else the local stack, started when
not running and stopped afterwards if this started it), and named to both parts through
those variables: two workers that each started them would race for the ports, and the one
that finished first would stop them under the other.

Arguments are pytest's, given to both parts (e.g. `python -m tests.suite -x`). A plain
`pytest` still runs everything in one process.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

from tests import servers

WORKERS = 2  # this project's CI machine has two cores
NO_TESTS = 5  # pytest's exit code when a part selects nothing (e.g. a -k that matches no serial test)


def main(args: list[str]) -> int:
    pytest = [sys.executable, "-m", "pytest", *args]
    with contextlib.ExitStack() as opened:
        env = dict(os.environ)
        env["KAFKA_BOOTSTRAP_SERVERS"] = opened.enter_context(servers.kafka_bootstrap())
        env["ELASTICSEARCH_URL"] = opened.enter_context(servers.elasticsearch_url())
        env["SCHEMA_REGISTRY_URL"] = opened.enter_context(servers.schema_registry_url())
        parts = [
            [*pytest, "-m", "not serial", "-n", str(WORKERS), "--dist", "loadfile"],
            [*pytest, "-m", "serial", "-p", "no:xdist"],
        ]
        codes = [subprocess.call(part, env=env) for part in parts]
    failed = [code for code in codes if code not in (0, NO_TESTS)]
    return failed[0] if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
