"""The chaos run finds the broker coordinating a transactional id as Kafka does: Java's
String hash, Kafka's abs, modulo the internal topic's partitions."""

from jobpost_dev.chaos.coordinators import java_hash, kafka_abs, partition_for


def test_java_string_hash_matches_javas_own_values():
    # Values Java prints for "".hashCode(), "a".hashCode(), "hello".hashCode(), ...
    assert java_hash("") == 0
    assert java_hash("a") == 97
    assert java_hash("hello") == 99162322
    assert java_hash("polygenelubricants") == -(1 << 31)  # the famous Integer.MIN_VALUE
    assert java_hash("jobpost-sequencer-api-1") == java_hash("jobpost-sequencer-api-1")
    assert java_hash("é") == 0xE9  # one UTF-16 code unit
    assert java_hash("😀") == 31 * 0xD83D + 0xDE00  # a surrogate pair: two units


def test_kafka_abs_maps_the_minimum_to_zero_and_partitions_stay_in_range():
    assert kafka_abs(-(1 << 31)) == 0
    assert kafka_abs(-5) == 5
    assert partition_for("polygenelubricants", 10) == 0
    assert all(0 <= partition_for(f"chaos1234-sequencer-api-{n}", 10) < 10 for n in range(50))
