import pytest

from schemas.partitioning import murmur2, partition_for


# Kafka's own vectors for Utils.murmur2 (clients UtilsTest).
@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_matches_java(key, expected):
    assert murmur2(key) == expected


def test_partition_is_positive_hash_modulo_count():
    assert partition_for("foobar", 6) == (-790332482 & 0x7FFFFFFF) % 6
    assert {partition_for(f"posting-{i}", 6) for i in range(200)} == set(range(6))
