"""Kafka's RangeAssignor ("range").

Per topic: the partitions in numeric order are cut into contiguous ranges, one per subscribed
member, members in Kafka's ``MemberInfo`` order (static members by group instance id first, then
dynamic members by member id). With ``n`` partitions and ``k`` members the first ``n % k``
members get ``n // k + 1`` partitions, the others ``n // k``.

Rack-aware assignment (KIP-881) is used, as in Kafka, when members carry rack ids, the cluster
metadata has replica racks, the two share a rack, and some partition's replicas are not on every
rack: partitions are first matched with members on a rack holding one of their replicas (within
each member's range quota, co-partitioned topics kept aligned), the rest are then assigned as
ranges.
"""
from __future__ import annotations

from itertools import repeat

from .base import (AbstractPartitionAssignor, ClusterMetadata, Subscription, TopicPartition,
                   _make_tp, member_order_key)


def use_rack_aware_assignment(consumer_racks: set[str], partition_racks: set[str],
                              racks_per_partition, prefer_rack_aware: bool = False) -> bool:
    """Kafka's AbstractPartitionAssignor.useRackAwareAssignment."""
    if not consumer_racks or consumer_racks.isdisjoint(partition_racks):
        return False
    if prefer_rack_aware:
        return True
    return not all(r == partition_racks for r in racks_per_partition)


def consumer_racks(subscriptions: dict[str, Subscription]) -> dict[str, str]:
    return {m: s.rack_id for m, s in subscriptions.items() if s.rack_id}


class _TopicState:
    """Kafka's RangeAssignor.TopicAssignmentState (for the rack-aware pass)."""

    __slots__ = ("topic", "consumers", "racks", "unassigned", "assigned_count", "per_consumer",
                 "remaining_extra", "needs_rack_aware")

    def __init__(self, topic, count, consumers, racks_of_consumer, cluster, prefer_rack_aware):
        self.topic = topic
        self.consumers = consumers                      # sorted member ids
        self.unassigned = dict.fromkeys(range(count))   # ordered set of partition numbers
        self.assigned_count = dict.fromkeys(consumers, 0)
        k = len(consumers)
        self.per_consumer = count // k if k else 0
        self.remaining_extra = count % k if k else 0
        all_consumer_racks = {racks_of_consumer[c] for c in consumers if c in racks_of_consumer}
        self.racks: list[frozenset[str]] = []
        all_partition_racks: set[str] = set()
        if all_consumer_racks and cluster is not None:
            for p in range(count):
                r = cluster.partition_racks(TopicPartition(topic, p))
                self.racks.append(r)
                all_partition_racks.update(r)
        self.needs_rack_aware = use_rack_aware_assignment(
            all_consumer_racks, all_partition_racks, self.racks, prefer_rack_aware)

    def racks_match(self, consumer_rack: str | None, p: int) -> bool:
        return consumer_rack is None or (p < len(self.racks) and consumer_rack in self.racks[p])

    def max_assignable(self, consumer: str) -> int:
        quota = self.per_consumer + (1 if self.remaining_extra > 0 else 0)
        return max(0, quota - self.assigned_count[consumer])

    def on_assigned(self, consumer: str, parts: list[int]) -> None:
        n = self.assigned_count[consumer] + len(parts)
        self.assigned_count[consumer] = n
        if n > self.per_consumer:
            self.remaining_extra -= 1
        for p in parts:
            del self.unassigned[p]


class RangeAssignor(AbstractPartitionAssignor):
    name = "range"

    #: As Kafka's (test-only) ``preferRackAwareLogic``: use rack matching even when every
    #: partition has replicas on every rack.
    prefer_rack_aware: bool = False

    def assign_partitions(self, partitions_per_topic, subscriptions, cluster=None):
        return self.assign_pairs(partitions_per_topic, subscriptions, cluster, _make_tp)

    def assign_pairs(self, partitions_per_topic: dict[str, int],
                     subscriptions: dict[str, Subscription],
                     cluster: ClusterMetadata | None = None, factory=None) -> dict[str, list]:
        order = sorted(subscriptions, key=lambda m: member_order_key(m, subscriptions[m]))
        per_topic: dict[str, list[str]] = {}
        for m in order:
            for t in dict.fromkeys(subscriptions[m].topics):
                per_topic.setdefault(t, []).append(m)
        racks_of = consumer_racks(subscriptions)
        if racks_of and cluster is not None and cluster.has_racks:
            return self._assign_rack_aware(partitions_per_topic, subscriptions, per_topic,
                                           racks_of, cluster, factory)
        out: dict[str, list] = {m: [] for m in subscriptions}
        for topic in sorted(partitions_per_topic):
            count = partitions_per_topic[topic]
            consumers = per_topic.get(topic)
            if not count or not consumers:
                continue
            per, extra = divmod(count, len(consumers))
            start = 0
            for i, m in enumerate(consumers):
                n = per + 1 if i < extra else per
                if n:
                    pairs = zip(repeat(topic), range(start, start + n))
                    out[m].extend(map(factory, pairs) if factory else pairs)
                start += n
        return out

    def _assign_rack_aware(self, partitions_per_topic, subscriptions, per_topic, racks_of,
                           cluster, factory):
        states = [
            _TopicState(topic, count, per_topic.get(topic, []), racks_of, cluster,
                        self.prefer_rack_aware)
            for topic, count in sorted(partitions_per_topic.items()) if count
        ]
        assignment: dict[str, list[tuple[str, int]]] = {m: [] for m in subscriptions}

        def give(consumer, parts, state):
            assignment[consumer].extend((state.topic, p) for p in parts)
            state.on_assigned(consumer, parts)

        def assign_ranges(state, may_assign):
            for consumer in state.consumers:
                if not state.unassigned:
                    break
                limit = state.max_assignable(consumer)
                parts = []
                if limit:
                    for p in state.unassigned:
                        if may_assign(consumer, state, p):
                            parts.append(p)
                            if len(parts) == limit:
                                break
                if parts:
                    give(consumer, parts, state)

        def rack_match(consumer, state, p):
            return state.racks_match(racks_of.get(consumer), p)

        use_rack_aware = any(s.needs_rack_aware for s in states)
        if use_rack_aware:
            # group by the (ordered) consumer list, then by partition count: co-partitioned topics
            groups: dict[tuple, dict[int, list[_TopicState]]] = {}
            for s in states:
                key = tuple((c, racks_of.get(c)) for c in s.consumers)
                groups.setdefault(key, {}).setdefault(len(s.racks), []).append(s)
            for key, by_count in groups.items():
                for num_partitions, co in by_count.items():
                    if len(co) > 1:
                        remaining = [c for c, _ in key]
                        for p in range(num_partitions):
                            match = None
                            for c in remaining:
                                rack = racks_of.get(c)
                                if all(t.racks_match(rack, p) and t.max_assignable(c) > 0 for t in co):
                                    match = c
                                    break
                            if match is not None:
                                for t in co:
                                    give(match, [p], t)
                                if not any(t.max_assignable(match) > 0 for t in co):
                                    remaining.remove(match)
                                    if not remaining:
                                        break
                    elif co[0].needs_rack_aware:
                        assign_ranges(co[0], rack_match)
        for s in states:
            assign_ranges(s, lambda c, _st, p: True)
        out = {}
        for m, pairs in assignment.items():
            pairs.sort()
            out[m] = list(map(factory, pairs)) if factory else pairs
        return out
