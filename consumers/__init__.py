"""Delivery consumers: one key-ordered runner, one small adapter per job board."""
