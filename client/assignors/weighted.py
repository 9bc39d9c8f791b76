"""A custom assignor, shipped as an example: "weighted".

Each member advertises a capacity (a positive int) in its subscription user data, and
partitions are spread in proportion to capacity.

- User data: ``int16 version (0) | int32 capacity``. A member whose user data is missing or
  unreadable, or not positive, counts with capacity 1 (so it still gets a share).
- With identical subscriptions every member gets its largest-remainder (Hamilton) share of all
  partitions: ``floor(P * c / C)`` or one more. With differing subscriptions each partition
  goes to the subscribed member whose load after taking it, ``(assigned + 1) / capacity``, is
  lowest (ties: Kafka's member order).
- Partitions are dealt topic by topic (the topics with the fewest subscribers first), so each
  topic is spread as well.

It is an eager assignor (it does not try to keep partitions where they were).
"""
from __future__ import annotations

import heapq
import struct
from itertools import repeat

from .base import AbstractPartitionAssignor, Subscription, _make_tp, member_order_key

_USER_DATA = struct.Struct(">hi")


def encode_capacity(capacity: int) -> bytes:
    _check_capacity(capacity)
    return _USER_DATA.pack(0, capacity)


def decode_capacity(data: bytes | None) -> int | None:
    """The capacity in a member's user data, or None when absent or malformed."""
    if not data or len(data) < _USER_DATA.size:
        return None
    version, capacity = _USER_DATA.unpack_from(bytes(data), 0)
    if version < 0 or capacity <= 0:
        return None
    return capacity


def _check_capacity(capacity) -> None:
    if isinstance(capacity, bool) or not isinstance(capacity, int) or not 0 < capacity < 2**31:
        raise ValueError(f"capacity must be a positive int32, got {capacity!r}")


class WeightedAssignor(AbstractPartitionAssignor):
    name = "weighted"

    def __init__(self, capacity: int = 1) -> None:
        _check_capacity(capacity)
        self.capacity = capacity

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        return encode_capacity(self.capacity)

    @staticmethod
    def capacity_of(subscription: Subscription) -> int:
        return decode_capacity(subscription.user_data) or 1

    def assign_partitions(self, partitions_per_topic, subscriptions, cluster=None):
        return self.assign_pairs(partitions_per_topic, subscriptions, cluster, _make_tp)

    def assign_pairs(self, partitions_per_topic, subscriptions, cluster=None, factory=None):
        order = sorted(subscriptions, key=lambda m: member_order_key(m, subscriptions[m]))
        caps = [self.capacity_of(subscriptions[m]) for m in order]
        topic_sets = [frozenset(subscriptions[m].topics) for m in order]
        per_topic: dict[str, list[int]] = {}
        for rank, topics in enumerate(topic_sets):
            for t in topics:
                per_topic.setdefault(t, []).append(rank)
        # topics with the fewest candidates first (as the sticky assignors order them), so that
        # the shared ones can even out what the exclusive ones forced
        topics = sorted((t for t in partitions_per_topic if partitions_per_topic[t] and per_topic.get(t)),
                        key=lambda t: (len(per_topic[t]), t))
        n = len(order)
        quota = [None] * n
        if n and all(s == topic_sets[0] for s in topic_sets):
            quota = _largest_remainder(sum(partitions_per_topic[t] for t in topics), caps)
        counts = [0] * n
        pairs: list[list] = [[] for _ in range(n)]
        out: dict[str, list] = {m: [] for m in subscriptions}
        for t in topics:
            heap = [((counts[r] + 1) / caps[r], r) for r in per_topic[t]
                    if quota[r] is None or counts[r] < quota[r]]
            heapq.heapify(heap)
            for p in range(partitions_per_topic[t]):
                _, r = heapq.heappop(heap)
                pairs[r].append(p)
                counts[r] += 1
                if quota[r] is None or counts[r] < quota[r]:
                    heapq.heappush(heap, ((counts[r] + 1) / caps[r], r))
            for r in per_topic[t]:
                if pairs[r]:
                    tp = zip(repeat(t), pairs[r])
                    pairs[r] = []
                    out[order[r]].extend(map(factory, tp) if factory else tp)
        for parts in out.values():
            parts.sort()
        return out


def _largest_remainder(total: int, caps: list[int]) -> list[int]:
    """Hamilton apportionment of ``total`` seats by weights ``caps``."""
    weight = sum(caps)
    base = [total * c // weight for c in caps]
    left = total - sum(base)
    # largest remainders first; ties to the earlier member
    by_remainder = sorted(range(len(caps)), key=lambda i: (-(total * caps[i] % weight), i))
    for i in by_remainder[:left]:
        base[i] += 1
    return base
