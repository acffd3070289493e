"""When the next call is due and what it carries."""

from consumers.destination.batcher import Batcher


def test_a_full_batch_is_due_at_once_a_partial_one_after_the_wait():
    batcher: Batcher[str] = Batcher(max_batch=3, wait_ms=5)
    assert batcher.due_in(0) is None
    batcher.push("a", 100)
    assert batcher.due_in(100) == 5
    batcher.push("b", 102)
    assert batcher.due_in(103) == 2
    batcher.push("c", 103)
    assert batcher.due_in(103) == 0


def test_first_come_first_served_at_most_max_batch():
    batcher: Batcher[str] = Batcher(max_batch=2, wait_ms=0)
    for n, name in enumerate("abcde"):
        batcher.push(name, n)
    assert [e for e, _ in batcher.take(10)] == ["a", "b"]
    assert [e for e, _ in batcher.take(1)] == ["c"]
    assert len(batcher) == 2


def test_a_withdrawn_element_is_never_sent():
    batcher: Batcher[str] = Batcher(max_batch=10, wait_ms=0)
    batcher.push("a", 0)
    batcher.push("b", 1)
    assert batcher.withdraw("a")
    assert not batcher.withdraw("a")
    assert [e for e, _ in batcher.take(10)] == ["b"]
    assert not batcher.withdraw("b")  # in a call already


def test_a_call_put_back_goes_first_with_its_own_queue_times():
    batcher: Batcher[str] = Batcher(max_batch=10, wait_ms=50)
    batcher.push("c", 30)
    batcher.push_front(["a", "b"], [10, 20])
    assert batcher.take(10) == [("a", 10), ("b", 20), ("c", 30)]
