"""`jobpost config`: the settings of every component, as a deployment holds them (the
catalog of their tables, the effective values and where each came from, the problems, the
generated reference)."""
