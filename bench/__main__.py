"""`python -m bench [write] [delivery] [search]`: run benchmarks on the local servers, print numbers."""

import sys

from bench import delivery, search, write_path

BENCHMARKS = {"write": write_path.main, "delivery": delivery.main, "search": search.main}

if __name__ == "__main__":
    names = sys.argv[1:] or list(BENCHMARKS)
    for name in names:
        print(f"== {name}")
        BENCHMARKS[name]()
