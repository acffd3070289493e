"""When a member publishes its status of the board (`consumers.status_publisher`): at once,
then each interval, at once when its circuit changes, and a tombstone when it stops. A fake
producer and a fake clock."""

from types import SimpleNamespace

from consumers.destination.access import BoardAccess
from consumers.destination.budget import RateBudget
from consumers.destination.circuit import Circuit
from consumers.status_publisher import StatusPublisher
from schemas import codec
from schemas.model import Destination
from schemas.topics import Topics
from tests.unit.consumers.fakes import FakeTokens


class Producer:
    def __init__(self) -> None:
        self.records: list[tuple[str, str, bytes | None]] = []
        self.polled = 0

    def produce(self, topic: str, key: str, value: bytes | None, **_: object) -> None:
        self.records.append((topic, key, value))

    def poll(self, _timeout: float) -> int:
        self.polled += 1
        return 0

    def flush(self, _timeout: float) -> int:
        return 0


class Clock:
    now = 1_000_000

    def now_ms(self) -> int:
        return self.now


def test_a_member_publishes_at_once_each_interval_at_a_circuit_change_and_a_tombstone_when_it_stops():
    access = BoardAccess(Destination.INDEED, FakeTokens(), RateBudget(None, None), Circuit())
    destination = SimpleNamespace(access=access, tasks=None, name=Destination.INDEED)
    producer, clock = Producer(), Clock()
    publisher = StatusPublisher(producer, Topics("t"), destination, clock, 5.0, member="m1")  # type: ignore[arg-type]

    publisher._publish_due()
    clock.now += 4_999
    publisher._publish_due()  # nothing changed within the interval
    assert [key for _, key, _ in producer.records] == ["indeed/m1"]
    access.board_down(clock.now, ConnectionRefusedError("refused"))
    access.board_down(clock.now, ConnectionRefusedError("refused"))
    publisher._publish_due()  # the circuit opened: at once
    clock.now += 5_000
    publisher._publish_due()  # the interval
    # While it runs, the member's delivery reports (its lanes' acknowledged states among them)
    # are served by the consume loop's thread alone, so they resume the lanes in offset order.
    assert producer.polled == 0
    publisher.leave()

    topics = {topic for topic, _, _ in producer.records}
    statuses = [codec.board_statuses().decode(value) for _, _, value in producer.records if value is not None]
    assert topics == {"t.board-status"}
    assert [(s.published_at, s.circuit) for s in statuses] == [
        (1_000_000, "closed"),
        (1_004_999, "open"),
        (1_009_999, "open"),
    ]
    assert producer.records[-1][1:] == ("indeed/m1", None)
