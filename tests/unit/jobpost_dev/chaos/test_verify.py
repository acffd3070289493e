"""The fault run's verdict on the log: what counts as lost or applied twice; its report's
stretches without a write."""

import dataclasses

import httpx

from jobpost_dev.chaos.load import Ack, Ledger, Sample
from jobpost_dev.chaos.report import FaultWindow, Report
from jobpost_dev.chaos.verify import Verdict, _board_matches, accepted, check_log
from schemas.model import Op, Posting, PostingUpdate


def update(version: int, op: Op, request_id: str, notes: str) -> PostingUpdate:
    return PostingUpdate("p1", version, op, f"p1:{version}", request_id, Posting("T", "D", notes), 9, 9)


def test_a_delete_repeating_the_last_text_is_not_a_second_application_of_that_write():
    # An unkeyed replace (marker m-1) at version 1, then a keyed delete: the DELETED
    # version carries version 1's text, notes included, so that the boards close it.
    log = {
        "p1": [
            accepted(update(0, Op.CREATED, "k-0", "")),
            accepted(update(1, Op.UPDATED, "corr-1", "m-1")),
            accepted(update(2, Op.DELETED, "k-2", "m-1")),
        ]
    }
    ledger = Ledger(
        acked={"k-0": Ack("p1", 0, "CREATED"), "k-2": Ack("p1", 2, "DELETED")},
        acked_unkeyed={"m-1": Ack("p1", 1, "UPDATED", "m-1")},
    )

    verdict = check_log(ledger, log)

    assert (verdict.lost, verdict.duplicated, verdict.reordered) == ([], [], [])


def test_an_unkeyed_write_applied_twice_is_a_duplicate_and_its_acknowledged_version_checked():
    log = {
        "p1": [
            accepted(update(0, Op.CREATED, "k-0", "")),
            accepted(update(1, Op.UPDATED, "corr-1", "m-1")),
            accepted(update(2, Op.UPDATED, "corr-2", "m-1")),  # the same attempt, applied again
        ]
    }
    ledger = Ledger(
        acked={"k-0": Ack("p1", 0, "CREATED")}, acked_unkeyed={"m-1": Ack("p1", 1, "UPDATED", "m-1")}
    )

    verdict = check_log(ledger, log)

    assert verdict.duplicated == ["m-1"]
    assert verdict.lost == ["m-1"]  # acknowledged at 1, but the log's last application of it is 2


def test_one_partition_without_writes_shows_while_the_others_go_on():
    """A sequencer member stuck on its partitions takes their writes away while the other
    member's keep coming: the overall longest stretch stays short, the partition's does not."""
    samples = [Sample(float(t), 0.0, True, "a") for t in range(0, 60)]  # partition 0: every second
    samples += [Sample(float(t), 0.0, True, "b") for t in (0, 1, 2, 50, 51)]  # partition 1: 48 s without
    samples.append(Sample(30.0, 0.0, False, ""))  # a refused write counts for nothing
    report = Report(Ledger(samples=samples), Verdict(), [], 1.0, load_ended=60.0, partitions={"a": 0, "b": 1})

    assert report.longest_outage()[0] == 1.0
    assert report.longest_partition_gap() == (48.0, 1, 2.0)
    assert report.longest_partition_gap(40.0, 60.0) == (10.0, 1, 40.0)  # within a window: from its start
    assert report.longest_partition_gap(0.0, 40.0) == (38.0, 1, 2.0)  # to the window's end


def test_the_partition_line_says_when_its_stretch_began_and_which_fault_it_follows():
    """An operator reading the report learns whether a long stretch on one partition came
    with a fault or without one (a stall of its own)."""
    samples = [Sample(float(t), 0.0, True, "a") for t in range(10, 60)]  # partition 0: every second
    samples += [Sample(float(t), 0.0, True, "b") for t in (10, 11, 12, *range(30, 60))]  # 1: 18 s without

    def report(fault: FaultWindow) -> Report:
        partitions = {"a": 0, "b": 1}
        return Report(Ledger(samples=samples), Verdict(), [fault], 1.0, 60.0, partitions=partitions)

    with_fault = report(FaultWindow("api-kill", started=11.5, ended=12.0))
    without = report(FaultWindow("broker-kill", started=40.0, ended=55.0))

    line = "longest stretch without a successful write on a partition: 18.0 s (number 1, from 2.0 s after "
    assert f"{line}the first acknowledged write; api-kill)" in with_fault.lines()
    assert f"{line}the first acknowledged write; no fault)" in without.lines()


def board(versions: list[int] | None, jobs: list[dict]):
    """A sandbox board answering for p1: its numbers of the contents it applied, its jobs."""

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/jobs"):
            return httpx.Response(200, json={"jobs": jobs})
        if versions is None:
            return httpx.Response(404, json={"detail": "never seen"})
        return httpx.Response(200, json={"versions": versions, "status": "open"})

    return httpx.Client(transport=httpx.MockTransport(answer), base_url="http://sandbox")


def titled(*versions: tuple[int, Op, str]) -> list:
    return [
        accepted(dataclasses.replace(update(v, op, f"k-{v}", ""), posting=Posting(title, "D")))
        for v, op, title in versions
    ]


def test_a_board_is_read_in_its_own_terms_contents_not_version_numbers():
    # v2 repeats v1's text (an unkeyed write applied twice): the board sees two contents.
    log = titled((0, Op.CREATED, "A"), (1, Op.UPDATED, "B"), (2, Op.UPDATED, "B"))
    live_b = [{"title": "B", "status": "live"}]

    assert _board_matches(board([0, 1], live_b), "", "linkedin", "p1", log)
    assert not _board_matches(board([0], [{"title": "A", "status": "live"}]), "", "linkedin", "p1", log)
    assert not _board_matches(board([1, 0], live_b), "", "linkedin", "p1", log)  # an older content after
    assert not _board_matches(board([0, 1], live_b * 2), "", "linkedin", "p1", log)  # two jobs of one posting


def test_a_deleted_posting_is_closed_at_the_board_or_never_reached_it():
    log = titled((0, Op.CREATED, "A"), (1, Op.DELETED, "A"))

    assert _board_matches(board([0, 1], [{"title": "A", "status": "closed"}]), "", "indeed", "p1", log)
    assert _board_matches(board(None, []), "", "indeed", "p1", log)  # the delete superseded the create
    # an update the delete superseded never reached the board: the job closes holding v0
    skipped = titled((0, Op.CREATED, "A"), (1, Op.UPDATED, "B"), (2, Op.DELETED, "B"))
    assert _board_matches(board([0, 1], [{"title": "A", "status": "closed"}]), "", "indeed", "p1", skipped)
    assert not _board_matches(board([0], [{"title": "A", "status": "live"}]), "", "indeed", "p1", log)
