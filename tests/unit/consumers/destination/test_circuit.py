"""The circuit with the time passed in: milliseconds, no waiting."""

from consumers.destination.circuit import Circuit, CircuitSettings, CircuitState, OpenedBecause


def test_board_down_twice_in_a_row_opens_it():
    circuit = Circuit()
    assert not circuit.board_down(0, "connection refused")
    assert circuit.board_down(10, "connection refused")
    assert circuit.state == CircuitState.OPEN
    assert circuit.opened_because == OpenedBecause.BOARD_DOWN
    assert circuit.reason == "connection refused"


def test_an_answer_between_board_downs_keeps_it_closed():
    circuit = Circuit()
    circuit.board_down(0, "reset")
    circuit.answered(1)
    assert not circuit.board_down(2, "reset")
    assert circuit.closed


def test_one_posting_failing_again_and_again_is_that_postings_problem():
    circuit = Circuit()
    for t in range(20):
        assert not circuit.call_failed(t, ["stuck"], "503")
    assert circuit.closed


def test_failures_of_many_postings_over_several_calls_open_it():
    circuit = Circuit(CircuitSettings(failing_postings_to_open=5))
    assert not circuit.call_failed(0, ["a", "b", "c", "d", "e", "f"], "timeout")  # one call: not yet
    assert circuit.call_failed(5, ["g"], "timeout")
    assert circuit.opened_because == OpenedBecause.CALL_FAILURES


def test_failures_older_than_the_window_do_not_count():
    circuit = Circuit(CircuitSettings(failing_postings_to_open=3, failure_window_s=1))
    circuit.call_failed(0, ["a", "b"], "503")
    assert not circuit.call_failed(2_000, ["c"], "503")
    assert circuit.closed


def test_an_answered_call_forgets_the_failures_before_it():
    circuit = Circuit(CircuitSettings(failing_postings_to_open=3))
    circuit.call_failed(0, ["a", "b"], "503")
    circuit.answered(1)
    assert not circuit.call_failed(2, ["c"], "503")


def test_open_lets_one_probe_through_after_a_wait_that_doubles():
    circuit = Circuit(CircuitSettings(probe_first_wait_s=1, probe_max_wait_s=3))
    circuit.board_down(0, "x")
    circuit.board_down(0, "x")
    assert circuit.permit(999).wait_ms == 1
    probe = circuit.permit(1_000)
    assert (probe.call, probe.probe) == (True, True)
    assert circuit.state == CircuitState.PROBING
    assert not circuit.permit(1_001).call  # one probe at a time
    circuit.board_down(1_500, "still down")
    assert circuit.state == CircuitState.OPEN
    assert circuit.permit(1_500).wait_ms == 2_000
    circuit.permit(3_500)
    circuit.call_failed(3_600, ["a"], "timeout")  # a probe that fails in any way
    assert circuit.permit(3_600).wait_ms == 3_000  # at most probe_max_wait_s


def test_an_answered_probe_closes_it():
    circuit = Circuit()
    circuit.board_down(0, "x")
    circuit.board_down(0, "x")
    circuit.permit(1_000)
    assert circuit.answered(1_200)
    assert circuit.closed and circuit.permit(1_201).call
    assert circuit.opened_because is None
