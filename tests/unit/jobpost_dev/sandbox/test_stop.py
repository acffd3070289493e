"""The sandbox stops soon after SIGTERM even while it holds a call (its `timeout` fault keeps
one for an hour): before, it waited for that call and outlived the run that started it."""

from __future__ import annotations

import contextlib
import threading
import time

import httpx

from jobpost_dev.processes import Process, answers, free_port, wait_until
from jobpost_dev.sandbox.tokens import SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET

STOP_WITHIN_S = 0.5  # `--stop-within`, 5 s unless given


def test_the_sandbox_stops_within_seconds_while_holding_a_call() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = ["sandbox", "--port", str(port), "--stop-within", str(STOP_WITHIN_S)]
    sandbox = Process(f"sandbox-{port}", command, {})
    try:
        wait_until(lambda: answers(f"{url}/docs"), timeout=30, what="the sandbox")
        form = {"grant_type": "client_credentials", "client_id": SANDBOX_CLIENT_ID}
        form["client_secret"] = SANDBOX_CLIENT_SECRET
        token = httpx.post(f"{url}/linkedin/oauth/v2/accessToken", data=form).json()["access_token"]
        httpx.put(f"{url}/_sandbox/linkedin/faults", json={"mode": "timeout"}).raise_for_status()
        held = threading.Thread(target=_held_call, args=(url, token), daemon=True)
        held.start()
        wait_until(lambda: _stats(url)["calls"] >= 1, timeout=10, what="the call to reach the sandbox")

        stopped = time.monotonic()
        sandbox.popen.terminate()
        sandbox.popen.wait(20)

        assert time.monotonic() - stopped < STOP_WITHIN_S + 3  # the held call lasts an hour
    finally:
        sandbox.kill()


def _stats(url: str) -> dict[str, int]:
    return httpx.get(f"{url}/_sandbox/linkedin/stats").json()


def _held_call(url: str, token: str) -> None:
    headers = {
        "Authorization": f"Bearer {token}",
        "X-RestLi-Method": "batch_create",
        "LinkedIn-Version": "202507",
    }
    with contextlib.suppress(httpx.TransportError):  # the sandbox went away under it, as it should
        httpx.post(
            f"{url}/linkedin/rest/simpleJobPostings", json={"elements": [{}]}, headers=headers, timeout=60
        )
