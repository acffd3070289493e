"""The sequencer's clock: Kafka's time, as a lower bound carried by a monotonic clock."""

import pytest

from sequencer.clock import BrokerClock


class Monotonic:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


def test_it_knows_no_time_before_kafka_told_it_one():
    clock = BrokerClock(Monotonic())
    assert not clock.known
    with pytest.raises(LookupError):
        clock.now_millis()


def test_a_broker_time_is_carried_forward_by_the_monotonic_clock():
    monotonic = Monotonic()
    clock = BrokerClock(monotonic, max_drift=0.0)
    clock.observe(1_000_000)
    monotonic.now += 2.5
    assert clock.now_millis() == 1_002_500


def test_the_freshest_bound_wins_and_an_older_one_changes_nothing():
    monotonic = Monotonic()
    clock = BrokerClock(monotonic, max_drift=0.0)
    clock.observe(1_000_000)
    monotonic.now += 1
    clock.observe(1_000_400)  # read a command appended 0.6 s ago: older news
    assert clock.now_millis() == 1_001_000
    clock.observe(1_001_300)  # acknowledged just now by a broker a little ahead
    assert clock.now_millis() == 1_001_300


def test_a_bound_carried_for_long_loses_the_drift_a_fast_monotonic_clock_could_add():
    monotonic = Monotonic()
    clock = BrokerClock(monotonic, max_drift=1e-3)
    clock.observe(1_000_000)
    monotonic.now += 100
    assert clock.now_millis() == 1_000_000 + 100_000 - 100  # never ahead of the broker
