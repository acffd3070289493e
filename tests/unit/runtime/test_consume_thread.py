"""Waiting for a consume loop's producer without serving its delivery reports
(`runtime.consume_thread.landed`): the reports thread is their only server, so reports
resume their lanes in the order Kafka acknowledged them. A fake producer whose reports
another thread serves."""

import threading
import time

from runtime.consume_thread import landed


class Reported:
    """A producer holding `left` records; whoever serves its reports here is counted."""

    def __init__(self, left: int) -> None:
        self.left = left
        self.served_here = 0

    def __len__(self) -> int:
        return self.left

    def poll(self, _timeout: float) -> int:
        self.served_here += 1
        return 0

    def flush(self, _timeout: float) -> int:
        self.served_here += 1
        return self.left


def test_landed_waits_until_the_reports_thread_served_every_record_and_serves_none_itself():
    producer = Reported(3)

    def reports_thread() -> None:
        while producer.left:
            time.sleep(0.02)
            producer.left -= 1

    serving = threading.Thread(target=reports_thread)
    serving.start()
    assert landed(producer, 5.0) == 0  # type: ignore[arg-type]
    serving.join()
    assert producer.served_here == 0


def test_landed_gives_up_after_its_time_and_says_how_many_are_left():
    producer = Reported(2)
    started = time.monotonic()
    assert landed(producer, 0.1) == 2  # type: ignore[arg-type]
    assert 0.1 <= time.monotonic() - started < 2.0
    assert producer.served_here == 0
