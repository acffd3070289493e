"""Which broker coordinates what the sequencer depends on: the transactions of its members'
transactional ids, and its consumer group.

A transactional id's coordinator leads the partition of `__transaction_state` that Kafka
derives from the id, and a group's coordinator the partition of `__consumer_offsets` derived
from the group id: `Utils.abs(id.hashCode()) % partitions` (TransactionStateManager,
GroupCoordinatorService), Java's String hash over UTF-16 code units. librdkafka's admin
client has no DescribeTransactions, so the transaction coordinator is worked out from that
and the partition's leader; `java_describes` asks the broker itself through Kafka's own
`TransactionsCommand` (slow: a JVM), once, to confirm it. The group's coordinator comes from
DescribeGroups.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient

TRANSACTION_STATE = "__transaction_state"
CONSUMER_OFFSETS = "__consumer_offsets"


def java_hash(text: str) -> int:
    """Java's `String.hashCode()`: 31·h + c over UTF-16 code units, in 32-bit arithmetic."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def kafka_abs(n: int) -> int:
    """Kafka's `Utils.abs`: |n|, and 0 for the one int that has no positive counterpart."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(key: str, partitions: int) -> int:
    return kafka_abs(java_hash(key)) % partitions


def leader_of(admin: AdminClient, topic: str, key: str) -> int:
    """The broker leading the partition of an internal topic that `key` maps to."""
    metadata = admin.list_topics(topic, timeout=10).topics[topic]
    partition = partition_for(key, len(metadata.partitions))
    return int(metadata.partitions[partition].leader)


def transaction_coordinator(admin: AdminClient, transactional_id: str) -> int:
    return leader_of(admin, TRANSACTION_STATE, transactional_id)


def group_coordinator(admin: AdminClient, group_id: str) -> int:
    """As the broker says (DescribeGroups)."""
    description = admin.describe_consumer_groups([group_id], request_timeout=10)[group_id].result(15)
    return int(description.coordinator.id)


@dataclass(frozen=True)
class Roles:
    """What one broker does for the sequencer, said in a fault's line."""

    node_id: int
    transactions_of: list[str]  # members whose transactional id it coordinates
    group: bool  # the sequencer group's coordinator
    postings_led: int  # partitions of postings it leads

    def said(self) -> str:
        roles = [f"leader of {self.postings_led} postings partitions"]
        if self.transactions_of:
            roles.append(f"transaction coordinator of {', '.join(self.transactions_of)}")
        if self.group:
            roles.append("the sequencer group's coordinator")
        return "; ".join(roles)


def java_describes(jars: Path, bootstrap: str, transactional_id: str) -> int | None:
    """The coordinator of a transactional id as Kafka's `TransactionsCommand describe`
    reports it (None when the tool does not answer)."""
    command = [
        "java",
        "-cp",
        f"{jars}/*",
        "org.apache.kafka.tools.TransactionsCommand",
        "--bootstrap-server",
        bootstrap,
        "describe",
        "--transactional-id",
        transactional_id,
    ]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [line.split() for line in out.splitlines() if line.strip()]
    if len(lines) < 2 or "CoordinatorId" not in lines[0]:
        return None
    value = lines[1][lines[0].index("CoordinatorId")]
    return int(value) if re.fullmatch(r"\d+", value) else None
