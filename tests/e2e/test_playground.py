"""The playground page (/ui) in a real browser, against the system as `make run` starts it.

Every check is something a person sees on the page: the state word of a timeline cell
(`data-state` mirrors it), the times it shows, the messages next to an action. The browser is
the chromium `jobpost doctor` finds (JOBPOST_CHROMIUM, Debian's, or Playwright's own), which
`make test` obtains before the suite starts.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

from jobpost_dev import doctor
from tests import postings
from tests.e2e.conftest import System
from tests.processes import wait_until

pytestmark = pytest.mark.serial  # chromium, with page timeouts of 15 s

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
DESTINATIONS = ("linkedin", "indeed", "search")
BOARDS = ("linkedin", "indeed")
SETTLED_IN_SEARCH = re.compile(r"^(delivered|skipped)$")  # an older version: indexed, or folded
# Deliveries are asynchronous: a version reaches a destination within seconds, retries
# wait 0.5 s then up to 2 s in the e2e system.
DELIVERY_MS = 60_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = doctor.chromium()
    if executable is None:
        pytest.fail("no chromium: `jobpost doctor --obtain` installs one, or set JOBPOST_CHROMIUM")
    with sync_playwright() as playwright:
        # --no-sandbox: chromium's sandbox refuses to run as root (CI)
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser, system: System, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(15_000)
    # The page runs under a Content-Security-Policy without inline script: anything it
    # refused would show here (chromium reports each refusal on the console).
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(f"{system.url}/ui")
    yield page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)  # the last view of every test, to look at after a failure
    page.screenshot(path=ARTIFACTS / f"playground-{request.node.name}.png", full_page=True)
    context.close()
    assert not refused, f"the page's policy refused: {refused}"


def sign_in(page: Page, token: str) -> None:
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Posting", exact=True)).to_be_visible()


def create(page: Page, title: str) -> str:
    """Creates a posting from the editor (the factory's ad, the editor's default place and apply
    URL); its id as the page shows it."""
    page.get_by_label("Title", exact=True).fill(title)
    page.get_by_label("Description", exact=True).fill(postings.body(0)["description"])
    page.get_by_role("button", name="Create posting").click()
    meta = page.get_by_test_id("posting-meta")
    expect(meta).to_have_attribute("data-version", "0")
    expect(page.get_by_test_id("posting-done")).to_contain_text("Created")
    posting_id = meta.get_attribute("data-id")
    assert posting_id
    return posting_id


def replace(page: Page, title: str, shown_version: int) -> None:
    """Replaces the shown posting (If-Match: the version on the button)."""
    page.get_by_label("Title", exact=True).fill(title)
    page.get_by_role("button", name=f"Replace version {shown_version}").click()
    expect(page.get_by_test_id("posting-meta")).to_have_attribute("data-version", str(shown_version + 1))


def set_faults(page: Page, board: str, mode: str) -> None:
    page.get_by_label(f"{board} fault mode").select_option(mode)
    page.get_by_label(f"{board} fault probability").fill("1")
    page.get_by_role("button", name=f"Apply {board} faults").click()
    expect(page.get_by_test_id(f"faults-{board.lower()}")).to_have_attribute("data-mode", mode)


def cell(page: Page, destination: str, version: int) -> Locator:
    return page.get_by_test_id(f"cell-{destination}-{version}")


def expect_state(page: Page, destination: str, version: int, state: str, timeout: int = DELIVERY_MS) -> None:
    expect(cell(page, destination, version)).to_have_attribute("data-state", state, timeout=timeout)


def delivered_in_order(page: Page, destination: str, versions: Iterable[int]) -> bool:
    """The delivery times the cells show do not go back from one version to the next."""
    times = [int(cell(page, destination, v).get_attribute("data-at") or 0) for v in versions]
    return all(times) and times == sorted(times)


def search_count(page: Page, words: str) -> int:
    """Searches titles from the page; how many postings it says match."""
    page.get_by_label("Title words").fill(words)
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.get_by_test_id("search-results")).not_to_have_attribute("aria-busy", "true")
    expect(page.get_by_test_id("search-error")).to_be_hidden()
    return int(page.get_by_test_id("search-status").get_attribute("data-count") or 0)


def test_versions_reach_both_boards_and_search_in_order(page: Page, system: System):
    sign_in(page, system.token)
    create(page, "Senior Data Engineer")
    replace(page, "Staff Data Engineer", 0)
    replace(page, "Principal Data Engineer", 1)

    for board in BOARDS:  # a board gets every version, one after another
        for version in range(3):
            expect_state(page, board, version, "delivered")
        assert delivered_in_order(page, board, range(3)), board
    # The index needs only the newest version: the indexer writes the newest of a posting's
    # versions in one bulk request, and the page shows the ones folded into it as skipped.
    expect_state(page, "search", 2, "delivered")
    for version in range(2):
        expect(cell(page, "search", version)).to_have_attribute("data-state", SETTLED_IN_SEARCH)
    indexed = [v for v in range(3) if cell(page, "search", v).get_attribute("data-state") == "delivered"]
    assert delivered_in_order(page, "search", indexed), indexed
    for destination in DESTINATIONS:
        expect(page.get_by_test_id(f"waiting-{destination}")).to_contain_text("waiting for v3")
    expect(page.get_by_test_id("version-2")).to_contain_text("Principal Data Engineer")

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.get_by_test_id("timeline").screenshot(path=ARTIFACTS / "playground-timeline.png")


def test_each_board_shows_its_job_live_with_the_boards_id_and_a_link_to_it(page: Page, system: System):
    sign_in(page, system.token)
    posting_id = create(page, "Senior Data Engineer")

    for board in BOARDS:  # the board's own status read back: live
        expect(page.get_by_test_id(f"listing-{board}")).to_have_attribute(
            "data-status", "live", timeout=DELIVERY_MS
        )
    listings = system.client.deliveries(posting_id)["destinations"]
    linkedin, indeed = listings["linkedin"]["listing"], listings["indeed"]["listing"]
    assert linkedin["id"].startswith("urn:li:jobPosting:") and linkedin["url"], linkedin
    link = page.get_by_test_id("listing-link-linkedin")
    expect(link).to_have_attribute("href", linkedin["url"])  # the page the board gave, as it gave it
    expect(link).to_have_text(linkedin["id"])
    assert indeed["id"] and indeed["url"] is None, indeed  # Indeed gives its id, no page
    expect(page.get_by_test_id("listing-id-indeed")).to_have_text(indeed["id"])


def test_a_failing_board_retries_with_a_countdown_and_catches_up_in_order(page: Page, system: System):
    sign_in(page, system.token)
    create(page, "Senior Data Engineer")
    expect_state(page, "linkedin", 0, "delivered")

    set_faults(page, "LinkedIn", "error")
    replace(page, "Staff Data Engineer", 0)
    replace(page, "Principal Data Engineer", 1)
    retrying = cell(page, "linkedin", 1)
    expect(retrying).to_have_attribute("data-state", "retrying", timeout=DELIVERY_MS)
    expect(retrying).to_contain_text(re.compile(r"attempt \d+"))
    expect(retrying).to_contain_text(re.compile(r"next attempt (in \d+ s|now)"))
    for version in (1, 2):
        expect_state(page, "indeed", version, "delivered")
    expect(cell(page, "linkedin", 2)).not_to_have_attribute("data-state", "delivered")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.get_by_test_id("timeline").screenshot(path=ARTIFACTS / "playground-retrying.png")

    set_faults(page, "LinkedIn", "none")
    for version in (1, 2):
        expect_state(page, "linkedin", version, "delivered")
    assert delivered_in_order(page, "linkedin", range(3))
    expect(page.get_by_test_id("waiting-linkedin")).to_contain_text("waiting for v3")


def test_a_rejected_version_is_dead_lettered_and_redriven(page: Page, system: System):
    sign_in(page, system.token)
    posting_id = create(page, "Senior Data Engineer")
    expect_state(page, "linkedin", 0, "delivered")

    set_faults(page, "LinkedIn", "reject")
    replace(page, "Staff Data Engineer", 0)
    expect_state(page, "linkedin", 1, "dead_lettered")
    expect(cell(page, "linkedin", 1)).to_contain_text("dead-lettered")
    expect_state(page, "indeed", 1, "delivered")
    letter = page.get_by_test_id(f"letter-{posting_id}-1").first
    expect(letter).to_be_visible(timeout=DELIVERY_MS)
    expect(letter).to_contain_text("unresolved")

    set_faults(page, "LinkedIn", "none")
    letter.get_by_role("button", name="Redrive").click()
    # A redelivery is a delivery: LinkedIn confirms it through a task, as the first try.
    expect(page.get_by_test_id("redrive-result-linkedin")).to_contain_text(
        f"{posting_id} v1: delivered", timeout=DELIVERY_MS
    )
    expect_state(page, "linkedin", 1, "delivered")


def test_a_deleted_posting_closes_on_both_boards_and_leaves_search(page: Page, system: System):
    word = f"lighthouse{uuid.uuid4().hex[:8]}"
    sign_in(page, system.token)
    create(page, f"Keeper {word}")
    expect_state(page, "search", 0, "delivered")
    wait_until(lambda: search_count(page, word) == 1, 30, "the search to find the posting")

    page.get_by_role("button", name="Delete").click()
    expect(page.get_by_test_id("posting-meta")).to_have_attribute("data-status", "deleted")
    for board in BOARDS:
        expect_state(page, board, 1, "closed")
        expect(page.get_by_test_id(f"lane-{board}")).to_contain_text("closed")
        expect(page.get_by_test_id(f"waiting-{board}")).to_have_count(0)
    wait_until(lambda: search_count(page, word) == 0, 60, "the search to stop finding the deleted posting")
    expect(page.get_by_test_id("search-status")).to_contain_text("No postings match")


def test_a_wrong_token_shows_a_clear_message(page: Page, system: System):
    page.get_by_label("API token").fill("not-the-token")
    page.get_by_role("button", name="Sign in").click()

    expect(page.get_by_test_id("signin-error")).to_contain_text("That token was not accepted")
    expect(page.get_by_role("heading", name="Posting", exact=True)).to_be_hidden()
    sign_in(page, system.token)  # the page stays usable: the right token gets in


def test_the_api_docs_render_from_this_origin_under_their_policy(page: Page, system: System):
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    page.goto(f"{system.url}/docs")
    expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
    expect(page.get_by_text("/postings/{posting_id}/timeline").first).to_be_visible()
    page.goto(f"{system.url}/redoc")
    expect(page.get_by_role("heading", name=re.compile("jobpost")).first).to_be_visible()
    assert asked and all(url.startswith((system.url, "data:", "blob:")) for url in asked), asked
