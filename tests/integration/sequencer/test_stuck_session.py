"""A sequencer session stuck in a Kafka client call (made to happen here, as librdkafka's
`send_offsets_to_transaction` does when the group coordinator has left the cluster) is
abandoned and replaced in the same process: writes resume within seconds, each applied
exactly once, and what the stuck session does when its call returns is refused by Kafka."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import httpx

from tests.processes import running_api, versions_of, wait_until

TOKEN = "stuck-token"
STUCK_CLIENT = str(Path(__file__).resolve().parents[2] / "stuck_client")


def counter(api, name: str) -> float:
    for line in httpx.get(f"{api.url}/metrics").text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    return 0.0


def test_a_stuck_session_is_replaced_and_its_late_call_refused(kafka, topics, elasticsearch_url, tmp_path):
    env = {
        "PYTHONPATH": os.pathsep.join(p for p in (STUCK_CLIENT, os.environ.get("PYTHONPATH")) if p),
        "JOBPOST_TEST_STICK_DIR": str(tmp_path),
        "JOBPOST_SEQUENCER_INSTANCE_ID": f"stuck-{uuid.uuid4().hex[:6]}",
        "JOBPOST_SEQUENCER_STUCK_AFTER_S": "2",
    }
    with running_api(kafka, TOKEN, elasticsearch_url, **env) as api:
        posting_id = api.client.create(title="Night Porter")["id"]

        def write(n: int) -> bool:
            answer = api.client.replace(
                posting_id, key=f"stuck-{n}", title=f"Night Porter {n}", expect=(200, 503, 504)
            )
            return answer.status_code == 200  # 503 never applied, 504 unknown: the same key is safe again

        (tmp_path / "stick").touch()
        stuck_at = time.monotonic()
        wait_until(lambda: write(1), 30, "a write after the session stuck", interval=0.2)
        resumed_after = time.monotonic() - stuck_at
        assert not (tmp_path / "answered").exists()  # the stuck call has not returned yet

        (tmp_path / "release").touch()
        wait_until(lambda: (tmp_path / "answered").exists(), 30, "the stuck call to return")
        # For two seconds after it returned, whatever the stuck session does next changes
        # nothing: every write is accepted at once and the replica stays ready.
        n, until = 1, time.monotonic() + 2
        while time.monotonic() < until:
            n += 1
            assert write(n), f"write {n} was not accepted at once"
            assert httpx.get(f"{api.url}/readyz").status_code == 200
        assert counter(api, "jobpost_sequencer_sessions_abandoned_total") == 1

    assert (tmp_path / "answered").read_text().startswith("refused")
    assert versions_of(kafka, topics.postings, posting_id) == list(range(n + 1))
    # stuck_after_s (2 s), the watch's next look, a new session fencing the stuck one
    print(f"writes resumed {resumed_after:.1f} s after the session stuck")
    assert resumed_after < 10, resumed_after
