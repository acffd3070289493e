"""`python -m bench [floor] [idle] [write] [system] [delivery] [search] [bulk] [codec]`: run
benchmarks, print numbers. All but `codec` use the local servers (`floor` Kafka alone); `idle`,
`system` and `bulk` start the whole system as `make run` does (`idle`: the cores each component
spends at rest, and its busiest threads). `python -m bench scale [--postings N]` (not in the default
list: it takes long) measures restarts, takeovers, memory and disk with N postings;
`python -m bench profile` samples every thread of the API under the write load (py-spy), as
`python -m bench bulk --sample-api` does while the API accepts the bulk load;
`python -m bench boards` (about 6 minutes) the boards' rate budgets used, records per call
and write-to-board latency; `python -m bench restate` the loads of `system` against the same
promise on Restate (it needs restate-server and restate-sdk: bench/restate_system.py)."""

import argparse

from bench import (
    boards,
    bulk,
    codec,
    delivery,
    floor,
    idle,
    profile,
    restate_system,
    scale,
    search,
    whole_system,
    write_path,
)

BENCHMARKS = {
    "floor": floor.main,
    "idle": idle.main,
    "write": write_path.main,
    "system": whole_system.main,
    "delivery": delivery.main,
    "search": search.main,
    "bulk": bulk.main,
    "codec": codec.main,
}

if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help=f"{', '.join(BENCHMARKS)}, scale, profile, boards or restate"
    )
    parser.add_argument("--postings", type=int, default=1_000_000, help="scale: postings in the log")
    parser.add_argument("--first-start", action="store_true", help="scale: only a first start with no state")
    parser.add_argument("--sample-api", action="store_true", help="bulk: py-spy the API while it accepts")
    parser.add_argument("--in-flight", type=int, default=bulk.IN_FLIGHT, help="bulk: batches sent at once")
    args = parser.parse_args()
    runs = {
        **BENCHMARKS,
        "bulk": lambda: bulk.main(args.in_flight, args.sample_api),
        "scale": lambda: scale.main(args.postings, args.first_start),
        "profile": profile.main,
        "boards": boards.main,
        "restate": restate_system.main,
    }
    for name in args.names or list(BENCHMARKS):
        if name not in runs:
            parser.error(f"unknown benchmark {name!r}")
    for name in args.names or list(BENCHMARKS):
        print(f"== {name}")
        runs[name]()
