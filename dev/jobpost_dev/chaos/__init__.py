"""The fault-injection run (`make chaos`): see `jobpost_dev.chaos.run`."""
