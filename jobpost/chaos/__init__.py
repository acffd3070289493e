"""The fault-injection run (`make chaos`): see `jobpost.chaos.run`."""
