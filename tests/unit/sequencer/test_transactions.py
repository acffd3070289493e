"""Which failures of a transactional call a session outlives: retried, aborted and read
again, or the end of the session."""

import pytest
from confluent_kafka import KafkaError, KafkaException

from sequencer.transactions import abortable, retrying

TIMED_OUT = KafkaError(KafkaError._TIMED_OUT, "coordinator moving", retriable=True)
ABORTABLE = KafkaError(KafkaError._MSG_TIMED_OUT, "leader gone", txn_requires_abort=True)
FENCED = KafkaError(KafkaError._FENCED, "a successor took the transactional id", fatal=True)


class Flaky:
    def __init__(self, *failures: KafkaError) -> None:
        self.failures = list(failures)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise KafkaException(self.failures.pop(0))
        return "committed"


def test_a_call_kafka_asks_to_repeat_is_repeated():
    call = Flaky(TIMED_OUT, TIMED_OUT)
    assert retrying(call, 5, "committing") == "committed"
    assert call.calls == 3


@pytest.mark.parametrize("failure", [ABORTABLE, FENCED], ids=["abortable", "fatal"])
def test_an_abortable_or_fatal_failure_is_not_repeated(failure):
    call = Flaky(failure)
    with pytest.raises(KafkaException):
        retrying(call, 5, "committing")
    assert call.calls == 1


def test_a_call_that_keeps_failing_gives_up_after_its_time():
    call = Flaky(*[TIMED_OUT] * 1000)
    with pytest.raises(KafkaException):
        retrying(call, 0.0, "committing")
    assert call.calls <= 2


def test_only_an_abortable_failure_of_a_producer_that_goes_on_is_rewound():
    assert abortable(KafkaException(ABORTABLE))
    assert not abortable(KafkaException(FENCED))
    assert not abortable(KafkaException(TIMED_OUT))  # its outcome is unknown: the session ends
    both = KafkaError(KafkaError._FENCED, "fenced", fatal=True, txn_requires_abort=True)
    assert not abortable(KafkaException(both))
