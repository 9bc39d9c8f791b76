"""Partition assignors: Kafka's four built-ins, a custom example, a registry and ``plan()``.

- ``"range"`` :class:`RangeAssignor`, ``"roundrobin"`` :class:`RoundRobinAssignor`,
  ``"sticky"`` :class:`StickyAssignor`, ``"cooperative-sticky"``
  :class:`CooperativeStickyAssignor` (the names Kafka puts on the wire), and ``"weighted"``
  :class:`WeightedAssignor` (capacity-proportional; an example of a custom assignor).
- :func:`assignors_from_config` turns a ``partition.assignment.strategy`` list (names, Java
  class names, assignor classes or instances, in preference order) into assignor instances.
- :func:`plan` runs an assignor on plain data::

      plan("cooperative-sticky", {"c1": ["t"], "c2": ["t"]}, {"t": 4},
           previous={"c1": [("t", 0), ("t", 1), ("t", 2), ("t", 3)]})
"""
from __future__ import annotations

from typing import Iterable, Mapping

from .abstract_sticky import AbstractStickyAssignor, MemberData, StickyAssignmentError
from .base import (AbstractPartitionAssignor, Assignment, ClusterMetadata, ConsumerGroupMetadata,
                   ConsumerPartitionAssignor, GroupAssignment, GroupSubscription,
                   PartitionLayout, RebalanceProtocol, Subscription, TopicPartition,
                   member_order_key)
from .cooperative_sticky import CooperativeStickyAssignor
from .range import RangeAssignor
from .roundrobin import RoundRobinAssignor
from .sticky import StickyAssignor
from .weighted import WeightedAssignor, decode_capacity, encode_capacity

__all__ = [
    "AbstractPartitionAssignor", "AbstractStickyAssignor", "Assignment", "ClusterMetadata",
    "ConsumerGroupMetadata", "ConsumerPartitionAssignor", "CooperativeStickyAssignor",
    "GroupAssignment", "GroupSubscription", "MemberData", "PartitionLayout", "RangeAssignor",
    "RebalanceProtocol", "RoundRobinAssignor", "StickyAssignmentError", "StickyAssignor",
    "Subscription", "TopicPartition", "WeightedAssignor", "ASSIGNORS", "UnknownAssignorError",
    "assignors_from_config", "decode_capacity", "encode_capacity", "get_assignor",
    "member_order_key", "plan", "register_assignor",
]

#: name on the wire -> assignor class
ASSIGNORS: dict[str, type[ConsumerPartitionAssignor]] = {
    RangeAssignor.name: RangeAssignor,
    RoundRobinAssignor.name: RoundRobinAssignor,
    StickyAssignor.name: StickyAssignor,
    CooperativeStickyAssignor.name: CooperativeStickyAssignor,
    WeightedAssignor.name: WeightedAssignor,
}

#: Java class names accepted in a strategy list, as a Java client's config would have them
JAVA_CLASS_NAMES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}


class UnknownAssignorError(ValueError):
    pass


def register_assignor(cls: type[ConsumerPartitionAssignor], name: str | None = None) -> None:
    """Make a custom assignor class available by name (default: its ``name`` attribute)."""
    if not (isinstance(cls, type) and issubclass(cls, ConsumerPartitionAssignor)):
        raise TypeError(f"{cls!r} is not a ConsumerPartitionAssignor class")
    key = name or cls.name
    if not key:
        raise ValueError(f"{cls.__name__} has no name")
    ASSIGNORS[key] = cls


def get_assignor(name: str) -> ConsumerPartitionAssignor:
    """A new instance of the assignor registered under ``name`` (or a Java class name)."""
    key = JAVA_CLASS_NAMES.get(name, name)
    try:
        cls = ASSIGNORS[key]
    except KeyError:
        raise UnknownAssignorError(
            f"unknown partition assignor {name!r}; known: {', '.join(sorted(ASSIGNORS))}"
        ) from None
    return cls()


def assignors_from_config(strategy) -> list[ConsumerPartitionAssignor]:
    """``partition.assignment.strategy`` -> assignor instances, in preference order.

    ``strategy`` is a list (or tuple) whose items are names (``"range"``, ``"cooperative-sticky"``,
    or Kafka's Java class names), assignor classes, or assignor instances; a comma-separated
    string is accepted too. As in Kafka, two assignors with the same name are an error.
    """
    if isinstance(strategy, str):
        items: Iterable = [s.strip() for s in strategy.split(",") if s.strip()]
    elif isinstance(strategy, ConsumerPartitionAssignor) or (
            isinstance(strategy, type) and issubclass(strategy, ConsumerPartitionAssignor)):
        items = [strategy]
    else:
        items = list(strategy)
    result: list[ConsumerPartitionAssignor] = []
    seen: dict[str, object] = {}
    for item in items:
        if isinstance(item, str):
            assignor = get_assignor(item)
        elif isinstance(item, type) and issubclass(item, ConsumerPartitionAssignor):
            assignor = item()
        elif isinstance(item, ConsumerPartitionAssignor):
            assignor = item
        else:
            raise TypeError(f"partition.assignment.strategy items must be names, assignor classes "
                            f"or instances, not {type(item).__name__}")
        if not assignor.name:
            raise ValueError(f"assignor {assignor!r} has no name")
        if assignor.name in seen:
            raise ValueError(f"the assignor name {assignor.name!r} is used in more than one "
                             f"assignor: {seen[assignor.name]!r}, {item!r}")
        seen[assignor.name] = item
        result.append(assignor)
    if not result:
        raise ValueError("partition.assignment.strategy needs at least one assignor")
    return result


def _resolve(strategy) -> ConsumerPartitionAssignor:
    if isinstance(strategy, ConsumerPartitionAssignor):
        return strategy
    if isinstance(strategy, type) and issubclass(strategy, ConsumerPartitionAssignor):
        return strategy()
    if isinstance(strategy, str):
        return get_assignor(strategy)
    raise TypeError(f"strategy must be a name, an assignor class or instance, not {strategy!r}")


def plan(strategy, subscriptions: Mapping[str, Iterable[str]], partitions_per_topic: Mapping[str, int],
         previous: Mapping[str, Iterable[tuple[str, int]]] | None = None, *,
         generation: int = 1, user_data: Mapping[str, bytes] | None = None
         ) -> dict[str, list[tuple[str, int]]]:
    """Run an assignor on plain data.

    ``subscriptions`` {member: [topic, ...]}, ``partitions_per_topic`` {topic: count},
    ``previous`` {member: [(topic, partition), ...]} (what each member owns now; those members
    report ``generation``, the others none), ``user_data`` {member: bytes} (e.g. a weighted
    member's capacity). Returns {member: sorted [(topic, partition), ...]}; for
    cooperative-sticky that is this rebalance's assignment (partitions changing owner are left
    out until the follow-up rebalance -- call ``plan`` again with it as ``previous``).
    """
    assignor = _resolve(strategy)
    prev = {m: list(v) for m, v in (previous or {}).items()}
    udata = user_data or {}
    subs: dict[str, Subscription] = {}
    subscribed: set[str] = set()
    for m, topics in subscriptions.items():
        topics = list(topics)
        subscribed.update(topics)
        has_prev = m in prev
        subs[m] = Subscription(topics, user_data=udata.get(m), owned_partitions=prev.get(m, []),
                               generation_id=generation if has_prev else -1)
    ppt = {t: n for t, n in partitions_per_topic.items() if n and n > 0 and t in subscribed}
    if isinstance(assignor, AbstractStickyAssignor):
        md = {m: MemberData(prev.get(m, []), generation if m in prev else None) for m in subs}
        return assignor.assign_pairs(ppt, subs, None, None, member_data=md)
    if hasattr(assignor, "assign_pairs"):
        return assignor.assign_pairs(ppt, subs, None, None)
    result = assignor.assign(ClusterMetadata(ppt), GroupSubscription(subs))
    return {m: sorted((tp[0], tp[1]) for tp in a.partitions)
            for m, a in result.assignments.items()}
