"""Conflation at the board's pace: a version that queued while the board was confirming an
earlier one gives way to the newest queued behind it; nothing is skipped while the board
keeps up, never the CREATED version, a DELETE, a redrive or a version already at the board.
The lanes run with a fake LinkedIn (tasks) and a virtual clock."""

import asyncio

import pytest
from pydantic import ValidationError

from consumers.config import ConsumerSettings
from consumers.items import Item
from consumers.rules import conflated
from schemas.deliveries import DeliveryState
from schemas.enums import DeliveryOutcome, DeliveryStatus
from schemas.model import Destination
from schemas.redrive import RedriveRequest
from tests.unit.consumers.fakes import Harness, item, scenario, update

TASK_MS = 10_000


async def edit_every(h: Harness, posting_id: str, every_s: float, versions: range) -> int:
    """Add the posting's versions one every `every_s` of virtual time; when the last came."""

    async def edit() -> None:
        for version in versions:
            await h.clock.sleep(every_s, asyncio.Event())
            h.add(item(posting_id, version))

    editing = asyncio.create_task(edit())
    await h.clock.run(editing.done, 3_600_000)
    return h.clock.now


def delivered_at(h: Harness, posting_id: str, version: int) -> int:
    (at,) = [
        e.at
        for e in h.outcomes.events
        if (e.posting_id, e.version, e.outcome) == (posting_id, version, DeliveryOutcome.DELIVERED)
    ]
    return at


def test_a_posting_edited_faster_than_the_board_confirms_converges_at_its_pace():
    async def body(h: Harness):
        h.board.task_delay_ms = TASK_MS
        h.add(item("a", 0))
        stopped = await edit_every(h, "a", 0.2, range(1, 151))  # every 200 ms for 30 s
        await h.settle(151)
        sent = h.board.sent("a")
        assert sent == sorted(set(sent)) and (sent[0], sent[-1]) == (0, 150)  # only forward, ends newest
        assert len(sent) <= 7  # one version a task time, not 151
        # The version at the board when the edits stopped ends first: one to two task times.
        assert delivered_at(h, "a", 150) - stopped <= 2 * TASK_MS + 2_000
        skipped = {e.version: e.error for e in h.outcomes.events if e.outcome == DeliveryOutcome.SKIPPED}
        assert sorted([*skipped, *sent]) == list(range(151))
        waited_for = sent[sent.index(150) - 1]
        assert skipped[149] == f"superseded by v150 while the board was confirming v{waited_for}"

    scenario(body, confirms=True, conflate=True)


def test_nothing_is_skipped_while_the_board_keeps_up():
    async def body(h: Harness):
        h.board.task_delay_ms = TASK_MS
        h.add(item("a", 0))
        await edit_every(h, "a", 12, range(1, 6))  # slower than a task and its poll
        await h.settle(6)
        assert h.board.sent("a") == [0, 1, 2, 3, 4, 5]
        assert all(e.outcome != DeliveryOutcome.SKIPPED for e in h.outcomes.events)

    scenario(body, confirms=True, conflate=True)


def test_delivering_every_version_sends_each_in_order_however_far_behind():
    async def body(h: Harness):
        h.board.task_delay_ms = TASK_MS
        h.add(item("a", 0))
        await edit_every(h, "a", 0.2, range(1, 21))
        await h.settle(21)
        assert h.board.sent("a") == list(range(21))

    scenario(body, confirms=True, conflate=False)


def state(**fields: object) -> DeliveryState:
    return DeliveryState(Destination.LINKEDIN, "a", fields.pop("status", DeliveryStatus.DELIVERED), **fields)  # type: ignore[arg-type]


def test_the_rule_skips_an_update_for_a_newer_queued_one_and_says_what_the_board_was_doing():
    board_had_12 = state(delivered_version=12, finished_version=12)
    assert conflated(item("a", 13), board_had_12, [item("a", 14), item("a", 17)]) == (
        "superseded by v17 while the board was confirming v12"
    )
    assert conflated(item("a", 13), board_had_12, []) is None  # nothing newer: it goes
    assert conflated(item("a", 13), state(status=DeliveryStatus.PENDING), [item("a", 14)]) == (
        "superseded by v14, queued behind it"
    )


def redrive(version: int) -> Item:
    request = RedriveRequest("r", "a", version, b"", 0, 0, "ops", 0)
    return Item("a", update("a", version), 0, 9, request=request)


def test_the_rule_never_skips_a_create_a_delete_a_redrive_nor_a_version_at_the_board():
    before = state(delivered_version=0, finished_version=0)
    assert conflated(item("a", 0), state(status=DeliveryStatus.PENDING), [item("a", 1)]) is None
    assert conflated(item("a", 3, "DELETED"), before, [Item("a", None, 0, 4)]) is None
    assert conflated(redrive(1), before, [item("a", 2)]) is None  # `redrive_skipped` judges it
    assert conflated(item("a", 1), before, [redrive(2)]) is None  # a request is no newer version
    # Never across a delete: a delete behind supersedes it (`superseded_by`), whatever the mode.
    assert conflated(item("a", 1), before, [item("a", 2), item("a", 3, "DELETED")]) is None
    # A restarted consumer finds v1's task at the board: polled, never skipped.
    submitted = state(status=DeliveryStatus.SUBMITTED, delivered_version=0, pending_version=1, task_id="t")
    assert conflated(item("a", 1), submitted, [item("a", 2)]) is None


def test_a_restart_with_a_task_at_the_board_polls_it_before_the_newest_goes():
    async def body(h: Harness):
        h.add(item("a", 0))
        await h.settle(1)
        h.board.task_delay_ms = TASK_MS
        h.add(item("a", 1))
        await h.clock.run(lambda: h.state("a").status == DeliveryStatus.SUBMITTED, 10_000)
        h.scheduler.drop_partitions({0})  # the partition moves away and comes back
        h.add(*(item("a", v) for v in range(1, 5)))
        await h.clock.run(lambda: h.state("a").delivered_version == 4, 60_000)
        assert h.board.sent("a") == [0, 1, 4]

    scenario(body, confirms=True, conflate=True)


def test_conflation_is_the_default_and_the_old_setting_name_still_says_the_same(monkeypatch):
    assert ConsumerSettings().conflates
    assert not ConsumerSettings(deliver_every_version=True).conflates
    monkeypatch.setenv("JOBPOST_CONSUMER_CONFLATE", "false")
    assert not ConsumerSettings().conflates
    monkeypatch.setenv("JOBPOST_CONSUMER_CONFLATE", "true")
    assert ConsumerSettings().conflates
    with pytest.raises(ValidationError, match="contradict"):
        ConsumerSettings(deliver_every_version=True)
