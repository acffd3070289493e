"""Which partition a key lives in, as Java's default partitioner (murmur2) puts it.

librdkafka's `murmur2_random` partitioner, Kafka's Java producer and
`confluent_kafka.murmur2` agree for every non-empty key; the API uses this to find a
posting's partition.
"""

from __future__ import annotations

from confluent_kafka import murmur2


def partition_for(key: str | bytes, partitions: int) -> int:
    return int(murmur2(key.encode() if isinstance(key, str) else key, partitions))
