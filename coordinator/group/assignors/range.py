"""Kafka's server-side ``range`` assignor (KIP-848).

Follows ``group-coordinator/src/main/java/org/apache/kafka/coordinator/group/assignor/
RangeAssignor.java`` of Kafka 4.0 to 4.3 (the logic is the same from KAFKA-16944, July 2024, in 3.9,
to the 4.3 branch and trunk of August 2026; only comments and an import changed):

- members are sorted: static members first, by instance id, then the others by member id (Java
  string order);
- per subscribed topic, its ``n`` partitions are cut into contiguous ranges over its ``k``
  subscribers in that order: ``n // k`` each, one more for the first ``n % k``; subscribers past
  the last partition get nothing from the topic;
- homogeneous groups: every member subscribes to every topic, so member ``i`` gets range ``i`` of
  every topic (co-partitioned when the topics have the same partition count); heterogeneous
  groups: each topic's ranges go to its own subscribers, in the same member order.

Not sticky: the current assignment is not read (the first server range assignor, KAFKA-14514, kept
partitions of the current assignment; KAFKA-16944 dropped that for co-partitioning and recomputes
every time), so a member leaving or joining shifts the ranges of the members sorted after it; static
members keep their ranges across a restart because they sort by instance id. Not rack-aware (not
on Kafka's branches up to 4.4 nor on trunk of August 2026; rack-aware versions exist only outside
them); ``rack_id`` is ignored. The member order is Kafka's own (a sort), so the output is a broker's exactly.

A subscribed topic missing from the metadata raises :class:`PartitionAssignorError` (Kafka: "Member
is subscribed to a non-existent topic"), for the first member's topics in a homogeneous group and
for every member's in a heterogeneous one, as Kafka checks them.
"""
from __future__ import annotations

import uuid
from typing import Mapping

from .spec import GroupSpec, PartitionAssignorError, TopicIndex, java_string_key, kafka_uuid_str, sorted_member_ids

__all__ = ["RangeAssignor", "range_member_order"]


def range_member_order(group: GroupSpec) -> list[str]:
    """Kafka's ``RangeAssignor.sortMemberIds``: static members by instance id, then the others by
    member id."""
    members = group.members
    static = [(members[m].instance_id, m) for m in members if members[m].instance_id is not None]
    dynamic = [m for m in members if members[m].instance_id is None]
    static.sort(key=lambda im: java_string_key(im[0]))
    return [m for _, m in static] + sorted_member_ids(dynamic)


def _missing(topic_id: uuid.UUID) -> PartitionAssignorError:
    return PartitionAssignorError(f"Member is subscribed to a non-existent topic ({kafka_uuid_str(topic_id)})")


class RangeAssignor:
    """``range``: contiguous partition ranges per topic, co-partitioned when possible."""

    name = "range"

    def assign(self, group: GroupSpec, topics: Mapping[uuid.UUID, int]
               ) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
        members = group.members
        if not members:
            return {}
        order = range_member_order(group)
        index = TopicIndex(topics)
        if group.homogeneous:
            # Kafka reads the subscription of the first member in the sorted order
            sub = index.subscription(members[order[0]].subscribed_topic_ids, _missing)[0]
            subscribers = {i: order for i in sub}
        else:
            # members by subscription, in member order (members subscribing to the same topics
            # usually share it: one list extension per topic and subscription)
            by_subscription: dict[tuple[int, ...], list[int]] = {}
            for k, m in enumerate(order):
                sub = index.subscription(members[m].subscribed_topic_ids, _missing)[0]
                same = by_subscription.get(sub)
                if same is None:
                    by_subscription[sub] = [k]
                else:
                    same.append(k)
            positions: dict[int, list[int]] = {}        # topic index -> its subscribers' positions
            for sub, ks in by_subscription.items():
                for i in sub:
                    s = positions.get(i)
                    if s is None:
                        positions[i] = list(ks)
                    else:
                        s.extend(ks)
            subscribers = {}                            # topic index -> its subscribers, in member order
            for i, ks in positions.items():
                if len(by_subscription) > 1:
                    ks.sort()
                subscribers[i] = [order[k] for k in ks]
        result: dict[str, dict[uuid.UUID, frozenset[int]]] = {m: {} for m in members}
        ids, counts = index.ids, index.counts
        ranges: dict[tuple[int, int], frozenset[int]] = {}     # shared: the same range of every topic
        for i in sorted(subscribers):   # topic order: each member's topics come out in Uuid order
            subs = subscribers[i]
            t, n = ids[i], counts[i]
            quota, extra = divmod(n, len(subs))
            start = 0
            for k, m in enumerate(subs):
                end = start + quota + (1 if k < extra else 0)      # quota * len(subs) + extra == n
                if start >= end:
                    break               # every later member's range is empty too
                r = ranges.get((start, end))
                if r is None:
                    r = ranges[(start, end)] = frozenset(range(start, end))
                result[m][t] = r
                start = end
        return result
