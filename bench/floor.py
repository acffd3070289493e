"""The floor under a write's latency that Kafka itself sets on this machine: the sequencer's
round trip with nothing of jobpost in it. A client produces a small command at a fixed rate
(100/s, as issue 26's open loop); one loop reads the commands (read_committed) and, per poll,
opens a transaction, produces three records (a version, a changelog record, the reply),
puts the command offsets in the transaction and commits, as `sequencer.session` does; a
third reads the replies. Printed: the command-to-reply latency, with the offsets in the
transaction and without them (what exactly-once costs in round trips), of it the
transaction alone (begin to committed: what a sequencer handed its commands in memory,
with no command or reply topic between, would still wait for), and the requests the
transactional producer sent per transaction (librdkafka's statistics), the broker's only
company being these three clients.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from confluent_kafka import TopicPartition

from bench.common import delete_prefix, local_kafka, percentiles
from bench.system import SERVERS, cpu_seconds, java_pids
from jobpost_dev.processes import wait_until
from runtime.kafka import KafkaSettings, poll_batch
from runtime.kafka_clients import KafkaClients
from schemas.topics import Topics
from sequencer.config import SequencerSettings
from sequencer.session import member_clients

RATE = 100.0
SECONDS = 20.0
VALUE = b"x" * 500  # about a PostingUpdate's size


@dataclass
class Floor:
    latencies: list[float] = field(default_factory=list)  # command produced -> reply read, s
    transactions: list[float] = field(default_factory=list)  # begin -> committed, s
    broker_cpu_s: float = 0.0
    requests: Counter[str] = field(default_factory=Counter)  # by Kafka API, over the load


class RequestCount:
    """The requests a client has sent, by Kafka API, from its statistics (`stats_cb`)."""

    def __init__(self) -> None:
        self.sent: Counter[str] = Counter()
        self.reports = 0

    def __call__(self, stats_json: str) -> None:
        sent: Counter[str] = Counter()
        for broker in json.loads(stats_json)["brokers"].values():
            sent.update(broker.get("req", {}))
        self.sent = sent
        self.reports += 1

    def now(self) -> Counter[str]:
        """The counts as of a report made after this call: the second one from now (the
        first may have been made before it, waiting for the client's poll)."""
        seen = self.reports
        wait_until(lambda: self.reports >= seen + 2, 10, "the producer's statistics")
        return self.sent


def round_trips(kafka: KafkaSettings, with_offsets: bool, rate: float, seconds: float) -> Floor:
    """The latencies, the requests and the broker's CPU over a load at `rate`."""
    topics = Topics(kafka.topic_prefix)
    sequencer = SequencerSettings(kafka=kafka, instance_id=f"floor{uuid.uuid4().hex[:6]}")
    requests = RequestCount()
    member, producer = member_clients(sequencer, on_statistics=requests)
    clients = KafkaClients(kafka)
    replies = clients.reader(f"{kafka.topic_prefix}-floor-replies-{uuid.uuid4().hex[:6]}")
    client = clients.producer(linger_ms=1)
    sent: dict[bytes, float] = {}
    floor = Floor()
    latencies, transactions = floor.latencies, floor.transactions
    stop = threading.Event()

    def sequence() -> None:
        producer.init_transactions(30)
        member.subscribe([topics.commands])
        while not stop.is_set():
            messages = [m for m in poll_batch(member, 500, 0.1) if m.error() is None]
            producer.poll(0)  # its statistics
            if not messages:
                continue
            began = time.perf_counter()
            producer.begin_transaction()
            for m in messages:
                partition = m.partition()
                producer.produce(topics.postings, key=m.key(), value=VALUE, partition=partition)
                producer.produce(topics.sequencer_state, key=m.key(), value=VALUE[:100], partition=partition)
                producer.produce(topics.replies, key=m.value(), value=b"ok")
            if with_offsets:
                offsets = [TopicPartition(topics.commands, m.partition(), m.offset() + 1) for m in messages]
                producer.send_offsets_to_transaction(offsets, member.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
            transactions.append(time.perf_counter() - began)

    def read_replies() -> None:
        replies.subscribe([topics.replies])
        while not stop.is_set():
            for m in poll_batch(replies, 500, 0.1):
                if m.error() is None and m.key() in sent:
                    latencies.append(time.perf_counter() - sent.pop(m.key()))

    threads = [threading.Thread(target=t, daemon=True) for t in (sequence, read_replies)]
    for thread in threads:
        thread.start()

    # Until a command goes round (both groups joined, the transaction initialised).
    def warmed_up() -> bool:
        sent[b"warm-up"] = time.perf_counter()
        client.produce(topics.commands, key="warm-up", value=b"warm-up")
        client.flush(5)
        time.sleep(0.2)
        return bool(latencies)

    wait_until(warmed_up, 60, "a first round trip")
    sent.clear()  # a warm-up command sent again and answered late is no sample
    latencies.clear()
    transactions.clear()
    requested = requests.now()
    broker = {"kafka": java_pids(SERVERS["kafka"])}
    before = cpu_seconds(broker)["kafka"]
    started = time.perf_counter()
    for n in range(int(rate * seconds)):
        time.sleep(max(0.0, started + n / rate - time.perf_counter()))
        correlation = uuid.uuid4().hex.encode()
        sent[correlation] = time.perf_counter()
        client.produce(topics.commands, key=f"p{n % 1000}", value=correlation)
        client.poll(0)
    client.flush(10)
    given_up_at = time.monotonic() + 10  # a reply never read is counted as unanswered, not waited for

    def answered_or_given_up() -> bool:
        return not sent or time.monotonic() > given_up_at

    wait_until(answered_or_given_up, 20, "the replies")
    floor.broker_cpu_s = cpu_seconds(broker)["kafka"] - before
    floor.requests = requests.now() - requested
    stop.set()
    for thread in threads:
        thread.join(10)
    for closing in (member, replies):
        closing.close()
    return floor


def main(rate: float = RATE, seconds: float = SECONDS) -> None:
    for with_offsets in (True, False):
        kafka = local_kafka()  # its topics made
        try:
            floor = round_trips(kafka, with_offsets, rate, seconds)
        finally:
            delete_prefix(kafka)
        how = "offsets in the transaction" if with_offsets else "no offsets in the transaction"
        answered, committed = len(floor.latencies), max(len(floor.transactions), 1)
        cpu_ms = 1000 * floor.broker_cpu_s / max(answered, 1)
        requests = ", ".join(f"{api} {n / committed:.2f}" for api, n in sorted(floor.requests.items()))
        print(
            f"Kafka's floor, command -> transaction -> reply at {rate:g}/s, {how}: "
            f"{answered} of {int(rate * seconds)} answered, {percentiles(floor.latencies)}, "
            f"the broker's CPU {cpu_ms:.2f} ms per command; of it the transaction alone "
            f"(begin to committed, {len(floor.transactions)}): {percentiles(floor.transactions)}; "
            f"requests per transaction: {requests}",
            flush=True,
        )
