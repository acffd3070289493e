"""What a view keeps per posting, and the versions learnt from replies it prefers until its
follower has read them."""

from producer_api.read import view_state
from producer_api.read.view_state import PostingView, RecentWrites
from schemas import codec
from schemas.model import Op, Posting, PostingUpdate


def update(version: int, op: Op = Op.UPDATED, text: str = "Builds things") -> PostingUpdate:
    return PostingUpdate(
        "p1",
        version,
        op,
        f"k{version}",
        f"r{version}",
        Posting("Engineer", text),
        1000 + version,
        7,
        employer="acme",
    )


def test_a_live_posting_is_its_version_and_text_read_back_from_the_raw_record():
    raw = codec.posting_updates().encode(update(3))
    value = view_state.updated(update(3), raw)

    assert view_state.header(value) == (3, 1003)
    assert view_state.posting_view("p1", value) == PostingView(
        "p1", 3, False, Posting("Engineer", "Builds things"), 1003, "acme"
    )
    assert view_state.employer(value) == "acme"


def test_a_deleted_posting_keeps_its_version_and_employer_and_no_text():
    value = view_state.updated(update(4, Op.DELETED, "x" * 1500), b"ignored")

    assert len(value) < 30 and b"x" not in value
    assert view_state.posting_view("p1", value) == PostingView("p1", 4, True, None, 1004, "acme")
    assert view_state.employer(value) == "acme"
    # A tombstone the view saw alone: deleted, whose posting it was is not known.
    assert view_state.posting_view("p9", view_state.deleted(-1, None, None)) == PostingView(
        "p9", -1, True, None, None, None
    )


def test_an_observed_version_is_preferred_only_while_newer_and_dropped_once_applied():
    recent = RecentWrites()
    stored = PostingView("p1", 2, False, Posting("T", ""), 1)
    recent.observe(PostingView("p1", 3, False, Posting("T", "new"), 2))
    recent.observe(PostingView("p1", 1, False, None, 0))  # older than what is waiting: ignored

    assert view_state.newest(stored, recent.get("p1")) == recent.get("p1")
    recent.applied("p1", 2)
    assert len(recent) == 1
    recent.applied("p1", 3)
    assert len(recent) == 0 and view_state.newest(stored, recent.get("p1")) == stored


def test_waiting_versions_are_bounded_oldest_first():
    recent = RecentWrites(limit=3)
    for n in range(5):
        recent.observe(PostingView(f"p{n}", 0, False, None, 0))

    assert len(recent) == 3 and recent.get("p1") is None and recent.get("p4") is not None
