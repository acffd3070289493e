"""The destination every lane shares, through the lanes, with a fake board and a virtual
clock: tokens, the budget, the circuit, batches, and nothing charged for the board's own
trouble."""

import itertools

from consumers.boards.base import BoardDown, CallFailed, Delivered, Rejected, Throttled, Unsure
from consumers.destination.circuit import CircuitSettings, CircuitState
from consumers.retry import RetrySettings
from schemas.enums import DeliveryStatus
from tests.unit.consumers.fakes import Harness, item, scenario


def test_one_element_rejected_only_its_version_is_dead_lettered():
    async def body(h: Harness):
        h.board.elements[("bad", 0)] = [Rejected("422 integrationContext is required")]
        h.add(*(item(f"p{n}", 0, offset=n) for n in range(5)), item("bad", 0, offset=5))
        await h.settle(6)
        assert len(h.board.calls) == 1
        assert h.outcomes.letters == [("bad", 0, "422 integrationContext is required", 1)]
        assert all(h.state(f"p{n}").status == DeliveryStatus.DELIVERED for n in range(5))

    scenario(body)


def test_a_401_expires_the_token_and_retries_the_call_once_with_a_fresh_one():
    async def body(h: Harness):
        h.board.refuse_tokens = {"token-1"}
        h.add(item("a", 0))
        await h.settle(1)
        assert h.board.tokens_seen == ["token-1", "token-2"]
        assert h.tokens.expired == ["token-1"]
        assert h.state("a").attempts == 1  # the expired token cost the posting nothing

    scenario(body)


def test_a_second_401_is_the_board_refusing_us_and_charges_nobody():
    async def body(h: Harness):
        h.board.refuse_tokens = {f"token-{n}" for n in range(1, 100)}
        h.add(item("a", 0))
        await h.clock.run(lambda: h.destination.circuit.state != CircuitState.CLOSED, 10_000)
        assert h.destination.circuit.reason.startswith("linkedin refused a fresh access token")
        assert "a" not in h.outcomes.latest or h.state("a").attempts == 0
        h.board.refuse_tokens = set()
        await h.settle(1, limit_ms=60_000)
        assert (h.state("a").status, h.state("a").attempts) == (DeliveryStatus.DELIVERED, 1)

    scenario(body)


def test_a_429_pauses_every_lane_and_charges_nobody():
    async def body(h: Harness):
        h.board.call_errors = [Throttled("429", retry_after_s=30)]
        h.add(*(item(f"p{n}", 0, offset=n) for n in range(3)))
        await h.settle(3)
        first, second = (t for t, _ in h.board.calls)
        assert second - first >= 30_000
        assert all(h.state(f"p{n}").attempts == 1 for n in range(3))
        assert all(h.state(f"p{n}").uncharged_ms >= 30_000 for n in range(3))

    scenario(body)


def test_under_a_budget_no_minute_carries_more_and_every_posting_waits_its_turn():
    async def body(h: Harness):
        for version in range(4):
            h.add(*(item(f"p{n}", version, offset=version * 250 + n) for n in range(250)))
        await h.settle(1000, limit_ms=600_000)
        calls = [(t, len(e)) for t, e in h.board.calls]
        worst = max(sum(n for t, n in calls if s <= t < s + 60_000) for s, _ in calls)
        assert worst <= 600
        assert sum(n for _, n in calls) == 1000 and len(calls) <= 15  # batches of up to 100
        for n in range(250):
            assert h.board.sent(f"p{n}") == [0, 1, 2, 3]
        # First come, first served: every posting's v0 before any v1, v1 before any v2.
        order = [v for _, elements in h.board.calls for _, v in elements]
        assert order == sorted(order)

    scenario(body, records_per_minute=600)


def test_the_board_down_opens_the_circuit_no_posting_is_charged_and_all_resume_in_order():
    async def body(h: Harness):
        h.board.down = BoardDown("connection refused")
        h.add(*(item(f"p{n}", v, offset=v * 10 + n) for v in range(3) for n in range(10)))
        await h.clock.run(lambda: h.destination.circuit.state != CircuitState.CLOSED, 10_000)
        await h.clock.run(lambda: all(h.outcomes.latest.get(f"p{n}") for n in range(10)), 10_000)
        paused = [h.state(f"p{n}") for n in range(10)]
        assert {s.status for s in paused} == {DeliveryStatus.PAUSED}
        assert paused[0].paused_reason == "linkedin is unavailable: connection refused"
        opened_at = h.clock.now
        await h.clock.run(lambda: h.clock.now - opened_at > 3_600_000 * 2, 3_600_000 * 3)  # two hours down
        assert not h.outcomes.letters
        assert all(h.state(f"p{n}").attempts == 0 for n in range(10))
        probes = [t for t, _ in h.board.calls if t > opened_at]
        assert max(b - a for a, b in itertools.pairwise(probes)) <= 30_000 + 100
        h.board.down = None
        await h.settle(30, limit_ms=120_000)
        for n in range(10):
            assert h.state(f"p{n}").delivered_version == 2
            assert [v for v in h.board.sent(f"p{n}") if True][-3:] == [0, 1, 2]
        assert h.state("p0").attempts == 1

    scenario(body, retry=RetrySettings(max_elapsed_s=20))


def test_failures_across_many_postings_open_the_circuit_and_stop_charging():
    async def body(h: Harness):
        h.board.down = CallFailed("503 Service Unavailable")
        h.add(*(item(f"p{n}", 0, offset=n) for n in range(20)))
        await h.clock.run(lambda: h.destination.circuit.state != CircuitState.CLOSED, 60_000)
        charged = {n: h.outcomes.latest[f"p{n}"].attempts for n in range(20) if f"p{n}" in h.outcomes.latest}
        opened_at = h.clock.now
        await h.clock.run(lambda: h.clock.now - opened_at > 600_000, 700_000)
        later = {n: h.outcomes.latest[f"p{n}"].attempts for n in range(20) if f"p{n}" in h.outcomes.latest}
        assert {n: a for n, a in later.items() if a} == {n: a for n, a in charged.items() if a}
        h.board.down = None
        await h.settle(20, limit_ms=120_000)
        assert not h.outcomes.letters

    scenario(body, max_batch=2, circuit=CircuitSettings(failing_postings_to_open=4))


def test_a_call_failure_while_the_board_is_up_is_charged_to_its_elements():
    async def body(h: Harness):
        h.board.call_errors = [CallFailed("timeout")]
        h.add(item("a", 0))
        await h.settle(1)
        assert h.state("a").attempts == 2
        assert [o for _, o, _ in h.outcomes.timeline("a")] == ["RETRYING", "DELIVERED"]

    scenario(body)


def test_a_call_whose_every_element_is_unsure_counts_against_the_board():
    async def body(h: Harness):
        h.board.script = lambda updates: [Unsure("element 500") for _ in updates]
        h.add(*(item(f"p{n}", 0, offset=n) for n in range(6)))
        await h.clock.run(lambda: h.destination.circuit.state != CircuitState.CLOSED, 60_000)
        h.board.script = lambda updates: [Delivered() for _ in updates]
        await h.settle(6, limit_ms=120_000)

    scenario(body, max_batch=3)


def test_a_batch_waits_a_few_ms_to_fill_at_low_load():
    async def body(h: Harness):
        h.add(item("a", 0))
        h.clock.now += 3
        h.add(item("b", 0, offset=1))
        await h.settle(2)
        ((_, elements),) = h.board.calls
        assert len(elements) == 2

    scenario(body, batch_wait_ms=5)


def _fail_while(h: Harness, faulty: dict[str, bool]) -> None:
    """Every call (sends and task polls) answers nothing anyone can read while `faulty["on"]`."""
    send, confirm = h.board.send, h.board.confirm

    async def failing_send(updates, token):
        if faulty["on"]:
            await h.board._call(token)
            h.board.calls.append((h.clock.now, [(u.posting_id, u.update.version) for u in updates]))
            raise CallFailed("linkedin answered 200 with a body that is not UTF-8 JSON: '<html>'")
        return await send(updates, token)

    async def failing_confirm(task_ids, token):
        if faulty["on"]:
            await h.board._call(token)
            raise CallFailed("linkedin answered 200 with a body that has no task results")
        return await confirm(task_ids, token)

    h.board.send, h.board.confirm = failing_send, failing_confirm  # type: ignore[method-assign]


def test_postings_paused_behind_a_probe_the_task_poller_made_resume_when_it_is_answered():
    """The stranded postings of a malformed-answer fault: while the circuit was open, every
    lane's next attempt waited in the queue (paused), the task poller's poll was the probe
    that closed the circuit, and nothing woke the dispatcher: the postings stayed paused with
    one call each seen by the board."""

    async def body(h: Harness):
        faulty = {"on": False}
        _fail_while(h, faulty)
        h.board.task_delay_ms = 30_000
        h.add(item("followed", 0))  # its task is followed throughout: the poller probes too
        await h.clock.run(lambda: len(h.destination.tasks.book) == 1)
        faulty["on"] = True
        postings = ["b", "c", "d", "e", "f"]
        for posting_id in postings:
            h.add(item(posting_id, 0))
            await h.clock.run(lambda: posting_id in h.outcomes.latest)
        assert h.destination.circuit.state == CircuitState.OPEN
        await h.clock.run(lambda: all(h.state(p).status == DeliveryStatus.PAUSED for p in postings), 60_000)
        faulty["on"] = False
        await h.clock.run(lambda: all(h.state(p).delivered_version == 0 for p in postings), 120_000)
        assert h.destination.stranded() == 0
        for posting_id in postings:
            assert h.board.sent(posting_id) == [0, 0]  # the failed call, then the one after the fault

    scenario(body, confirms=True, retry=RetrySettings(first_wait_s=3, max_wait_s=60))


def test_a_paused_posting_shows_when_the_board_is_tried_next_and_that_time_moves_with_each_probe():
    async def body(h: Harness):
        h.board.down = BoardDown("connection refused")
        h.add(*(item(f"p{n}", 0, offset=n) for n in range(3)))
        await h.clock.run(lambda: all(f"p{n}" in h.outcomes.latest for n in range(3)), 10_000)
        first = h.state("p0")
        assert first.status == DeliveryStatus.PAUSED
        assert first.next_attempt_at == h.destination.circuit.next_probe_at
        await h.clock.run(lambda: h.destination.circuit.next_probe_at != first.next_attempt_at, 10_000)
        circuit = h.destination.circuit
        await h.clock.run(lambda: h.state("p0").next_attempt_at == circuit.next_probe_at, 10_000)
        assert h.state("p0").next_attempt_at > first.next_attempt_at
        assert h.state("p0").status == DeliveryStatus.PAUSED and h.state("p0").attempts == 0
        h.board.down = None
        await h.settle(3, limit_ms=120_000)

    scenario(body)


def test_a_submitted_version_shows_when_it_is_sent_again_unless_its_task_ends():
    async def body(h: Harness):
        h.board.task_delay_ms = 5_000
        h.add(item("a", 0))
        await h.clock.run(lambda: "a" in h.outcomes.latest)
        submitted = h.state("a")
        assert submitted.status == DeliveryStatus.SUBMITTED
        assert submitted.next_attempt_at == submitted.submitted_at + 600_000
        await h.settle(1)

    scenario(body, confirms=True)


def test_a_probe_taken_with_nothing_to_send_is_given_back():
    async def body(h: Harness):
        h.board.down = BoardDown("connection refused")
        h.add(item("a", 0))
        await h.clock.run(lambda: h.destination.circuit.state == CircuitState.OPEN, 10_000)
        h.clock.now = h.destination.circuit.next_probe_at
        assert h.destination.access.may_call(h.clock.now).probe
        h.destination.access.release(h.clock.now)
        assert h.destination.circuit.state == CircuitState.OPEN
        assert h.destination.access.may_call(h.clock.now).probe  # due at once, not after a longer wait
        h.destination.access.release(h.clock.now)
        h.board.down = None
        await h.settle(1, limit_ms=60_000)

    scenario(body)


def test_the_watchdog_counts_queued_postings_that_nothing_will_send():
    """What `stranded()` is for: a wake-up lost (here on purpose) leaves queued elements with
    no timer and no call in flight; the watchdog sees every one of them."""

    async def body(h: Harness):
        h.board.down = BoardDown("connection refused")
        h.add(*(item(f"p{n}", 0, offset=n) for n in range(4)))
        await h.clock.run(lambda: h.destination.circuit.state == CircuitState.OPEN, 10_000)
        await h.clock.run(lambda: len(h.destination.sending.batcher) == 4, 10_000)
        assert h.destination.stranded() == 0  # open: the dispatcher waits for its probe's timer
        h.destination.circuit.state = CircuitState.PROBING  # as if someone took the probe and vanished
        h.destination.sending.wake.set()
        await h.clock.run(lambda: h.destination.stranded() == 4, 1_000)

    scenario(body)
