"""The JSON a client gets for the service's types: the shapes the contract names."""

from fastapi.encoders import jsonable_encoder

from producer_api.http import present
from producer_api.http.answers import _PROBLEM_OF
from producer_api.http.ops_models import Board
from producer_api.read import timeline
from producer_api.read.progress import Listing, Progress, ProgressStatus
from producer_api.read.timeline import VersionLine
from producer_api.read.views import PostingView
from producer_api.service import Refusal
from schemas.deliveries import delivery_event
from schemas.enums import DeliveryOutcome, Destination, Op, Outcome
from schemas.model import Posting
from schemas.topics import BOARDS


def test_a_timeline_as_the_playground_reads_it():
    event = delivery_event(
        Destination.INDEED, "p", 0, DeliveryOutcome.RETRYING, 2, error="503", at=7, next_attempt_at=9
    )
    built = timeline.build("p", 0, False, [VersionLine(0, Op.CREATED, 5, "Engineer")], [event], {})

    answer = jsonable_encoder(present.timeline(built))

    pending = {
        "version": 0,
        "state": "pending",
        "at": None,
        "attempts": 0,
        "error": None,
        "next_attempt_at": None,
    }
    assert answer == {
        "posting_id": "p",
        "version": 0,
        "deleted": False,
        "versions": [{"version": 0, "op": "CREATED", "at": 5, "title": "Engineer"}],
        "lanes": {
            "linkedin": {"cells": [pending], "waiting_for": None, "closed": False, "listing": None},
            "indeed": {
                "cells": [
                    {
                        **pending,
                        "state": "retrying",
                        "at": 7,
                        "attempts": 2,
                        "error": "503",
                        "next_attempt_at": 9,
                    }
                ],
                "waiting_for": None,
                "closed": False,
                "listing": None,
            },
            "search": {"cells": [pending], "waiting_for": None, "closed": False, "listing": None},
        },
        "events": [
            {
                "posting_id": "p",
                "version": 0,
                "destination": "indeed",
                "attempt": 2,
                "outcome": "retrying",
                "error": "503",
                "next_attempt_at": 9,
                "at": 7,
                "task_id": None,
                "request_id": None,
            }
        ],
    }


def test_delivery_progress_names_every_destination():
    view = PostingView("p", 3, False, Posting("T", ""), 1)
    live = Listing("urn:li:jobPosting:42", "https://www.linkedin.com/jobs/view/42", "live", None, 11)
    progress = [
        Progress(Destination.LINKEDIN, ProgressStatus.RETRYING, 2, 4, 10, 20, "timeout", listing=live),
        Progress(Destination.INDEED, ProgressStatus.SUBMITTED, 2, 1, task_id="urn:li:simpleJobPostingTask:7"),
        Progress(Destination.SEARCH, ProgressStatus.PENDING),
    ]

    answer = jsonable_encoder(present.deliveries(view, progress))

    assert answer["posting_id"] == "p" and answer["version"] == 3
    assert list(answer["destinations"]) == ["linkedin", "indeed", "search"]
    assert answer["destinations"]["linkedin"] == {
        "delivered_version": 2,
        "status": "retrying",
        "attempts": 4,
        "first_attempt_at": 10,
        "next_attempt_at": 20,
        "last_error": "timeout",
        "task_id": None,
        "paused_reason": None,
        "listing": {
            "id": "urn:li:jobPosting:42",
            "url": "https://www.linkedin.com/jobs/view/42",
            "status": "live",
            "reason": None,
            "since": 11,
        },
    }
    indeed = answer["destinations"]["indeed"]
    assert (indeed["status"], indeed["task_id"]) == ("submitted", "urn:li:simpleJobPostingTask:7")
    assert answer["destinations"]["search"]["status"] == "pending"


def test_a_deleted_posting_shows_no_text():
    answer = jsonable_encoder(present.posting(PostingView("p", 4, True, None, 9)))
    assert (answer["status"], answer["title"], answer["version"]) == ("deleted", "", 4)


def test_every_refusal_has_a_problem_and_the_sequencers_refusals_are_refusals():
    assert set(_PROBLEM_OF) == set(Refusal)
    refusing = [o for o in Outcome if o not in (Outcome.ACCEPTED, Outcome.EXPIRED)]  # EXPIRED: a 503
    assert [Refusal.of(o).value for o in refusing] == [o.value for o in refusing]


def test_the_boards_of_the_http_schema_are_the_boards():
    assert [Destination(b.value) for b in Board] == list(BOARDS)
