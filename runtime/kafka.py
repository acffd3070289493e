"""Kafka connection settings shared by every deployable, as one typed object.

The clients themselves are made by `runtime.kafka_clients`, from `client_config()`; here are
the settings and the helpers every reader shares (a poll that does not wait for a full
batch, where a partition ends, which events are records, the lag metric).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from prometheus_client import Gauge
from pydantic import Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from runtime import kafka_properties
from runtime.settings_file import Settings
from schemas.topics import DAY_MS


class KafkaSettings(Settings):
    """Environment prefix `JOBPOST_KAFKA_` (e.g. `JOBPOST_KAFKA_BOOTSTRAP_SERVERS`).

    Any librdkafka property passes through, from `JOBPOST_KAFKA_CONFIG__<PROPERTY>`
    variables or the properties file `JOBPOST_KAFKA_CONFIG_FILE` (the variables win); see
    `runtime.kafka_properties` for how a name is written. Every client of every component
    (producers, consumers, admin clients) is made from `client_config()` by
    `runtime.kafka_clients.KafkaClients`, so all get them.
    Passwords, secrets and private keys are SecretStr: never in a repr, a log or an error.
    """

    model_config = SettingsConfigDict(
        env_prefix="JOBPOST_KAFKA_",
        env_nested_delimiter="__",
        env_nested_max_split=1,  # CONFIG__LOG__LEVEL is {"log__level": ...}, not nested twice
        hide_input_in_errors=True,  # a refused setting's error never quotes a password
    )

    bootstrap_servers: str = "127.0.0.1:9092"
    """the brokers, host:port comma-separated"""
    security_protocol: str = "PLAINTEXT"
    """librdkafka's security.protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)"""
    sasl_mechanism: str | None = None
    """librdkafka's sasl.mechanism, e.g. SCRAM-SHA-512"""
    sasl_username: str | None = None
    """librdkafka's sasl.username"""
    sasl_password: SecretStr | None = None
    """librdkafka's sasl.password (a secret)"""
    config_file: Path | None = Field(
        default=None, description="librdkafka properties, Java .properties format"
    )
    config: dict[str, SecretStr | str] = Field(
        default_factory=dict, description="librdkafka properties by name (JOBPOST_KAFKA_CONFIG__<NAME>)"
    )
    topic_prefix: str = Field(default="jobpost", description="topics are <prefix>.postings etc.")
    partitions: int = Field(default=6, ge=1)
    """partitions of every topic (commands and postings must match)"""
    # A cluster's numbers; the local stack (make run, the tests, compose) sets 1 and 1.
    replication_factor: int = Field(default=3, ge=1)
    """what topics are created with and checked for (at least); the local stack says 1"""
    min_insync_replicas: int = Field(default=2, ge=1)
    """min.insync.replicas of the topics (at least); the local stack says 1"""
    start_timeout_s: float = Field(default=30.0, gt=0, description="the connection check at start")
    erasure_day_ms: int = Field(default=DAY_MS, ge=1000)
    """the day in which the topic times that bound erasure are counted (a deleted posting's
    text is gone from every topic within 31 of them); tests shorten it, a deployment keeps
    86400000"""

    @model_validator(mode="after")
    def _pass_through(self) -> KafkaSettings:
        given = kafka_properties.read_properties(self.config_file) if self.config_file else {}
        properties = kafka_properties.normalized({**given, **self.config})
        refused = [
            f"{name} is not a setting to pass through: {why}"
            for name, why in kafka_properties.OWNED.items()
            if name in properties
        ]
        if refused:
            raise ValueError("; ".join(refused))
        for name, field in kafka_properties.ALIASES.items():
            if name not in properties:
                continue
            value = properties.pop(name)
            current = getattr(self, field)
            current = current.get_secret_value() if isinstance(current, SecretStr) else current
            if field in self.model_fields_set and current != kafka_properties.plain(value):
                raise ValueError(f"{name} is set twice, differently: as a property and as {field}")
            setattr(self, field, value if field == "sasl_password" else kafka_properties.plain(value))
        self.config = properties
        if self.min_insync_replicas > self.replication_factor:
            raise ValueError(
                f"min_insync_replicas {self.min_insync_replicas} exceeds replication_factor"
                f" {self.replication_factor}: every write would be refused"
            )
        return self

    def client_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": self.security_protocol,
            # Small request/response exchanges (transactions, replies) otherwise meet
            # Nagle + delayed ACK and wait ~40 ms each.
            "socket.nagle.disable": True,
        }
        if self.sasl_mechanism:
            config["sasl.mechanism"] = self.sasl_mechanism
        if self.sasl_username is not None:
            config["sasl.username"] = self.sasl_username
        if self.sasl_password is not None:
            config["sasl.password"] = self.sasl_password.get_secret_value()
        config.update({name: kafka_properties.plain(value) for name, value in self.config.items()})
        return config

    def environment(self) -> dict[str, str]:
        """These settings as the variables a child process reads them from (secrets included:
        a child needs them)."""
        env = {
            "JOBPOST_KAFKA_BOOTSTRAP_SERVERS": self.bootstrap_servers,
            "JOBPOST_KAFKA_SECURITY_PROTOCOL": self.security_protocol,
            "JOBPOST_KAFKA_TOPIC_PREFIX": self.topic_prefix,
            "JOBPOST_KAFKA_PARTITIONS": str(self.partitions),
            "JOBPOST_KAFKA_REPLICATION_FACTOR": str(self.replication_factor),
            "JOBPOST_KAFKA_MIN_INSYNC_REPLICAS": str(self.min_insync_replicas),
            "JOBPOST_KAFKA_START_TIMEOUT_S": str(self.start_timeout_s),
            "JOBPOST_KAFKA_ERASURE_DAY_MS": str(self.erasure_day_ms),
        }
        for field, variable in (("sasl_mechanism", "SASL_MECHANISM"), ("sasl_username", "SASL_USERNAME")):
            if getattr(self, field):
                env[f"JOBPOST_KAFKA_{variable}"] = getattr(self, field)
        if self.sasl_password:
            env["JOBPOST_KAFKA_SASL_PASSWORD"] = self.sasl_password.get_secret_value()
        for name, value in self.config.items():
            env[f"JOBPOST_KAFKA_CONFIG__{kafka_properties.environment_key(name)}"] = kafka_properties.plain(
                value
            )
        return env


def poll_batch(consumer: Consumer, max_messages: int, timeout: float) -> list[Message]:
    """What is ready now, up to `max_messages`, waiting at most `timeout` for the first.

    `Consumer.consume(n, timeout)` waits until it has n messages or the timeout passes,
    which would add the whole timeout to every record's latency at low load.
    """
    first = consumer.poll(timeout)
    if first is None:
        return []
    return (
        [first, *consumer.consume(num_messages=max_messages - 1, timeout=0)] if max_messages > 1 else [first]
    )


# How long a polling thread with nothing to do waits in one poll (issue 40: a system at rest).
# A poll returns as soon as a record or a delivery report arrives, so the wait delays none of
# them; it delays only what the thread does between polls (a stop, a command queued for it)
# by at most this long, and an idle thread wakes twice a second rather than ten or twenty
# times.
IDLE_POLL_S = 0.5


class PollWait:
    """The wait of a polling thread's next poll: `busy_s` while work comes, doubling with each
    poll that brought none, up to `idle_s`."""

    def __init__(self, busy_s: float, idle_s: float = IDLE_POLL_S) -> None:
        self.busy_s, self.idle_s = busy_s, idle_s
        self.current = busy_s

    def after(self, busy: bool) -> float:
        """The next wait, after a poll that brought work (`busy`) or none."""
        self.current = self.busy_s if busy else min(self.current * 2, self.idle_s)
        return self.current


def end_offset(consumer: Consumer, topic: str, partition: int, timeout: float = 10.0) -> int:
    """Where the partition ends for this consumer, asked of the broker now (not cached): the
    last stable offset for a read_committed consumer, the high watermark otherwise."""
    _, end = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout, cached=False)
    return int(end)


# Error events a consumer reports while it finds the group's coordinator again by itself,
# unmarked as retriable: a broker that left took the coordinator with it. `make chaos` saw
# NOT_COORDINATOR ("Failed to fetch committed offsets") end both Indeed consumers at once.
_COORDINATOR_MOVING = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
}


def is_record(message: Message) -> bool:
    """True for a record; False for an event to pass over (end of a partition, an error the
    client recovers from by itself, a coordinator on the move); raises KafkaException for an
    error that must end the reader's session."""
    error = message.error()
    if error is None:
        return True
    if error.code() == KafkaError._PARTITION_EOF or error.retriable():
        return False
    if error.code() in _COORDINATOR_MOVING and not error.fatal():
        return False
    raise KafkaException(error)


def coordinates(message: Message) -> tuple[str, int, int]:
    """(topic, partition, offset) of a record or an end-of-partition event. The client types
    each one Optional because other events carry none, so check `is_record()` (or the EOF
    code) first."""
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    if topic is None or partition is None or offset is None:
        raise ValueError(f"a Kafka event without topic, partition and offset: {message.error()}")
    return topic, partition, offset


CONSUMER_LAG = Gauge(
    "jobpost_consumer_lag", "Records not yet committed, by group and partition", ["group", "partition"]
)


_LAG_EVERY_S = 5.0
_lag_recorded_at: dict[str, float] = {}


def record_lag(consumer: Consumer, group: str, committed: list[TopicPartition]) -> None:
    """Publish end offset minus committed offset for each partition just committed, at
    most every few seconds per group. The end is the high watermark of the consumer's
    last fetch (cached): asking the broker would cost a request, and block a reader for
    as long as a stalled broker keeps it waiting (the sequencer's for 3 s in `make chaos`)."""
    now = time.monotonic()
    if now - _lag_recorded_at.get(group, -_LAG_EVERY_S) < _LAG_EVERY_S:
        return
    _lag_recorded_at[group] = now
    for tp in committed:
        try:
            _, high = consumer.get_watermark_offsets(tp, cached=True)
        except KafkaException:
            continue
        if high >= 0:  # negative: no fetch has told it yet
            CONSUMER_LAG.labels(group, str(tp.partition)).set(max(0, high - tp.offset))


def produce_waiting(
    producer: Producer,
    topic: str,
    key: str | bytes | None,
    value: bytes | None,
    partition: int,
    on_delivery: Callable[[KafkaError | None, Message], None] | None = None,
) -> None:
    """Produce one record, serving delivery reports while the producer's local queue is
    full (a bulk write: a restore's changelog, a benchmark's seed)."""
    while True:
        try:
            if on_delivery is None:
                producer.produce(topic, value, key, partition=partition)
            else:
                producer.produce(topic, value, key, partition=partition, on_delivery=on_delivery)
            return
        except BufferError:
            producer.poll(0.05)
