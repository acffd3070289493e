"""The faults of the fault-injection run, each a function that breaks something and
returns once it has been put right again (or once its supervisor can). Each process a fault
ends is noted as a victim, so the report can tell the exits the run caused from the others.

The broker kill takes the broker coordinating the sequencer members' transactions (the one
whose loss leaves a member's transaction waiting on a coordinator that is gone), the pause
the sequencer group's coordinator; each fault's line says what else its broker did."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaException

from jobpost_dev import stack
from jobpost_dev.chaos.coordinators import Roles, group_coordinator, transaction_coordinator
from jobpost_dev.processes import component_pids, wait_until
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from schemas.topics import BOARDS


@dataclass(frozen=True)
class Victim:
    """A process a fault ended (or stopped), so its exit is the run's doing."""

    fault: str
    pid: int
    name: str
    port: int | None = None  # an API replica's


@dataclass
class Target:
    """What the faults act on: the cluster's nodes, the system's processes, the search server."""

    stack_settings: stack.StackSettings
    bootstrap: str
    postings_topic: str
    topic_prefix: str
    outage_s: float = 20.0
    members: dict[str, str] = field(default_factory=dict)  # member name -> its transactional id
    sequencer_group: str = ""
    victims: list[Victim] = field(default_factory=list)


def _admin(target: Target):  # type: ignore[no-untyped-def]
    return KafkaClients(KafkaSettings(bootstrap_servers=target.bootstrap)).admin()


def roles(target: Target) -> dict[int, Roles]:
    """What each broker does for the sequencer right now."""
    admin = _admin(target)
    metadata = admin.list_topics(target.postings_topic, timeout=10)
    led = Counter(p.leader for p in metadata.topics[target.postings_topic].partitions.values())
    coordinating = {name: transaction_coordinator(admin, tid) for name, tid in target.members.items()}
    group = group_coordinator(admin, target.sequencer_group) if target.sequencer_group else -1
    return {
        node.node_id: Roles(
            node.node_id,
            sorted(name for name, node_id in coordinating.items() if node_id == node.node_id),
            group == node.node_id,
            led[node.node_id],
        )
        for node in stack.kafka_nodes(target.stack_settings)
    }


def _node(target: Target, node_id: int) -> stack.KafkaServer:
    return next(n for n in stack.kafka_nodes(target.stack_settings) if n.node_id == node_id)


def _coordinating_transactions(target: Target) -> tuple[stack.KafkaServer, Roles]:
    """The broker coordinating the most members' transactions (then leading the most
    postings partitions)."""
    found = max(roles(target).values(), key=lambda r: (len(r.transactions_of), r.postings_led))
    return _node(target, found.node_id), found


def _group_coordinator(target: Target) -> tuple[stack.KafkaServer, Roles]:
    found = roles(target)
    chosen = next((r for r in found.values() if r.group), None) or max(
        found.values(), key=lambda r: r.postings_led
    )
    return _node(target, chosen.node_id), chosen


def _under_replicated(target: Target) -> int:
    """Partitions of the cluster (internal topics too) whose in-sync replicas are not all
    their replicas; -1 while the cluster does not answer."""
    try:
        metadata = _admin(target).list_topics(timeout=10)
    except KafkaException:
        return -1
    return sum(
        len(p.isrs) < len(p.replicas) for topic in metadata.topics.values() for p in topic.partitions.values()
    )


def _back_in_sync(target: Target) -> float:
    """Wait until the broker just put right is back in every partition's in-sync replicas,
    as an operator waits before touching the next node: until then a second broker's fault
    leaves partitions with fewer in-sync replicas than `min.insync.replicas`, where no
    client can write (a run without this wait SIGSTOPped a node 1.3 s after the killed one
    came back: 24 s without a write, for Kafka's reason). Returns the seconds waited."""
    started = time.monotonic()
    wait_until(lambda: _under_replicated(target) == 0, 300, "every partition in sync again", interval=0.5)
    return time.monotonic() - started


def kill_coordinating_broker(target: Target) -> str:
    """kill -9 the broker coordinating the sequencer members' transactions; start it again
    after the outage; return once it is back in sync."""
    node, found = _coordinating_transactions(target)
    pid = node.pid()
    assert pid is not None, f"broker {node.node_id} is not running"
    target.victims.append(Victim("broker-kill", pid, f"kafka-{node.node_id}"))
    node.kill()
    time.sleep(target.outage_s)
    node.start()
    waited = _back_in_sync(target)
    return (
        f"kill -9 of broker {node.node_id} ({found.said()}), back after {target.outage_s:.0f} s, "
        f"in sync {waited:.0f} s later"
    )


def pause_broker(target: Target) -> str:
    """SIGSTOP the sequencer group's coordinator (a zombie), SIGCONT it after the outage."""
    node, found = _group_coordinator(target)
    pid = node.pid()
    assert pid is not None, f"broker {node.node_id} is not running"
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(target.outage_s)
    finally:
        os.kill(pid, signal.SIGCONT)
    waited = _back_in_sync(target)
    return (
        f"SIGSTOP of broker {node.node_id} ({found.said()}) for {target.outage_s:.0f} s, "
        f"in sync {waited:.0f} s later"
    )


def _kill_one(target: Target, command: str, fault: str) -> str:
    pids = component_pids(command, target.topic_prefix)
    assert pids, f"no `jobpost {command}` process is running"
    port = _api_port(pids[0]) if command == "api" else None
    target.victims.append(Victim(fault, pids[0], f"jobpost {command}", port))
    os.kill(pids[0], signal.SIGKILL)
    return f"kill -9 of one `jobpost {command}` (pid {pids[0]}{f', port {port}' if port else ''})"


def _api_port(pid: int) -> int | None:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    found = [v.split(b"=", 1)[1] for v in environ if v.startswith(b"JOBPOST_API_PORT=")]
    return int(found[0]) if found else None


def kill_api(target: Target) -> str:
    return _kill_one(target, "api", "api-kill")


def kill_consumers(target: Target) -> str:
    return "; ".join(_kill_one(target, f"consumer {board}", "consumer-kill") for board in BOARDS)


def kill_indexer(target: Target) -> str:
    return _kill_one(target, "indexer", "indexer-kill")


def stop_search(target: Target) -> str:
    # A loaded machine may take minutes to bring a node with many indices back.
    server = stack.ElasticsearchServer(target.stack_settings.model_copy(update={"start_timeout_s": 600.0}))
    pid = server.pid()
    if pid is not None:
        target.victims.append(Victim("search-stop", pid, "elasticsearch"))
    server.stop()
    time.sleep(target.outage_s)
    server.start()
    return f"Elasticsearch stopped for {target.outage_s:.0f} s"


FAULTS: dict[str, Callable[[Target], str]] = {
    "broker-kill": kill_coordinating_broker,
    "broker-pause": pause_broker,
    "api-kill": kill_api,
    "consumer-kill": kill_consumers,
    "indexer-kill": kill_indexer,
    "search-stop": stop_search,
}
