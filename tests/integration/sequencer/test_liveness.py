"""The embedded sequencer outlives a failed session, and /readyz tells the truth meanwhile."""

import threading
import time
import uuid

import httpx

from runtime.kafka_clients import KafkaClients
from tests import postings
from tests.processes import running_api, versions_of, wait_until

TOKEN = "liveness-token"
POSTING = postings.body(8, title="Night Porter")


def sessions_started(api) -> float:
    for line in httpx.get(f"{api.url}/metrics").text.splitlines():
        if line.startswith("jobpost_sequencer_sessions_total "):
            return float(line.split()[1])
    return 0.0


def test_a_fenced_sequencer_session_is_replaced_and_writes_resume(kafka, topics, elasticsearch_url):
    instance = f"fenced-{uuid.uuid4().hex[:6]}"
    with running_api(kafka, TOKEN, elasticsearch_url, JOBPOST_SEQUENCER_INSTANCE_ID=instance) as api:
        posting_id = api.client.create(**POSTING)["id"]
        before = sessions_started(api)
        readiness: list[tuple[int, dict]] = []
        watching = threading.Event()

        def watch() -> None:
            with httpx.Client(timeout=5) as http:
                while not watching.is_set():
                    response = http.get(f"{api.url}/readyz")
                    readiness.append((response.status_code, response.json()))
                    time.sleep(0.1)

        watcher = threading.Thread(target=watch)
        watcher.start()
        # A producer with the member's transactional id fences the member's producer, as a
        # successor does to a zombie: the member's next transaction fails for good.
        intruder = KafkaClients(kafka).transactional(f"{kafka.topic_prefix}-sequencer-{instance}")
        intruder.init_transactions(30)
        try:
            for n in range(10):

                def write(n: int = n) -> bool:
                    answer = api.client.replace(
                        posting_id, key=f"after-fence-{n}", title=f"Night Porter {n}", expect=(200, 503, 504)
                    )
                    # 503: never applied; 504: unknown. Either way the same key is safe to send again.
                    return answer.status_code == 200

                wait_until(write, 60, f"write {n} to be accepted", interval=0.5)
            wait_until(lambda: httpx.get(f"{api.url}/readyz").status_code == 200, 30, "ready again")
        finally:
            watching.set()
            watcher.join()

        assert sessions_started(api) > before
        assert versions_of(kafka, topics.postings, posting_id) == list(range(11))
        # Readiness is worked out at most once a second, and a named (static) member's new
        # session is up a few hundred milliseconds after the fence, so a probe may never
        # see the gap (one CI run's did not); what it says while it lasts is the unit test's
        # (tests/unit/producer_api/test_readiness.py). Any 503 it gave names the sequencer.
        not_ready = [body for status, body in readiness if status == 503]
        assert all("sequencer" in body["reasons"] for body in not_ready)
