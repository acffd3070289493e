"""What an endpoint may be: its URL (https; this machine and private networks only where
development allows) and its events list."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from producer_api.http.webhook_models import ReplayIn, WebhookIn
from producer_api.webhook_service import url_problem


@pytest.mark.parametrize(
    "url",
    ["https://ats.example/hooks/jobpost", "https://ats.example:8443/h?tenant=1", "https://93.184.215.14/h"],
)
def test_https_urls_are_taken(url):
    assert url_problem(url, local_http=False) is None


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://ats.example/hooks", "an https URL is needed"),
        ("ftp://ats.example/hooks", "an https URL is needed"),
        ("/hooks", "an absolute URL with a host is needed"),
        ("https://user:pw@ats.example/h", "credentials do not belong in the URL"),
        ("https://ats.example/h#part", "a fragment is never sent: leave it out"),
        ("https://ats.example:99999/h", "not a URL: Port out of range 0-65535"),
        (
            "http://127.0.0.1:9000/h",
            "plain http to this machine only when JOBPOST_API_WEBHOOK_LOCAL_HTTP allows it",
        ),
        ("https://10.1.2.3/h", "an address of this machine or a private network cannot receive webhooks"),
        ("https://[::1]/h", "an address of this machine or a private network cannot receive webhooks"),
        (
            "https://169.254.169.254/latest",
            "an address of this machine or a private network cannot receive webhooks",
        ),
        ("https://" + "a" * 2000 + ".example/", "at most 2000 characters"),
    ],
)
def test_other_urls_are_refused_saying_why(url, why):
    assert url_problem(url, local_http=False) == why


def test_development_takes_this_machine_plain_http_included():
    for url in ("http://127.0.0.1:9000/h", "http://localhost/h", "https://10.1.2.3/h"):
        assert url_problem(url, local_http=True) is None
    assert url_problem("http://ats.example/h", local_http=True) == "an https URL is needed"


def test_events_default_to_everything_and_name_known_types_or_families():
    assert WebhookIn(url="https://x.example").events == ["*"]
    assert WebhookIn(url="https://x.example", events=["listing.*", "posting.accepted"]).events == [
        "listing.*",
        "posting.accepted",
    ]
    with pytest.raises(ValidationError, match="names no event type"):
        WebhookIn(url="https://x.example", events=["listing.gone"])
    with pytest.raises(ValidationError):
        WebhookIn(url="https://x.example", events=[])
    with pytest.raises(ValidationError):
        WebhookIn(url="https://x.example", secret="mine")  # type: ignore[call-arg]


def test_a_replay_names_its_time_with_an_offset():
    assert ReplayIn(since="2026-12-01T09:00:00+01:00").since.utcoffset() is not None  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        ReplayIn(since="2026-12-01T09:00:00")  # type: ignore[arg-type]
