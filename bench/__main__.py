"""`python -m bench [write]` runs the benchmarks against the local servers and prints numbers."""

import sys

from bench import write_path

BENCHMARKS = {"write": write_path.main}

if __name__ == "__main__":
    names = sys.argv[1:] or list(BENCHMARKS)
    for name in names:
        print(f"== {name}")
        BENCHMARKS[name]()
