"""A polling thread with nothing to do waits longer in each poll (issue 40: a system at rest),
and goes back to its short wait as soon as work comes."""

from runtime.kafka import PollWait


def test_an_idle_thread_waits_longer_each_empty_poll_up_to_its_idle_wait():
    wait = PollWait(0.05, 0.5)
    assert wait.current == 0.05
    assert [wait.after(False) for _ in range(6)] == [0.1, 0.2, 0.4, 0.5, 0.5, 0.5]


def test_work_brings_the_short_wait_back_at_once():
    wait = PollWait(0.05, 0.5)
    for _ in range(10):
        wait.after(False)
    assert wait.after(True) == 0.05
    assert wait.after(False) == 0.1
