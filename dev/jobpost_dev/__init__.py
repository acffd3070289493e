"""jobpost's development tools, apart from the product: the local servers (`stack/`), `make
run`'s supervisor, the job-board sandbox, the fault-injection run, the doctor, and the
processes the tests and benchmarks start. Installed beside jobpost, they add `run`, `stack`,
`doctor`, `chaos` and `sandbox` to its command line (`cli.py`, entry-point group
`jobpost.commands`); neither the wheel nor the image of jobpost carries them.
"""
