"""The fault run's report: reads each replica refused or failed within a fault's window
(which ends where the next fault begins), the replica an API kill took, and the exits put
down to the run or not."""

from jobpost_dev.chaos.exits import Exit
from jobpost_dev.chaos.faults import Victim
from jobpost_dev.chaos.load import Ledger, Read
from jobpost_dev.chaos.report import FaultWindow, Report
from jobpost_dev.chaos.verify import Verdict

A, B = "http://127.0.0.1:8000", "http://127.0.0.1:8001"


def report(reads: list[Read], exits: list[Exit] | None = None) -> Report:
    windows = [FaultWindow("broker-kill", 100.0, 120.0), FaultWindow("api-kill", 140.0, 140.1)]
    return Report(
        Ledger(reads=reads),
        Verdict(),
        windows,
        converged_after_s=1.0,
        load_ended=300.0,
        members={A: {}, B: {}},
        victims=[Victim("broker-kill", 11, "kafka-2"), Victim("api-kill", 22, "jobpost api", 8001)],
        exits=exits or [],
    )


def test_a_fault_window_ends_where_the_next_fault_begins():
    # The broker came back at 120 s; the API kill at 140 s is not the broker's.
    r = report([Read(141.0, B, "refused"), Read(110.0, A, "failed"), Read(119.0, A, "served")])
    broker, api = r.windows

    assert r.window_end(broker) == 140.0
    assert r.window_end(api) == 140.1 + 30
    assert [x.at for x in r.unanswered_reads(broker)] == [110.0]
    assert r.victim_replica(api) == B
    assert r.reads_lost_to_others(api) == 0  # only the killed replica refused
    assert r.reads_lost_to_others(broker) == 1


def test_exits_not_put_down_to_a_fault_are_named_with_their_last_error():
    expected = Exit("api-2", 22, "killed by SIGKILL", "", "api-kill")
    surprise = Exit("api-1", 33, "exit status 70", "the sequencer stopped", None)
    r = report([], [expected, surprise])

    assert r.unexpected_exits == [surprise]
    lines = r.lines()
    assert "processes that exited during the run: 2, of them not the run's doing: 1" in lines
    assert "  exited: api-1 (pid 33) exit status 70: the sequencer stopped — NOT the run's doing" in lines
    assert "  exited: api-2 (pid 22) killed by SIGKILL — the run's api-kill" in lines
