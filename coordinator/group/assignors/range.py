"""Kafka's server-side ``range`` assignor (KIP-848).

Follows ``group-coordinator/src/main/java/org/apache/kafka/coordinator/group/assignor/
RangeAssignor.java`` of Kafka 4.0 to 4.3 (the logic is the same from KAFKA-16944, July 2024, to the
4.3 branch and trunk of August 2026; only comments and an import changed):

- members are sorted: static members first, by instance id, then the others by member id (Java
  string order);
- per subscribed topic, its ``n`` partitions are cut into contiguous ranges over its ``k``
  subscribers in that order: ``n // k`` each, one more for the first ``n % k``; subscribers past
  the last partition get nothing from the topic;
- homogeneous groups: every member subscribes to every topic, so member ``i`` gets range ``i`` of
  every topic (co-partitioned when the topics have the same partition count); heterogeneous
  groups: each topic's ranges go to its own subscribers, in the same member order.

Not sticky: the current assignment is not read (the sticky range assignor of KIP-848's first
versions was replaced by this rewrite), so a member leaving or joining shifts the ranges of the
members sorted after it; static members keep their ranges across a restart because they sort by
instance id. Not rack-aware (no Kafka release up to 4.3 is; a rack-aware variant exists only as an
unmerged proposal).

A subscribed topic missing from the metadata raises :class:`PartitionAssignorError` (Kafka: "Member
is subscribed to a non-existent topic"), for the first member's topics in a homogeneous group and
for every member's in a heterogeneous one, as Kafka checks them.
"""
from __future__ import annotations

import uuid
from typing import Mapping

from .spec import (GroupSpec, PartitionAssignorError, java_string_key, kafka_uuid_str, sorted_member_ids,
                   topic_order, uuid_key)

__all__ = ["RangeAssignor", "range_member_order"]


def range_member_order(group: GroupSpec) -> list[str]:
    """Kafka's ``RangeAssignor.sortMemberIds``: static members by instance id, then the others by
    member id."""
    members = group.members
    static = [(members[m].instance_id, m) for m in members if members[m].instance_id is not None]
    dynamic = [m for m in members if members[m].instance_id is None]
    static.sort(key=lambda im: java_string_key(im[0]))
    return [m for _, m in static] + sorted_member_ids(dynamic)


def _check_exist(topic_ids, topics: Mapping[uuid.UUID, int]) -> None:
    missing = [t for t in topic_ids if t not in topics]
    if missing:
        first = min(missing, key=uuid_key)      # the same one whatever the set order
        raise PartitionAssignorError(
            f"Member is subscribed to a non-existent topic ({kafka_uuid_str(first)})")


class RangeAssignor:
    """``range``: contiguous partition ranges per topic, co-partitioned when possible."""

    name = "range"

    def assign(self, group: GroupSpec, topics: Mapping[uuid.UUID, int]
               ) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
        if not group.members:
            return {}
        order = range_member_order(group)
        if group.homogeneous:
            return self._homogeneous(group, topics, order)
        return self._heterogeneous(group, topics, order)

    @staticmethod
    def _homogeneous(group, topics, order):
        # Kafka reads the subscription of the first member in the sorted order.
        subscribed = topic_order(group.members[order[0]].subscribed_topic_ids)
        _check_exist(subscribed, topics)
        k = len(order)
        result: dict[str, dict[uuid.UUID, frozenset[int]]] = {m: {} for m in group.members}
        for t in subscribed:
            n = topics[t]
            quota, extra = divmod(n, k)
            start = 0
            for i, m in enumerate(order):
                end = min(start + quota + (1 if i < extra else 0), n)
                if start >= end:
                    break               # every later member's range is empty too
                result[m][t] = frozenset(range(start, end))
                start = end
        return result

    @staticmethod
    def _heterogeneous(group, topics, order):
        members = group.members
        subscribers: dict[uuid.UUID, list[str]] = {}      # each list in member order
        for m in order:
            for t in members[m].subscribed_topic_ids:
                s = subscribers.get(t)
                if s is None:
                    subscribers[t] = s = []
                s.append(m)
        _check_exist(subscribers, topics)
        result: dict[str, dict[uuid.UUID, frozenset[int]]] = {m: {} for m in group.members}
        for t in topic_order(subscribers):
            subs = subscribers[t]
            n = topics[t]
            quota, extra = divmod(n, len(subs))
            start = 0
            for i, m in enumerate(subs):
                end = min(start + quota + (1 if i < extra else 0), n)
                if start >= end:
                    break
                result[m][t] = frozenset(range(start, end))
                start = end
        return result
