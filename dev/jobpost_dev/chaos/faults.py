"""The faults of the fault-injection run, each a function that breaks something and
returns once it has been put right again (or once its supervisor can)."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import KafkaException

from jobpost_dev import stack
from jobpost_dev.processes import component_pids, wait_until
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from schemas.topics import BOARDS


@dataclass
class Target:
    """What the faults act on: the cluster's nodes, the system's processes, the search server."""

    stack_settings: stack.StackSettings
    bootstrap: str
    postings_topic: str
    topic_prefix: str
    outage_s: float = 20.0


def _admin(target: Target):  # type: ignore[no-untyped-def]
    return KafkaClients(KafkaSettings(bootstrap_servers=target.bootstrap)).admin()


def _node_leading_most(target: Target) -> stack.KafkaServer:
    metadata = _admin(target).list_topics(target.postings_topic, timeout=10)
    leaders = Counter(p.leader for p in metadata.topics[target.postings_topic].partitions.values())
    node_id = leaders.most_common(1)[0][0]
    return next(n for n in stack.kafka_nodes(target.stack_settings) if n.node_id == node_id)


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


def kill_leading_broker(target: Target) -> str:
    """kill -9 the broker leading the most postings partitions; start it again after the
    outage; return once it is back in sync."""
    node = _node_leading_most(target)
    node.kill()
    time.sleep(target.outage_s)
    node.start()
    waited = _back_in_sync(target)
    return (
        f"kill -9 of broker {node.node_id}, back after {target.outage_s:.0f} s, in sync {waited:.0f} s later"
    )


def pause_broker(target: Target) -> str:
    """SIGSTOP a broker (a zombie), SIGCONT it after the outage."""
    node = _node_leading_most(target)
    pid = node.pid()
    assert pid is not None, f"broker {node.node_id} is not running"
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(target.outage_s)
    finally:
        os.kill(pid, signal.SIGCONT)
    waited = _back_in_sync(target)
    return f"SIGSTOP of broker {node.node_id} for {target.outage_s:.0f} s, in sync {waited:.0f} s later"


def _kill_one(target: Target, command: str) -> str:
    pids = component_pids(command, target.topic_prefix)
    assert pids, f"no `jobpost {command}` process is running"
    os.kill(pids[0], signal.SIGKILL)
    return f"kill -9 of one `jobpost {command}` (pid {pids[0]})"


def kill_api(target: Target) -> str:
    return _kill_one(target, "api")


def kill_consumers(target: Target) -> str:
    return "; ".join(_kill_one(target, f"consumer {board}") for board in BOARDS)


def kill_indexer(target: Target) -> str:
    return _kill_one(target, "indexer")


def stop_search(target: Target) -> str:
    # A loaded machine may take minutes to bring a node with many indices back.
    server = stack.ElasticsearchServer(target.stack_settings.model_copy(update={"start_timeout_s": 600.0}))
    server.stop()
    time.sleep(target.outage_s)
    server.start()
    return f"Elasticsearch stopped for {target.outage_s:.0f} s"


FAULTS: dict[str, Callable[[Target], str]] = {
    "broker-kill": kill_leading_broker,
    "broker-pause": pause_broker,
    "api-kill": kill_api,
    "consumer-kill": kill_consumers,
    "indexer-kill": kill_indexer,
    "search-stop": stop_search,
}
