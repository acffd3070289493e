"""`python -m jobpost`: the same command line as `jobpost`."""

from __future__ import annotations

import sys

from jobpost.cli import main

if __name__ == "__main__":
    sys.exit(main())
