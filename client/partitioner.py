"""Kafka's default partitioner: murmur2 for keyed records, sticky partitions (KIP-480) otherwise.

``murmur2(data)`` is ``org.apache.kafka.common.utils.Utils.murmur2`` bit for bit: a signed
32-bit result computed with Java's int overflow and ``>>>`` (unsigned shift) semantics.
``to_positive(n)`` is ``Utils.toPositive`` (``n & 0x7fffffff``, not ``abs``).

A keyed record goes to ``to_positive(murmur2(key)) % partitions`` whatever is available, as
in Kafka. A record without a key goes to the topic's current *sticky* partition
(``StickyPartitionCache``): chosen at random among the available partitions (all of them if
none is available) and kept until :meth:`DefaultPartitioner.on_new_batch` says the batch of
that partition is complete, when another partition (different from the last one if more than
one is available) is chosen.
"""
from __future__ import annotations

import random
from typing import Sequence

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def _signed(n: int) -> int:
    n &= _MASK
    return n - (1 << 32) if n & 0x80000000 else n


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Utils.murmur2: the 32-bit MurmurHash2 of data with seed 0x9747b28c, as a signed int."""
    data = bytes(data)
    length = len(data)
    h = (_SEED ^ length) & _MASK
    end = length - (length % 4)
    for i in range(0, end, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24                       # k >>> r on the unsigned representation
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
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
    return _signed(h)


def to_positive(n: int) -> int:
    """Utils.toPositive: clear the sign bit (so Integer.MIN_VALUE maps to 0)."""
    return n & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """BuiltInPartitioner.partitionForKey: toPositive(murmur2(key)) % numPartitions."""
    if num_partitions <= 0:
        raise ValueError("a topic has at least one partition")
    return to_positive(murmur2(key)) % num_partitions


class StickyPartitionCache:
    """Kafka's StickyPartitionCache: the current sticky partition of each topic."""

    def __init__(self, rng: random.Random | None = None):
        self._rng = rng or random.Random()
        self._cache: dict[str, int] = {}

    def _random_int(self) -> int:
        # Utils.toPositive(ThreadLocalRandom.current().nextInt())
        return to_positive(self._rng.getrandbits(32))

    def partition(self, topic: str, num_partitions: int, available: Sequence[int] | None = None) -> int:
        part = self._cache.get(topic)
        if part is None:
            return self.next_partition(topic, num_partitions, available, -1)
        return part

    def next_partition(self, topic: str, num_partitions: int, available: Sequence[int] | None,
                       prev_partition: int) -> int:
        old = self._cache.get(topic)
        if old is not None and old != prev_partition:
            return old
        avail = list(range(num_partitions)) if available is None else list(available)
        if not avail:
            new = self._random_int() % num_partitions
        elif len(avail) == 1:
            new = avail[0]
        else:
            new = None
            while new is None or new == old:
                new = avail[self._random_int() % len(avail)]
        self._cache[topic] = new
        return new


class DefaultPartitioner:
    """The producer's default partitioning (Kafka 2.4+ DefaultPartitioner / KIP-480).

    ``partition(topic, key, num_partitions, available)``: ``available`` lists the partitions
    that have a leader (None: all of them).
    """

    def __init__(self, rng: random.Random | None = None):
        self.sticky = StickyPartitionCache(rng)

    def partition(self, topic: str, key: bytes | None, num_partitions: int,
                  available: Sequence[int] | None = None) -> int:
        if key is None:
            return self.sticky.partition(topic, num_partitions, available)
        return partition_for_key(key, num_partitions)

    def on_new_batch(self, topic: str, num_partitions: int, prev_partition: int,
                     available: Sequence[int] | None = None) -> None:
        """The batch of prev_partition is complete: move the topic's sticky partition on."""
        self.sticky.next_partition(topic, num_partitions, available, prev_partition)
