"""What an employer does with its endpoints, as an integrator would, against real Kafka, the
API and `jobpost webhooks`: register (the secret shown once), see only its own, choose the
events, rotate with an overlap, replay from a time with the same webhook-ids, read its dead
letters, be disabled by a 410, delete. Every delivery is verified with `standardwebhooks`."""

from __future__ import annotations

from collections import Counter

import pytest

from schemas.listing_events import rfc3339
from tests.integration.webhooks.conftest import WebhookSystem
from tests.integration.webhooks.receiver import Receiver, now_ms
from tests.processes import wait_until

FAST = "[0.2, 0.2]"  # three attempts in all, within half a second


def accepted(system: WebhookSystem, employer: str, title: str = "Role") -> str:
    """A new posting of the employer's (its posting.accepted event follows)."""
    return system.client(f"ats-{employer}").create(title=title)["id"]


def test_an_employer_sees_and_changes_only_its_own_endpoints_and_never_a_secret_again(system: WebhookSystem):
    acme, globex, reader = (
        system.client("ats-acme"),
        system.client("ats-globex"),
        system.client("reader-acme"),
    )
    made = system.register("acme", Receiver())
    assert made["secret"].startswith("whsec_") and made["events"] == ["*"] and made["status"] == "enabled"

    listed = acme.request("GET", "/webhooks", expect=200)["webhooks"]
    assert [e["id"] for e in listed] == [made["id"]] and "secret" not in listed[0]
    assert reader.request("GET", f"/webhooks/{made['id']}", expect=200)["url"] == made["url"]
    assert globex.request("GET", "/webhooks", expect=200)["webhooks"] == []
    for method, path in (
        ("GET", f"/webhooks/{made['id']}"),
        ("DELETE", f"/webhooks/{made['id']}"),
        ("POST", f"/webhooks/{made['id']}/rotate"),
        ("GET", f"/webhooks/{made['id']}/dead-letters"),
    ):
        globex.request(method, path, expect=404)
    globex.request(
        "POST", f"/webhooks/{made['id']}/replay", json={"since": "2026-01-01T00:00:00Z"}, expect=404
    )
    assert "postings:write" in reader.request("POST", f"/webhooks/{made['id']}/rotate", expect=403)["detail"]

    refused = acme.request("POST", "/webhooks", json={"url": "http://ats.example/hooks"}, expect=422)
    assert refused["errors"][0]["msg"] == "an https URL is needed"
    acme.request(
        "POST", "/webhooks", json={"url": "https://ats.example/h", "events": ["listing.gone"]}, expect=422
    )

    assert acme.request("DELETE", f"/webhooks/{made['id']}", expect=200) == {
        "id": made["id"],
        "deleted": True,
    }
    acme.request("GET", f"/webhooks/{made['id']}", expect=404)
    assert acme.request("GET", "/webhooks", expect=200)["webhooks"] == []


def test_an_endpoint_gets_the_events_it_chose_and_a_deleted_one_gets_nothing_more(system: WebhookSystem):
    everything, boards_only, deleted = Receiver().start(), Receiver().start(), Receiver().start()
    system.register("acme", everything)
    system.register("acme", boards_only, events=["listing.*"])
    gone = system.register("acme", deleted)
    system.start_dispatcher()

    first = accepted(system, "acme")
    system.publish("acme", first, 0)
    wait_until(lambda: len(everything.seen()) == 2 and len(deleted.seen()) == 2, 30, "the first events")
    assert boards_only.seen() == {("listing.live", first, 0)}

    system.client("ats-acme").request("DELETE", f"/webhooks/{gone['id']}", expect=200)
    second = accepted(system, "acme")
    system.publish("acme", second, 0)
    wait_until(lambda: len(everything.seen()) == 4, 30, "the second posting's events")
    assert deleted.seen() == {("posting.accepted", first, 0), ("listing.live", first, 0)}
    for receiver in (everything, boards_only, deleted):
        assert all(d.verified_with == [0] for d in receiver.snapshot())


@pytest.fixture
def webhooks_api_env() -> dict[str, str]:
    return {"JOBPOST_API_WEBHOOK_SECRET_OVERLAP_S": "6"}


def test_after_a_rotation_both_secrets_verify_until_the_overlap_ends_then_only_the_new(system: WebhookSystem):
    receiver = Receiver().start()
    made = system.register("acme", receiver)
    system.start_dispatcher()
    posting = accepted(system, "acme")
    wait_until(lambda: len(receiver.snapshot()) == 1, 30, "a delivery signed with the first secret")

    rotated = system.client("ats-acme").request("POST", f"/webhooks/{made['id']}/rotate", expect=200)
    receiver.secrets.append(rotated["secret"])  # index 1: the new one
    assert rotated["previous_secret_until"] - now_ms() <= 6000
    read_back = system.client("ats-acme").request("GET", f"/webhooks/{made['id']}", expect=200)
    assert read_back["previous_secret_until"] == rotated["previous_secret_until"]

    def signed_with_new() -> bool:
        """Another event; whether its delivery verifies with the new secret (once the
        dispatcher has read the rotation, it does)."""
        count = len(receiver.snapshot())
        system.publish("acme", posting, 0)
        wait_until(lambda: len(receiver.snapshot()) > count, 10, "the next delivery")
        return 1 in receiver.snapshot()[-1].verified_with

    wait_until(signed_with_new, 30, "a delivery signed with the new secret")
    overlapping = receiver.snapshot()[-1]
    assert overlapping.verified_with == [0, 1]  # either secret verifies it
    assert len(overlapping.headers["webhook-signature"].split(" ")) == 2

    wait_until(lambda: now_ms() > rotated["previous_secret_until"] + 500, 10, "the overlap to end")
    count = len(receiver.snapshot())
    system.publish("acme", posting, 0)
    wait_until(lambda: len(receiver.snapshot()) > count, 10, "a delivery after the overlap")
    after = receiver.snapshot()[-1]
    assert after.verified_with == [1]  # the new secret only; the old one no longer verifies
    assert len(after.headers["webhook-signature"].split(" ")) == 1


def test_a_replay_delivers_the_events_since_a_time_again_with_their_own_webhook_ids(system: WebhookSystem):
    receiver = Receiver().start()
    made = system.register("acme", receiver)
    system.start_dispatcher()
    early = [accepted(system, "acme", f"early {n}") for n in range(3)]
    wait_until(lambda: len(receiver.snapshot()) == 3, 30, "the early postings' events")
    since = now_ms()
    late = [accepted(system, "acme", f"late {n}") for n in range(4)]
    for posting in late:
        system.publish("acme", posting, 0)
    wait_until(lambda: len(receiver.snapshot()) == 11, 30, "the late postings' events")
    first_ids = {d.key(): d.id for d in receiver.snapshot()}

    body = {"since": rfc3339(since)}
    answer = system.client("ats-acme").request(
        "POST", f"/webhooks/{made['id']}/replay", json=body, expect=202
    )
    assert answer["endpoint_id"] == made["id"] and answer["since"] == rfc3339(since)
    wait_until(lambda: len(receiver.snapshot()) == 19, 30, "the late postings' events again")

    again = receiver.snapshot()[11:]
    assert {d.key() for d in again} == {
        (kind, p, 0) for p in late for kind in ("posting.accepted", "listing.live")
    }
    assert all(d.id == first_ids[d.key()] for d in again)  # the same webhook-id: a receiver dedupes
    assert Counter(d.id for d in receiver.snapshot()).most_common(1)[0][1] == 2
    for posting in late:
        assert [d.key()[0] for d in again if d.key()[1] == posting] == ["posting.accepted", "listing.live"]
    assert not {d.key()[1] for d in again} & set(early)
    assert all(d.verified_with == [0] for d in receiver.snapshot())


def test_spent_retries_are_dead_letters_a_replay_delivers_them_and_410_disables(system: WebhookSystem):
    answers = {"status": 500}
    receiver = Receiver(status=lambda _count: answers["status"]).start()
    made = system.register("acme", receiver)
    system.start_dispatcher(JOBPOST_WEBHOOKS_RETRY_SCHEDULE_S=FAST)
    since = now_ms()
    posting = accepted(system, "acme")
    letters_path = f"/webhooks/{made['id']}/dead-letters"
    client = system.client("ats-acme")

    def letters() -> list[dict]:
        return client.request("GET", letters_path, expect=200)["letters"]

    [letter] = wait_until(letters, 30, "the dead letter")
    assert len(receiver.snapshot()) == 3  # the first attempt and one after each wait
    assert (letter["type"], letter["posting_id"], letter["version"], letter["attempts"]) == (
        "posting.accepted",
        posting,
        0,
        3,
    )
    assert letter["error"] == "3 attempts failed, the last: HTTP 500"
    assert letter["event_id"] == receiver.snapshot()[0].id and letter["event"] == receiver.snapshot()[0].event

    answers["status"] = 204
    client.request("POST", f"/webhooks/{made['id']}/replay", json={"since": rfc3339(since)}, expect=202)
    wait_until(lambda: len(receiver.snapshot()) == 4, 30, "the dead letter delivered by the replay")
    assert receiver.snapshot()[-1].id == letter["event_id"]

    answers["status"] = 410
    control = Receiver().start()
    system.register("acme", control)
    second = accepted(system, "acme")
    endpoint_path = f"/webhooks/{made['id']}"
    wait_until(
        lambda: client.request("GET", endpoint_path, expect=200)["status"] == "disabled", 30, "disabled"
    )
    assert client.request("GET", endpoint_path, expect=200)["disabled_reason"] == (
        "HTTP 410 Gone: the endpoint asked to be disabled"
    )
    wait_until(lambda: letters()[0]["posting_id"] == second, 30, "the letter of the event it answered 410 to")

    third = accepted(system, "acme")
    wait_until(lambda: ("posting.accepted", third, 0) in control.seen(), 30, "the next event, elsewhere")
    assert ("posting.accepted", third, 0) not in receiver.seen()  # nothing more is sent to it
    # The letters stay: the spent retries' and the 410's. A letter more may come of an event
    # the endpoint had queued when it went (seen once in CI); each says why, none was sent.
    kept = letters()
    assert any(x["posting_id"] == posting and x["attempts"] == 3 for x in kept)
    assert any(x["posting_id"] == second for x in kept)
    assert all(
        x["error"].startswith(("3 attempts failed", "the endpoint is disabled")) or "410" in x["error"]
        for x in kept
    ), kept
