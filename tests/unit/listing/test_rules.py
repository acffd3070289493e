"""Each board's rules over the refusal table (tests/refusal_cases.py): every case is refused
by its board, at its pointer, with its code, and by no rule it is not about; the factory's
postings are listable at both boards; no detail names a server path or a setting."""

import re

import pytest

import listing
from listing import description, places
from listing.employers import SANDBOX_REGISTRY
from producer_api.http.models import PostingIn
from producer_api.http.posting_body import to_posting
from schemas.enums import DescriptionFormat, Destination
from schemas.model import PostingLocation
from tests import postings
from tests.refusal_cases import CASES, REGISTRY, RefusalCase

# What an employer must never read in a refusal: a file or path of the server, an
# environment variable, a setting's name.
SERVER_INTERNALS = re.compile(r"JOBPOST_|_FILE\b|employers_file|\.json\b|/\w+/\w+|environment|setting", re.I)


def found(case: RefusalCase) -> list[dict]:
    posting = to_posting(PostingIn.model_validate(case.body()))
    return [p.to_json() for p in listing.problems(posting, case.employer, REGISTRY)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_each_case_is_refused_by_its_board_where_and_why_the_table_says(case):
    problems = found(case)
    assert {(p["board"], p["pointer"], p["code"]) for p in problems} == {
        (case.board, case.pointer, case.code)
    }
    (problem,) = problems
    assert problem["detail"].endswith(".") and len(problem["detail"]) > 40
    assert not SERVER_INTERNALS.search(problem["detail"]), problem["detail"]


def test_the_table_has_a_case_for_every_code_of_each_board():
    codes = {board: {c.code for c in CASES if c.board == board} for board in ("linkedin", "indeed")}
    assert codes["linkedin"] == {
        "too_short",
        "too_long",
        "required",
        "location_format",
        "employer_not_configured",
    }
    assert codes["indeed"] == {
        "too_long",
        "required",
        "too_many",
        "must_be_positive",
        "employer_not_configured",
    }


def test_the_factorys_postings_are_listable_at_both_boards():
    for index in range(300):
        posting = postings.posting(index)
        assert listing.problems_by_board(posting, "default", SANDBOX_REGISTRY) == {
            Destination.LINKEDIN: [],
            Destination.INDEED: [],
        }, index
        assert len(posting.description) >= 100 and posting.apply_url.startswith("https://")


def test_a_posting_for_no_board_has_no_board_to_satisfy():
    posting = postings.posting(0, description="", apply_url=None, boards=())
    assert listing.problems_by_board(posting, "nobody", SANDBOX_REGISTRY) == {}


def test_a_remote_job_is_located_by_its_country_alone_at_both_boards():
    remote = next(postings.posting(i) for i in range(10) if postings.posting(i).workplace == "REMOTE")
    assert remote.locations == (PostingLocation(remote.locations[0].country),)
    assert listing.problems(remote, "default", SANDBOX_REGISTRY) == []


def test_an_unknown_employer_is_not_configured_at_either_board_and_is_named_in_the_detail():
    problems = listing.problems(postings.posting(0), "acme", SANDBOX_REGISTRY)
    assert [(p.board, p.code) for p in problems] == [
        (Destination.LINKEDIN, "employer_not_configured"),
        (Destination.INDEED, "employer_not_configured"),
    ]
    assert all("'acme'" in p.detail and not SERVER_INTERNALS.search(p.detail) for p in problems)


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("Berlin, Germany", PostingLocation("DE", "Berlin")),
        ("Lyon, FRA", PostingLocation("FR", "Lyon")),
        ("Toronto, Ontario, Canada", PostingLocation("CA", "Toronto", "Ontario")),
        ("Austin, Texas, US", PostingLocation("US", "Austin", "Texas")),
        ("Remote", None),
        ("Sunnyvale, California", None),  # a state is not a country
        ("Portland, OR", None),  # a US state's code, not Oregon's country
        ("Berlin, DE", None),  # Germany, or Delaware: not for sure
        ("10115 Berlin, Germany", None),  # a postal code: the client knows which part it is
        ("Paris", None),
        ("A, B, C, D", None),
    ],
)
def test_a_free_text_location_is_read_only_when_it_names_one_place(text, place):
    assert places.structured(text) == place


def test_html_is_cleaned_to_the_allow_list_and_its_visible_text_is_what_linkedin_counts():
    written = (
        '<h2>About</h2><p onclick="x()">Ship <a href="https://evil.example">it</a> &amp; '
        "<script>x()</script>more</p>"
    )
    cleaned = description.clean(written, DescriptionFormat.HTML)
    assert cleaned == "<h2>About</h2><p>Ship it &amp; more</p>"
    assert description.visible(cleaned, DescriptionFormat.HTML) == "AboutShip it & more"
    assert description.clean("<b>kept as typed</b>", DescriptionFormat.TEXT) == "<b>kept as typed</b>"
