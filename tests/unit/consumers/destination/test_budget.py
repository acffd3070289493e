"""The rate budget with the time passed in: milliseconds, no waiting."""

from consumers.destination.budget import MARGIN_MS, WINDOW_MS, RateBudget

WINDOW = WINDOW_MS + MARGIN_MS


def drain(
    budget: RateBudget, wanted: int, batch: int, start: int = 0, until: int = 10 * 60_000
) -> list[tuple[int, int]]:
    """Send `wanted` records in calls of at most `batch` as fast as the budget admits:
    (when, records) of each call."""
    now, calls = start, []
    while wanted > 0 and now < until:
        admitted = min(budget.admits(now), batch, wanted)
        if admitted == 0:
            now += max(1, budget.wait_ms(now, 1))
            continue
        budget.spend(now, admitted)
        calls.append((now, admitted))
        wanted -= admitted
    return calls


def most_in_any_minute(calls: list[tuple[int, int]]) -> int:
    return max(sum(n for t, n in calls if start <= t < start + WINDOW_MS) for start, _ in calls)


def test_a_burst_never_puts_more_than_the_budget_in_any_minute():
    budget = RateBudget(600, None)
    calls = drain(budget, 1000, 100)
    assert sum(n for _, n in calls) == 1000
    assert most_in_any_minute(calls) == 600
    # The first 600 go at once; the rest once the first calls have left the window.
    assert calls[5] == (0, 100) and calls[6][0] == WINDOW + 1


def test_each_member_takes_its_share_of_the_groups_budget():
    budget = RateBudget(600, None)
    budget.set_share(2, 6)
    calls = drain(budget, 400, 100)
    assert most_in_any_minute(calls) == 200
    assert budget.allowed(budget.records) == 200


def test_the_requests_budget_counts_calls_whatever_they_carry():
    budget = RateBudget(None, 3)
    calls = drain(budget, 9, 1)
    assert [t for t, _ in calls[:4]] == [0, 0, 0, WINDOW + 1]
    assert budget.wait_ms(calls[-1][0], 0) > 0  # a call without records (a task poll) waits too


def test_a_429_pauses_for_its_retry_after_and_resumes_just_under_what_the_window_held():
    budget = RateBudget(None, None)  # Indeed publishes none
    for n in range(10):
        budget.spend(n * 100, 100)  # 1,000 records in a second
    pause = budget.throttled(1_000, retry_after_s=30)
    assert pause == 30_000
    assert budget.admits(29_999) == 0
    assert budget.records.ceiling == 1_000  # what the board took when it refused
    assert budget.allowed(budget.records) == 980  # just under it
    # Past the pause, the window must first drain to the lower rate.
    assert budget.wait_ms(1_000, 1) > 30_000
    assert budget.admits(budget.wait_ms(1_000, 1) + 1_000) > 0


def test_without_retry_after_the_pause_doubles_until_the_board_answers():
    budget = RateBudget(None, None)
    budget.spend(0, 1)
    assert [budget.throttled(t, None) for t in (0, 1, 2)] == [1_000, 2_000, 4_000]
    budget.answered(10)
    assert budget.throttled(20, None) == 1_000


def test_a_found_rate_rises_slowly_while_it_is_used_and_never_past_the_configured_one():
    budget = RateBudget(1_000, None)
    budget.spend(0, 500)
    budget.throttled(0, retry_after_s=0)
    low = budget.allowed(budget.records)
    assert low == 500  # a 429 at most halves the rate
    now, seen = 0, [low]
    while budget.records.found is not None and now < 3_600_000:
        now += 1_000
        if budget.wait_ms(now, 100) == 0:  # always more to send, as a backlog has
            budget.spend(now, min(100, budget.admits(now)))
            budget.answered(now)
        seen.append(budget.allowed(budget.records))
    assert seen == sorted(seen)  # it only rises
    assert budget.allowed(budget.records) == 1_000
    assert now > 60_000  # a step every few seconds, not at once


def test_an_idle_destination_does_not_raise_what_it_does_not_use():
    budget = RateBudget(None, None)
    budget.spend(0, 100)
    budget.throttled(0, retry_after_s=0)
    found = budget.allowed(budget.records)
    for t in range(10_000, 600_000, 10_000):
        budget.answered(t)  # answered, but it sends one record a minute at most
    assert budget.allowed(budget.records) == found


def test_calls_refused_with_a_429_are_not_what_the_board_took():
    budget = RateBudget(None, None)
    admitted = [budget.spend(0, 100) for _ in range(6)]  # 600 taken
    refused = [budget.spend(1, 100) for _ in range(20)]  # 20 calls in flight when the window filled
    for call in refused:
        budget.throttled(2, retry_after_s=58, call=call)
    assert budget.records.ceiling == 600  # the 600 taken, not the 2,600 asked for
    assert budget.requests.found is None  # the window filled its records, not its calls
    assert budget.allowed(budget.records) == 588
    assert admitted  # the admitted calls still count toward the window
    assert budget.admits(60_000) == 0 and budget.admits(61_002) > 0


def test_with_no_rate_known_a_burst_starts_slow_and_again_after_a_window_idle():
    budget = RateBudget(None, None)
    calls = drain(budget, 2_000, 10, until=10_000)
    assert sum(n for t, n in calls if t == 0) == 100  # 100 at once
    assert sum(n for t, n in calls if t <= 1_000) == 200  # doubling every second
    assert sum(n for t, n in calls if t <= 3_000) == 800
    later = drain(budget, 200, 10, start=calls[-1][0] + WINDOW)  # the window empty again
    assert sum(n for t, n in later if t == later[0][0]) == 100
