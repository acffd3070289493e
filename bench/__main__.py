"""`python -m bench [write] [delivery] [search] [codec]`: run benchmarks, print numbers. All but
`codec` use the local servers."""

import sys

from bench import codec, delivery, search, write_path

BENCHMARKS = {"write": write_path.main, "delivery": delivery.main, "search": search.main, "codec": codec.main}

if __name__ == "__main__":
    names = sys.argv[1:] or list(BENCHMARKS)
    for name in names:
        print(f"== {name}")
        BENCHMARKS[name]()
