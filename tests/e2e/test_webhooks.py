"""Webhooks in the system as `make run` starts it: an employer registers its endpoint (a real
HTTP server in the test), changes a posting, and gets each version's `posting.accepted`, in
order, signed so that `standardwebhooks` verifies it; the dispatcher restarted by the
supervisor after a kill -9 loses nothing."""

import os
import signal

from tests.e2e.conftest import System
from tests.integration.webhooks.receiver import Receiver
from tests.processes import wait_until


def test_a_registered_endpoint_gets_each_version_signed_in_order_across_a_dispatcher_kill(system: System):
    receiver = Receiver().start()
    try:
        # The versions' events only: the boards' listing.* events of the same posting arrive
        # too when the endpoint takes every type (tests/e2e/test_live_listing.py).
        chosen = {"url": receiver.url, "events": ["posting.accepted"]}
        made = system.client.request("POST", "/webhooks", json=chosen, expect=201)
        receiver.secrets.append(made["secret"])
        posting_id = system.client.create(title="Webhook Engineer")["id"]
        wait_until(lambda: len(receiver.snapshot()) == 1, 60, "the first posting.accepted")

        (dispatcher,) = system.children("webhooks")
        os.kill(dispatcher, signal.SIGKILL)
        for version in (1, 2):
            system.client.replace(posting_id, title=f"Webhook Engineer v{version}")
        wait_until(
            lambda: system.children("webhooks") not in ([], [dispatcher]), 30, "the dispatcher restarted"
        )
        wait_until(lambda: len(receiver.snapshot()) >= 3, 60, "versions 1 and 2 after the restart")

        deliveries = receiver.first_of_each()
        assert [d.key() for d in deliveries] == [("posting.accepted", posting_id, v) for v in (0, 1, 2)]
        assert all(d.verified_with == [0] for d in receiver.snapshot())
        listed = system.client.request("GET", "/webhooks", expect=200)["webhooks"]
        assert [e["id"] for e in listed] == [made["id"]] and "secret" not in listed[0]
    finally:
        receiver.stop()
