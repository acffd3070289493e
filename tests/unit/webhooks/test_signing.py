"""A webhook as the receiver sees it: the body and headers of one attempt verify with the
`standardwebhooks` library, with either secret during a rotation's overlap."""

from __future__ import annotations

import json
import time

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from runtime.webhook_secrets import new_secret
from schemas.listing_events import Listing, ListingEvent, ListingProblem
from webhooks import signing

LISTING = Listing("live", 1_764_581_400_000, "urn:li:jobPosting:42", "https://www.linkedin.com/jobs/view/42")
LIVE = ListingEvent(
    "0b1e0c1e-0000-4000-8000-000000000001",
    "listing.live",
    "acme",
    "p-1",
    3,
    1_764_581_400_123,
    "linkedin",
    LISTING,
)


def test_the_body_is_type_timestamp_and_data_as_the_contract_writes_them():
    assert json.loads(signing.body(LIVE)) == {
        "type": "listing.live",
        "timestamp": "2025-12-01T09:30:00.123Z",
        "data": {
            "posting_id": "p-1",
            "version": 3,
            "board": "linkedin",
            "listing": {
                "id": "urn:li:jobPosting:42",
                "url": "https://www.linkedin.com/jobs/view/42",
                "status": "live",
                "reason": None,
                "since": 1_764_581_400_000,
            },
        },
    }


def test_a_refusal_carries_the_boards_problem_and_no_listing():
    problem = ListingProblem("too short", "too_short", "/description")
    refused = ListingEvent("e-2", "listing.refused", "acme", "p-1", 4, 1, "indeed", problem=problem)
    data = json.loads(signing.body(refused))["data"]
    assert data == {
        "posting_id": "p-1",
        "version": 4,
        "board": "indeed",
        "problem": {"code": "too_short", "pointer": "/description", "detail": "too short"},
    }


def test_each_attempt_verifies_with_the_library_on_the_receivers_side():
    secret = new_secret()
    payload = signing.body(LIVE)
    headers = signing.headers(LIVE.event_id, payload, [secret], time.time_ns() // 1_000_000)
    assert headers["webhook-id"] == LIVE.event_id
    assert Webhook(secret).verify(payload.encode(), headers) == json.loads(payload)


def test_during_a_rotation_both_secrets_sign_and_either_verifies():
    new, old = new_secret(), new_secret()
    payload = signing.body(LIVE)
    headers = signing.headers(LIVE.event_id, payload, [new, old], time.time_ns() // 1_000_000)
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (new, old):
        Webhook(secret).verify(payload, headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(payload, headers)


def test_a_changed_body_or_id_does_not_verify():
    secret = new_secret()
    payload = signing.body(LIVE)
    headers = signing.headers(LIVE.event_id, payload, [secret], time.time_ns() // 1_000_000)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(payload.replace('"version":3', '"version":4'), headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(payload, {**headers, "webhook-id": "another"})


def test_the_timestamp_is_the_attempts_in_unix_seconds():
    headers = signing.headers("e", "{}", [new_secret()], 1_764_581_400_999)
    assert headers["webhook-timestamp"] == "1764581400"


def test_unsigned_is_refused():
    with pytest.raises(ValueError):
        signing.headers("e", "{}", [], 0)
