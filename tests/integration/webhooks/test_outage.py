"""An employer's endpoint down for a minute while its postings change: afterwards every event
delivered, in order per posting, none lost, none twice; another employer's endpoint meanwhile
got its events without delay (its lag is printed). And a dispatcher killed mid-outage loses
nothing. Real Kafka, the API and `jobpost webhooks` as processes, receivers in the test."""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest

from tests.integration.webhooks.conftest import WebhookSystem
from tests.integration.webhooks.receiver import Receiver
from tests.processes import wait_until

DOWN_S = 60.0
POSTINGS = 100
# Every wait of the schedule short, the whole of it longer than the minute down.
SCHEDULE = "[1, 2, 4, 8, 15, 15, 15, 15, 15]"
TYPE_ORDER = {"posting.accepted": 0, "listing.live": 1}


def in_order_per_posting(deliveries) -> dict[str, list[tuple[int, str]]]:
    """Each posting's (version, type) in the order they arrived."""
    seen: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for delivery in deliveries:
        kind, posting_id, version = delivery.key()
        seen[posting_id].append((version, kind))
    return seen


def change(system: WebhookSystem, employer: str, posting_ids: list[str], index: int, version: int) -> str:
    """The posting's next version through the API (a create for version 0), then its board's
    event: `posting.accepted` and `listing.live` for that version."""
    client = system.client(f"ats-{employer}")
    if version == 0:
        posting_id = client.create(title=f"{employer} role {index}")["id"]
        posting_ids.append(posting_id)
    else:
        posting_id = posting_ids[index]
        assert client.replace(posting_id, title=f"{employer} role {index} v{version}")["version"] == version
    system.publish(employer, posting_id, version)
    return posting_id


@pytest.mark.serial  # another employer's lag bounded at 5 s across an outage of a minute
def test_an_endpoint_down_for_a_minute_gets_every_event_in_order_and_another_employer_saw_no_delay(
    system: WebhookSystem,
):
    acme, globex = Receiver().start(), Receiver().start()
    acme_endpoint = system.register("acme", acme)
    globex_endpoint = system.register("globex", globex)
    system.start_dispatcher(JOBPOST_WEBHOOKS_RETRY_SCHEDULE_S=SCHEDULE)
    globex_postings: list[str] = []
    before = [lag for n in range(5) for lag in globex_change(system, globex, globex_postings, n)]

    acme.stop()
    down_at = time.monotonic()
    acme_postings: list[str] = []
    with ThreadPoolExecutor(1) as writer:
        # Every one of acme's 100 postings changes twice (created, then replaced) while its
        # endpoint is down; meanwhile globex's postings change and its endpoint gets them.
        written = writer.submit(change_every_posting_twice, system, acme_postings)
        during: list[int] = []
        n = 5
        while time.monotonic() - down_at < DOWN_S or not written.done():
            during += globex_change(system, globex, globex_postings, n)
            n += 1
        written.result()
    down_for = time.monotonic() - down_at
    assert acme.snapshot() == []
    acme.start()
    up_at = time.monotonic()

    expected = {
        (kind, acme_postings[i % POSTINGS], i // POSTINGS) for i in range(2 * POSTINGS) for kind in TYPE_ORDER
    }
    wait_until(lambda: acme.seen() >= expected, 120, f"all {len(expected)} of acme's events after the outage")
    drained = time.monotonic() - up_at

    deliveries = acme.snapshot()
    assert acme.seen() == expected  # none lost, none of anyone else's
    assert len(deliveries) == len({d.id for d in deliveries}) == len(expected)  # none twice
    assert all(d.verified_with == [0] for d in deliveries)  # standardwebhooks verifies every one
    for posting_id, seen in in_order_per_posting(deliveries).items():
        assert seen == [(v, kind) for v in (0, 1) for kind in TYPE_ORDER], posting_id
    assert all(d.verified_with == [0] for d in globex.snapshot())
    assert system.metric("jobpost_webhook_pending", f'endpoint="{acme_endpoint["id"]}"') == 0

    queued = system.metric("jobpost_webhook_queue_lag_seconds_sum") / system.metric(
        "jobpost_webhook_queue_lag_seconds_count"
    )
    print(
        f"\nacme's endpoint down {down_for:.1f} s while its {POSTINGS} postings changed twice each: "
        f"{len(expected)} events delivered in order within {drained:.1f} s of it coming back, 0 lost, "
        f"0 twice. globex's endpoint ({globex_endpoint['id']}), event time to arrival: before the outage "
        f"{summary(before)}; during it {summary(during)}. Event time to queued, every event: mean "
        f"{queued * 1000:.0f} ms"
    )
    assert max(during) < 5000, sorted(during)[-10:]  # none of globex's waited for acme's retries


def change_every_posting_twice(system: WebhookSystem, postings: list[str]) -> None:
    for i in range(2 * POSTINGS):
        change(system, "acme", postings, i % POSTINGS, i // POSTINGS)


def globex_change(system: WebhookSystem, globex: Receiver, postings: list[str], n: int) -> list[int]:
    """One change of a globex posting; once its endpoint got both events, their lags (ms)."""
    posting = change(system, "globex", postings, n % 10, n // 10)
    wanted = {("posting.accepted", posting, n // 10), ("listing.live", posting, n // 10)}
    wait_until(lambda: wanted <= globex.seen(), 10, "globex's events")
    return [d.arrived_ms - _event_ms(d) for d in globex.snapshot() if d.key() in wanted]


def summary(lags_ms: list[int]) -> str:
    lags = sorted(lags_ms)
    p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))]
    return f"{len(lags)} events, p50 {statistics.median(lags):.0f} ms, p99 {p99} ms, max {lags[-1]} ms"


def test_a_dispatcher_killed_while_an_endpoint_is_down_loses_nothing(system: WebhookSystem):
    receiver = Receiver().start()
    endpoint = system.register("acme", receiver)
    first = system.start_dispatcher(JOBPOST_WEBHOOKS_RETRY_SCHEDULE_S="[1, 1, 1, 1, 60]")
    receiver.stop()
    postings: list[str] = []
    for index in range(20):
        change(system, "acme", postings, index, 0)
    pending = f'endpoint="{endpoint["id"]}"'
    wait_until(lambda: system.metric("jobpost_webhook_pending", pending) == 40, 30, "40 deliveries waiting")

    first.kill()  # no goodbye
    system.start_dispatcher(JOBPOST_WEBHOOKS_RETRY_SCHEDULE_S="[1, 1, 1, 1, 60]")
    receiver.start()

    expected = {(kind, p, 0) for p in postings for kind in TYPE_ORDER}
    wait_until(lambda: receiver.seen() >= expected, 60, "every event after the restart")
    deliveries = receiver.snapshot()
    assert receiver.seen() == expected
    assert len(deliveries) == len(expected)  # none twice: nothing was in flight
    for posting_id, seen in in_order_per_posting(deliveries).items():
        assert seen == [(0, "posting.accepted"), (0, "listing.live")], posting_id
    assert all(d.verified_with == [0] for d in deliveries)


def test_events_a_killed_dispatcher_had_not_committed_are_not_sent_twice(system: WebhookSystem):
    """The dispatcher that takes over restores the 40 waiting deliveries and sends them, and
    reads again the 40 events its predecessor queued them from but never committed (it was
    killed first): a delivery it finished is not queued again when its event comes back."""
    receiver = Receiver().start()
    system.register("acme", receiver)
    # Nothing read is committed before the kill (a commit a minute, killed well before one).
    first = system.start_dispatcher(
        JOBPOST_WEBHOOKS_COMMIT_INTERVAL_S="60", JOBPOST_WEBHOOKS_RETRY_SCHEDULE_S="[1, 1, 1, 1, 60]"
    )
    receiver.stop()
    postings: list[str] = []
    for index in range(20):
        change(system, "acme", postings, index, 0)
    wait_until(lambda: system.metric("jobpost_webhook_pending") == 40, 30, "40 deliveries waiting")

    first.kill()  # its successor has its partitions once the group gave up on it (10 s): by
    receiver.start()  # then every restored delivery is due, and sent before its event is read
    system.start_dispatcher(JOBPOST_WEBHOOKS_RETRY_SCHEDULE_S="[1, 1, 1, 1, 60]")

    expected = {(kind, p, 0) for p in postings for kind in TYPE_ORDER}
    wait_until(lambda: receiver.seen() >= expected, 60, "every event after the restart")
    # Its events read again are queued (or not) within a commit interval of the takeover.
    time.sleep(3)
    deliveries = receiver.snapshot()
    assert receiver.seen() == expected
    assert len(deliveries) == len(expected), sorted(d.key() for d in deliveries)


def _event_ms(delivery) -> int:
    """The event's time, from the body's RFC 3339 timestamp."""
    stamp = delivery.event["timestamp"].replace("Z", "+00:00")
    return int(datetime.fromisoformat(stamp).timestamp() * 1000)
