"""Every Kafka client of every deployable is made here, from one `KafkaSettings`, by what it
is for: a group member, a reader that assigns its partitions by hand, a probe that asks
where partitions end, a producer, a transactional producer, an admin client. What the
connection needs (bootstrap servers, security, passed-through librdkafka properties) comes
from `KafkaSettings.client_config()`, so a new security property or timeout is set in one
place and every client gets it; what the design fixes for a kind of client is set below
and cannot be overridden by a setting (`kafka_properties.OWNED`):

- every producer is idempotent, waits for `acks=all` and partitions like Java
  (`partitioner=murmur2_random`), so commands and postings co-partition the same way Java
  tools and Kafka Connect would;
- every consumer reads committed records only (`isolation.level=read_committed`; a probe
  may ask for the high watermark instead) and stores and commits offsets only after the
  work is done (auto commit and auto offset store off);
- every group member is cooperative-sticky (eager `range` only where asked, for the
  sequencer's static members).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient

from runtime.kafka import KafkaSettings

Statistics = Callable[[str], None]  # librdkafka's statistics, a JSON document

# A broker that stalls (SIGSTOP, a long pause) keeps its connections open: a request sent to
# it waits for librdkafka's socket timeout (60 s by default) before the client asks where
# the partition's new leader is, long after Kafka moved it (broker.session.timeout.ms). The
# clients on the write path (the API's command producer and reply reader, the sequencer)
# give up on a silent broker after this long instead.
_WRITE_PATH_SOCKET_TIMEOUT_MS = 5_000

# A reader of a busy topic no answer waits on (the board consumers, the indexer, the API's
# delivery views, the webhooks dispatcher) lets the broker gather up to 500 ms of records
# (Kafka's own fetch wait) into one fetch instead of answering every append on its own
# (fetch.min.bytes 1): at 100 updates/s each such reader then wakes twice a second rather than
# a hundred times, and its batch (a board call, a search bulk, a store write) carries what
# arrived meanwhile. A full fetch is answered at once. An idle reader's fetches are the
# broker's work at rest: each waits out its wait and asks again (nine such readers made 36 of
# the 44 fetches a second the whole system asked at 250 ms; at 100 ms the broker spent
# 0.05-0.07 cores on them; `python -m bench idle`).
_GATHERED_FETCH = {"fetch.wait.max.ms": 500, "fetch.min.bytes": 256 * 1024}

# A follower answered at once (fetch.min.bytes 1: the first record ends the broker's wait)
# that no answer waits on at the end of a partition (the API's views a read waits on by
# position, a board's redrive requests, the webhook endpoints) waits up to 2 s in an idle
# fetch rather than Kafka's 500 ms: a record still comes at once, and at rest it asks the
# broker half a time a second instead of twice. The cost: a partition that holds nothing is
# reported at its end (`ends`) only after one such wait.
_PATIENT = {"fetch.wait.max.ms": 2000}

# At the end of a partition a fetch waits fetch.wait.max.ms (500 ms by default) for records
# before the end is reported: a reader that stops there (a replay, every restore of a
# sequencer partition) paid it each time.
_PROMPT_END = {"fetch.wait.max.ms": 20}

# librdkafka prefetches up to 100,000 records per partition and 64 MiB by default, which a
# long-lived follower (the API's views) would hold besides what it is writing.
_SMALL_PREFETCH = {"queued.min.messages": 1000, "queued.max.messages.kbytes": 16384}

# A producer that writes a bulk load (a benchmark's seed): large batches, a deep queue.
_BULK = {
    "linger.ms": 100,
    "batch.size": 1_000_000,
    "queue.buffering.max.messages": 500_000,
    "queue.buffering.max.kbytes": 512 * 1024,
}


class KafkaClients:
    def __init__(self, settings: KafkaSettings) -> None:
        self.settings = settings

    def admin(self, *, on_error: Callable[[KafkaError], None] | None = None) -> AdminClient:
        """An admin client; `on_error` hears the connection's errors (a TLS handshake or a
        SASL exchange that failed) when `poll` serves them."""
        config = self.settings.client_config()
        if on_error is not None:
            config["error_cb"] = on_error
        return AdminClient(config)

    def producer(
        self,
        *,
        linger_ms: int = 2,
        give_up_after_ms: int | None = None,
        write_path: bool = False,
        bulk: bool = False,
        on_statistics: Statistics | None = None,
    ) -> Producer:
        """An idempotent producer. `give_up_after_ms`: a record not acknowledged by then is
        refused (`message.timeout.ms`); `write_path`: a silent broker is given up on within
        seconds; `bulk`: large batches for a load."""
        config = self._producing(linger_ms, on_statistics)
        if give_up_after_ms is not None:
            config["message.timeout.ms"] = give_up_after_ms
        if write_path:
            config["socket.timeout.ms"] = _WRITE_PATH_SOCKET_TIMEOUT_MS
        if bulk:
            config.update(_BULK)
        return Producer(config)

    def transactional(
        self, transactional_id: str, *, timeout_ms: int = 60_000, on_statistics: Statistics | None = None
    ) -> Producer:
        """A transactional producer under `transactional_id` (a new one fences every older
        producer of that id); a transaction left open is aborted by the broker after
        `timeout_ms`, which also bounds how long a record may wait for a broker that stopped
        answering (librdkafka caps message.timeout.ms at it). It is on the write path."""
        config = self._producing(0, on_statistics)
        config.update(
            {
                "transactional.id": transactional_id,
                "transaction.timeout.ms": timeout_ms,
                # A transaction begun right after a commit meets CONCURRENT_TRANSACTIONS
                # until the broker has written the markers; retrying after the default
                # 100 ms (growing to 1 s) made every transaction take ~90 ms. Measured on a
                # bare transactional loop: 70 ms -> 9 ms (5 ms) -> 6.5 ms (1 ms, at most 5 ms).
                "retry.backoff.ms": 1,
                "retry.backoff.max.ms": 5,
                # librdkafka wants it no longer than the transaction timeout.
                "socket.timeout.ms": min(_WRITE_PATH_SOCKET_TIMEOUT_MS, timeout_ms),
            }
        )
        return Producer(config)

    def member(
        self,
        group: str,
        *,
        session_timeout_ms: int | None = None,
        instance_id: str | None = None,
        eager: bool = False,
        write_path: bool = False,
        gathered: bool = False,
        ends: bool = False,
    ) -> Consumer:
        """A member of consumer group `group`, which subscribes and is given partitions. It
        keeps its partitions across rebalances where it can (cooperative-sticky; `eager`:
        range, every partition revoked at each rebalance) and is declared dead after
        `session_timeout_ms` of silence (None: librdkafka's 45 s). With `instance_id` it is
        a static member (`group.instance.id`): a member that comes back with the same id
        within the session timeout takes its partitions back without a rebalance of the
        others; no two live members may share one. `gathered`: see `_GATHERED_FETCH`;
        `ends`: the end of each partition is reported as an event (as for a reader)."""
        config = self._consuming(group, write_path=write_path, gathered=gathered)
        config["partition.assignment.strategy"] = "range" if eager else "cooperative-sticky"
        if session_timeout_ms is not None:
            config["session.timeout.ms"] = session_timeout_ms
            config["heartbeat.interval.ms"] = max(1000, session_timeout_ms // 5)
        if instance_id is not None:
            config["group.instance.id"] = instance_id
        if ends:
            config["enable.partition.eof"] = True
        return Consumer(config)

    def reader(
        self,
        group: str,
        *,
        ends: bool = False,
        prompt_end: bool = False,
        small_prefetch: bool = False,
        write_path: bool = False,
        gathered: bool = False,
        patient: bool = False,
    ) -> Consumer:
        """A consumer that is assigned its partitions by hand (no group membership; `group`
        names it, and is where it commits, if it does). `ends`: the end of each partition is
        reported as an event; `prompt_end`: reported at once, not after a fetch's wait (a
        reader that stops there); `small_prefetch`: a long-lived follower holds little
        ahead; `write_path`, `gathered`: as for a producer and a member; `patient`: see
        `_PATIENT` (not with `gathered`, `prompt_end` or `write_path`)."""
        if patient and (gathered or prompt_end or write_path):
            raise ValueError("a patient reader is answered at once and waits long when idle")
        config = self._consuming(group, write_path=write_path, gathered=gathered)
        if patient:
            config.update(_PATIENT)
        if ends:
            config["enable.partition.eof"] = True
        if prompt_end:
            config.update(_PROMPT_END)
        if small_prefetch:
            config.update(_SMALL_PREFETCH)
        return Consumer(config)

    def probe(self, group: str, *, committed: bool = True) -> Consumer:
        """A consumer that only asks where partitions begin and end: the last stable offset
        (what a read_committed reader may see), or with `committed=False` the high
        watermark (the two differ while a transaction is open)."""
        config = self._consuming(group)
        if not committed:
            config["isolation.level"] = "read_uncommitted"
        return Consumer(config)

    def _producing(self, linger_ms: int, on_statistics: Statistics | None) -> dict[str, Any]:
        config = {
            **self.settings.client_config(),
            "partitioner": "murmur2_random",
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": linger_ms,
        }
        if on_statistics is not None:
            config.update({"statistics.interval.ms": 200, "stats_cb": on_statistics})
        return config

    def _consuming(self, group: str, *, write_path: bool = False, gathered: bool = False) -> dict[str, Any]:
        config = {
            **self.settings.client_config(),
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
        }
        if write_path:
            config["socket.timeout.ms"] = _WRITE_PATH_SOCKET_TIMEOUT_MS
        if gathered:
            config.update(_GATHERED_FETCH)
        return config
