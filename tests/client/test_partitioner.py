"""Kafka's murmur2 and default partitioner, against Kafka's vectors and two independent implementations."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings, strategies as st

from groupcoord.client.partitioner import (
    DefaultPartitioner, StickyPartitionCache, murmur2, partition_for_key, to_positive,
)

# org.apache.kafka.common.utils.UtilsTest#testMurmur2
KAFKA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    bytes([ord("a"), ord("b"), ord("c")]): 479470107,
}


@pytest.mark.parametrize("data,expected", KAFKA_MURMUR2.items())
def test_murmur2_matches_kafkas_utils_test_vectors(data, expected):
    assert murmur2(data) == expected


def test_to_positive_is_a_mask_not_abs():
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0                   # abs would overflow in Java
    assert to_positive(5) == 5
    assert murmur2(b"") == murmur2(bytearray()) == murmur2(memoryview(b""))


@pytest.mark.parametrize("n", range(9))
def test_every_tail_length_agrees_with_kafka_python(n):
    # Kafka's vectors have no key of length 4k+1; cover each tail branch explicitly
    data = bytes(range(200, 200 + n))
    assert murmur2(data) == _kafka_python_signed(data)


def test_partition_for_key_uses_to_positive_and_modulo():
    for key, h in KAFKA_MURMUR2.items():
        for n in (1, 2, 3, 7, 50, 101):
            assert partition_for_key(key, n) == (h & 0x7FFFFFFF) % n
    with pytest.raises(ValueError):
        partition_for_key(b"k", 0)


def _kafka_python_signed(data: bytes) -> int:
    from kafka.partitioner.default import murmur2 as kp_murmur2
    h = kp_murmur2(data)              # kafka-python returns the unsigned 32-bit value
    return h - (1 << 32) if h & 0x80000000 else h


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=64))
def test_murmur2_agrees_with_kafka_python_on_random_bytes(data):
    assert murmur2(data) == _kafka_python_signed(data)


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=32), st.integers(min_value=1, max_value=1000))
def test_keyed_partition_agrees_with_kafka_python(key, n):
    assert partition_for_key(key, n) == (_kafka_python_signed(key) & 0x7FFFFFFF) % n


def test_keyed_partition_agrees_with_librdkafkas_murmur2_partitioner():
    """librdkafka's murmur2_random partitioner is the Java-compatible one: produce keyed records
    through confluent-kafka to our coordinator and compare the partitions it picked."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from groupcoord.coordinator.embed import ThreadedCoordinator

    rng = random.Random(7)
    keys = [rng.randbytes(rng.randint(1, 24)) for _ in range(150)] + list(KAFKA_MURMUR2)
    with ThreadedCoordinator(topics={"keyed": 13}) as gc:
        producer = confluent_kafka.Producer({"bootstrap.servers": gc.bootstrap_servers,
                                             "partitioner": "murmur2_random", "linger.ms": 5})
        seen = {}

        def report(err, msg):
            assert err is None, err
            seen[msg.key()] = msg.partition()
        for k in keys:
            producer.produce("keyed", key=k, value=b"v", on_delivery=report)
        assert producer.flush(20) == 0
    assert len(seen) == len(set(keys))
    assert all(seen[k] == partition_for_key(k, 13) for k in seen)


# ---------------------------------------------------------------------------------- sticky (KIP-480)
def test_keyed_records_ignore_stickiness_and_availability():
    p = DefaultPartitioner(random.Random(1))
    key = b"key"
    first = p.partition("test", key, 3)
    p.on_new_batch("test", 3, first)
    assert p.partition("test", key, 3) == first == partition_for_key(key, 3)
    assert p.partition("test", key, 3, available=[]) == first      # a keyed record goes where the hash says


def test_sticky_partition_holds_until_a_new_batch():
    p = DefaultPartitioner(random.Random(2))
    first = p.partition("t", None, 10)
    assert all(p.partition("t", None, 10) == first for _ in range(100))
    p.on_new_batch("t", 10, first)
    second = p.partition("t", None, 10)
    assert second != first
    assert all(p.partition("t", None, 10) == second for _ in range(100))


def test_new_batch_of_another_partition_does_not_move_the_sticky_one():
    p = DefaultPartitioner(random.Random(3))
    current = p.partition("t", None, 5)
    p.on_new_batch("t", 5, (current + 1) % 5)       # a stale notification (prevPartition mismatch)
    assert p.partition("t", None, 5) == current


def test_only_available_partitions_are_chosen_and_all_get_visited():
    p = DefaultPartitioner(random.Random(4))
    available = [0, 2]                                 # partition 1 has no leader
    seen = []
    for _ in range(50):
        part = p.partition("t", None, 3, available)
        seen.append(part)
        p.on_new_batch("t", 3, part, available)
    assert set(seen) == {0, 2}
    assert all(a != b for a, b in zip(seen, seen[1:]))     # two available: it alternates
    p2 = DefaultPartitioner(random.Random(5))
    visited = set()
    for _ in range(60):
        part = p2.partition("u", None, 4)
        visited.add(part)
        p2.on_new_batch("u", 4, part)
    assert visited == {0, 1, 2, 3}


def test_one_available_partition_and_none_available():
    cache = StickyPartitionCache(random.Random(6))
    assert cache.partition("t", 4, [3]) == 3
    cache.next_partition("t", 4, [3], 3)
    assert cache.partition("t", 4, [3]) == 3            # nowhere else to go
    none_available = {StickyPartitionCache(random.Random(i)).partition("v", 4, []) for i in range(40)}
    assert none_available <= {0, 1, 2, 3} and len(none_available) > 1   # random among all


def test_sticky_state_is_per_topic():
    p = DefaultPartitioner(random.Random(8))
    a, b = p.partition("a", None, 6), p.partition("b", None, 6)
    p.on_new_batch("a", 6, a)
    assert p.partition("b", None, 6) == b and p.partition("a", None, 6) != a
