"""Kafka's RoundRobinAssignor ("roundrobin").

All partitions of the subscribed topics, sorted by (topic, partition), are dealt to the members
arranged in a circle in Kafka's ``MemberInfo`` order (static members by group instance id first,
then dynamic members by member id); a member not subscribed to a partition's topic is skipped.

Rather than walking the circle partition by partition, each topic is dealt at once: the members
subscribed to it, in circle order from the current position, take its partitions in turn.
"""
from __future__ import annotations

import bisect
from itertools import repeat

from .base import AbstractPartitionAssignor, Subscription, _make_tp, member_order_key


class RoundRobinAssignor(AbstractPartitionAssignor):
    name = "roundrobin"

    def assign_partitions(self, partitions_per_topic, subscriptions, cluster=None):
        return self.assign_pairs(partitions_per_topic, subscriptions, cluster, _make_tp)

    def assign_pairs(self, partitions_per_topic: dict[str, int],
                     subscriptions: dict[str, Subscription], cluster=None, factory=None) -> dict[str, list]:
        circle = sorted(subscriptions, key=lambda m: member_order_key(m, subscriptions[m]))
        size = len(circle)
        seats: dict[str, list[int]] = {}            # topic -> circle positions of its members
        for pos, m in enumerate(circle):
            for t in dict.fromkeys(subscriptions[m].topics):
                seats.setdefault(t, []).append(pos)
        out: dict[str, list] = {m: [] for m in subscriptions}
        cursor = 0                                  # the circle's current position
        for topic in sorted(seats):
            count = partitions_per_topic.get(topic)
            if not count:
                continue
            positions = seats[topic]
            k = len(positions)
            first = bisect.bisect_left(positions, cursor)
            if first == k:
                first = 0
            # partition i goes to positions[(first + i) % k]
            for j in range(min(k, count)):
                pos = positions[(first + j) % k]
                pairs = zip(repeat(topic), range(j, count, k))
                out[circle[pos]].extend(map(factory, pairs) if factory else pairs)
            cursor = positions[(first + count - 1) % k] + 1
            if cursor == size:
                cursor = 0
        return out
