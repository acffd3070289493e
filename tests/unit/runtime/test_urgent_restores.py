"""Restores an answer waits on go first: while one runs, a view reading its partitions from
the start waits between its batches; once none runs, it goes on at once."""

import threading
import time

from runtime.stores import Urgent


def test_a_waiter_goes_on_only_once_every_urgent_restore_ended():
    urgent = Urgent()
    assert urgent.wait_none(0)  # none running: no wait at all

    first, second = urgent.restoring(), urgent.restoring()
    first.__enter__()
    second.__enter__()
    assert not urgent.wait_none(0.05)
    first.__exit__(None, None, None)
    assert not urgent.wait_none(0.05)  # one still runs

    released = []
    waiter = threading.Thread(target=lambda: released.append(urgent.wait_none(5)))
    waiter.start()
    time.sleep(0.05)
    second.__exit__(None, None, None)
    waiter.join(5)
    assert released == [True]


def test_a_failed_urgent_restore_does_not_hold_others_back():
    urgent = Urgent()
    try:
        with urgent.restoring():
            raise TimeoutError("the changelog did not end")
    except TimeoutError:
        pass
    assert urgent.wait_none(0)
