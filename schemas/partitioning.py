"""Which partition a key lives in, as Java's default partitioner (murmur2) puts it.

Kafka's Java producer, librdkafka's `murmur2_random` partitioner (which every producer of
this project uses) and this function agree for every non-empty key (a unit test checks it
against `confluent_kafka.murmur2`); the API uses it to find a posting's partition. Pure
Python, so the contract needs no Kafka client.
"""

from __future__ import annotations

from functools import lru_cache

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2`: the 32-bit MurmurHash2 of `data` with Kafka's seed, as an
    unsigned int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    end = length - length % 4
    for i in range(0, end, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length % 4
    if rest == 3:
        h ^= data[end + 2] << 16
    if rest >= 2:
        h ^= data[end + 1] << 8
    if rest >= 1:
        h ^= data[end]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h


@lru_cache(maxsize=65_536)
def partition_for(key: str | bytes, partitions: int) -> int:
    """Java's `toPositive(murmur2(key)) % partitions`."""
    raw = key.encode() if isinstance(key, str) else key
    return (murmur2(raw) & 0x7FFFFFFF) % partitions
