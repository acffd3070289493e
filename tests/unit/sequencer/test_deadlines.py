"""A command's deadline is judged by the broker's clock alone: its append time plus its
budget, against the time the sequencer learnt from Kafka (sequencer.clock). Skewing the
API's and the sequencer's wall clocks by minutes changes no outcome."""

from __future__ import annotations

import dataclasses
import time

import pytest

from schemas.model import Action, Command, Outcome, Posting
from sequencer.clock import BrokerClock
from sequencer.domain import DEFAULT_BUDGET_MS, PartitionState, deadline_of

BUDGET_MS = 8_000
BROKER_START_MS = 1_800_000_000_000  # the brokers' clock when the scenario starts
FIVE_MINUTES_S = 300.0


class World:
    """One broker clock, and two hosts whose wall clocks are off from it by their skews.
    The sequencer's monotonic clock starts at an arbitrary value, as a host's does."""

    def __init__(self, api_skew_s: float, sequencer_skew_s: float, monkeypatch: pytest.MonkeyPatch) -> None:
        self.broker_s = BROKER_START_MS / 1000
        self.api_skew_s = api_skew_s
        self.monotonic_base = 12_345.678
        self.clock = BrokerClock(monotonic=self.monotonic)
        self.state = PartitionState()
        # The sequencer's host: its wall clock is off by its skew. Nothing may read it.
        skewed = lambda: self.broker_s + sequencer_skew_s  # noqa: E731
        monkeypatch.setattr(time, "time", skewed)
        monkeypatch.setattr(time, "time_ns", lambda: int(skewed() * 1e9))

    def monotonic(self) -> float:
        return self.monotonic_base + self.broker_s

    def restart(self) -> None:
        """The sequencer process starts again: a monotonic clock of another origin, no time
        learnt yet (its state stays: it is restored from the changelog)."""
        self.monotonic_base = -98_765.4
        self.clock = BrokerClock(monotonic=self.monotonic)

    def advance(self, seconds: float) -> None:
        self.broker_s += seconds

    def write(self, action: str, key: str) -> tuple[Command, int]:
        """The API writes a command now; the broker appends it now (LogAppendTime)."""
        command = Command(
            request_id=key,
            posting_id="p1",
            action=Action(action),
            received_at=int((self.broker_s + self.api_skew_s) * 1000),  # the API's own clock
            posting=Posting("Engineer", key),
            correlation_id=f"c-{key}",
            request_fingerprint=key,
            budget_ms=BUDGET_MS,
        )
        return command, int(self.broker_s * 1000)

    def sequence(self, command: Command, appended_ms: int) -> Outcome:
        """What the session does with a command it reads: the append time is a broker
        time it has now seen; it decides by the clock, against the command's deadline."""
        self.clock.observe(appended_ms)
        now = self.clock.now_millis()
        return self.state.decide(command, now, deadline_of(command, appended_ms)).result.outcome

    def probe(self) -> None:
        """A session's first act: a record acknowledged with the broker's time of now."""
        self.clock.observe(int(self.broker_s * 1000))


def scenario(world: World) -> list[tuple[str, Outcome]]:
    outcomes = []
    world.probe()
    create = world.write("CREATE", "create")
    world.advance(0.05)
    outcomes.append(("read at once", world.sequence(*create)))

    just_in_time = world.write("REPLACE", "in-time")
    world.advance(BUDGET_MS / 1000 - 0.1)
    outcomes.append(("read 0.1 s before its deadline", world.sequence(*just_in_time)))

    late = world.write("REPLACE", "late")
    world.advance(BUDGET_MS / 1000 + 0.1)
    outcomes.append(("read 0.1 s after its deadline", world.sequence(*late)))
    world.advance(0.01)
    retried = world.write("REPLACE", "late")  # the client saw 503 and sent it again
    outcomes.append(("its retry, read at once", world.sequence(*retried)))

    # The sequencer is down for a minute; a new process (it knows no time yet) comes back to
    # the backlog and judges it by the time now (its probe), not by the newest command read.
    backlog = []
    for n in range(6):
        world.advance(10 if n else 0)
        backlog.append(world.write("REPLACE", f"backlog-{n}"))
    world.advance(5)
    world.restart()
    world.probe()
    outcomes += [
        (f"backlog, appended {55 - 10 * n} s ago", world.sequence(*c)) for n, c in enumerate(backlog)
    ]
    return outcomes


EXPECTED = [
    ("read at once", Outcome.ACCEPTED),
    ("read 0.1 s before its deadline", Outcome.ACCEPTED),
    ("read 0.1 s after its deadline", Outcome.EXPIRED),
    ("its retry, read at once", Outcome.ACCEPTED),
    ("backlog, appended 55 s ago", Outcome.EXPIRED),
    ("backlog, appended 45 s ago", Outcome.EXPIRED),
    ("backlog, appended 35 s ago", Outcome.EXPIRED),
    ("backlog, appended 25 s ago", Outcome.EXPIRED),
    ("backlog, appended 15 s ago", Outcome.EXPIRED),
    ("backlog, appended 5 s ago", Outcome.ACCEPTED),
]


@pytest.mark.parametrize(
    ("api_skew_s", "sequencer_skew_s"),
    [
        (0.0, 0.0),
        (0.0, FIVE_MINUTES_S),  # the sequencer's host five minutes ahead of the API's
        (0.0, -FIVE_MINUTES_S),  # and five minutes behind
        (FIVE_MINUTES_S, -FIVE_MINUTES_S),
        (-FIVE_MINUTES_S, FIVE_MINUTES_S),
    ],
)
def test_clock_skew_between_the_hosts_changes_no_outcome(api_skew_s, sequencer_skew_s, monkeypatch):
    assert scenario(World(api_skew_s, sequencer_skew_s, monkeypatch)) == EXPECTED


def test_an_expired_command_changes_nothing_and_leaves_no_key(monkeypatch):
    world = World(0.0, 0.0, monkeypatch)
    world.probe()
    world.sequence(*world.write("CREATE", "create"))
    late = world.write("REPLACE", "late")
    world.advance(BUDGET_MS / 1000 + 1)

    decision = world.state.decide(late[0], world.clock.now_millis(), deadline_of(*late))

    assert decision.updates == []
    assert decision.result.outcome == Outcome.EXPIRED
    posting = world.state.get("p1")
    assert posting is not None
    assert (posting.version, list(posting.keys)) == (0, ["create"])


def test_a_repeat_of_an_applied_request_is_answered_as_it_was_even_past_its_deadline(monkeypatch):
    world = World(0.0, 0.0, monkeypatch)
    world.probe()
    world.sequence(*world.write("CREATE", "create"))
    assert world.sequence(*world.write("REPLACE", "once")) == Outcome.ACCEPTED
    repeat = world.write("REPLACE", "once")
    world.advance(BUDGET_MS / 1000 + 1)

    decision = world.state.decide(repeat[0], world.clock.now_millis(), deadline_of(*repeat))

    assert (decision.result.outcome, decision.result.version, decision.updates) == (Outcome.ACCEPTED, 1, [])


def test_without_its_probe_a_new_member_would_apply_a_backlog_long_past_its_deadline(monkeypatch):
    """Why a session asks Kafka the time first: the newest command it read is no clock."""
    world = World(0.0, 0.0, monkeypatch)
    world.sequence(*world.write("CREATE", "create"))  # a member learns the time from what it reads
    old = world.write("REPLACE", "old")
    world.advance(60)
    world.restart()

    assert world.sequence(*old) == Outcome.ACCEPTED  # judged by its own append time: a minute late


def test_a_command_without_a_budget_has_the_one_its_release_waited():
    command = Command("r", "p1", Action.DELETE, received_at=0)
    assert deadline_of(command, 1_000) == 1_000 + DEFAULT_BUDGET_MS
    assert deadline_of(dataclasses.replace(command, budget_ms=250), 1_000) == 1_250
