import pytest

from schemas.partitioning import partition_for


# Kafka's own vectors for Utils.murmur2 (clients UtilsTest); the partition is the positive
# part of the hash modulo the partition count, as Java's BuiltInPartitioner computes it.
@pytest.mark.parametrize(
    ("key", "java_hash"),
    [
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
@pytest.mark.parametrize("partitions", [1, 3, 6, 7, 64, 1000])
def test_partition_matches_javas_partitioner(key, java_hash, partitions):
    assert partition_for(key, partitions) == (java_hash & 0x7FFFFFFF) % partitions


def test_text_keys_are_utf8_and_spread_over_every_partition():
    assert partition_for("foobar", 6) == partition_for(b"foobar", 6)
    assert {partition_for(f"posting-{i}", 6) for i in range(200)} == set(range(6))


def test_the_pure_python_hash_agrees_with_librdkafkas_for_many_keys():
    from confluent_kafka import murmur2 as librdkafka_murmur2

    keys = [f"{i:x}-posting-{'é' * (i % 5)}".encode() for i in range(2000)]
    for partitions in (3, 6, 64):
        assert [partition_for(k, partitions) for k in keys] == [
            int(librdkafka_murmur2(k, partitions)) for k in keys
        ]
