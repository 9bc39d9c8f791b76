"""The input and output of the server-side assignors (KIP-848), and the orders they sort by.

Kafka's counterparts (``group-coordinator-api`` and ``group-coordinator``, 4.x):

- :class:`MemberSpec` is ``MemberSubscriptionAndAssignmentImpl``: a member's rack, instance id,
  subscribed topic ids and its current *target* assignment (the sticky starting point; a new static
  member carries the target of the member it replaces, as ``TargetAssignmentBuilder`` gives it);
- :class:`GroupSpec` is ``GroupSpecImpl``: the members and the subscription type. Kafka's
  inverted target assignment (``isPartitionAssigned``) is not passed: a partition counts as
  assigned when some member's ``assignment`` holds it, which is what Kafka's inverted map says
  for the members it passes;
- the ``topics`` argument of :meth:`ServerAssignor.assign` is ``SubscribedTopicDescriber``:
  topic id -> partition count; a topic missing from it is Kafka's ``numPartitions == -1``. It is
  meant to hold the subscribed topics (every topic in it is numbered, see :class:`TopicIndex`);
- :class:`PartitionAssignorError` is ``PartitionAssignorException``.

Preconditions, as Kafka's target assignment guarantees them: a partition is in at most one
member's assignment, and below its topic's partition count (Kafka never shrinks a topic; a
re-created topic has a new id).

Orders. Kafka sorts topic ids with ``Uuid.compareTo`` (signed comparison of the most- then the
least-significant 64 bits): :func:`topic_order` gives that order. Member ids and instance ids are
Java strings, compared by UTF-16 code unit: :func:`java_string_key` gives that order (it differs
from Python's code point order only between characters above U+FFFF and U+E000..U+FFFF).
"""
from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from typing import Iterable, Mapping, Protocol

__all__ = ["GroupSpec", "MemberSpec", "PartitionAssignorError", "ServerAssignor", "TopicIndex", "java_string_key",
           "kafka_uuid_str", "sorted_member_ids", "topic_order", "uuid_key"]


@dataclass(frozen=True)
class MemberSpec:
    """One member as the assignor sees it (Kafka's ``MemberSubscriptionAndAssignmentImpl``)."""
    rack_id: str | None
    instance_id: str | None
    subscribed_topic_ids: frozenset      # of uuid.UUID
    assignment: Mapping                  # uuid.UUID -> frozenset[int]: the member's current *target*


@dataclass(frozen=True)
class GroupSpec:
    """The group as the assignor sees it (Kafka's ``GroupSpecImpl``)."""
    members: Mapping                     # member id (str) -> MemberSpec, in the group's member order
    homogeneous: bool                    # every member subscribes to the same topics


class PartitionAssignorError(Exception):
    """Kafka's ``PartitionAssignorException``: the assignment cannot be computed (a subscribed topic
    missing from the metadata, ...). The coordinator answers the heartbeat UNKNOWN_SERVER_ERROR."""


class ServerAssignor(Protocol):
    """Kafka's ``ConsumerGroupPartitionAssignor``."""
    name: str

    def assign(self, group: GroupSpec, topics: Mapping[uuid.UUID, int]
               ) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
        """The new target of every member of ``group`` (a member with nothing gets ``{}``).
        ``topics``: topic id -> partition count, for (at least) the subscribed topics."""
        ...


# Flipping the sign bit of each 64-bit half turns Java's signed order of the halves into the
# unsigned order of the 128-bit integer.
_SIGN_BITS = (1 << 127) | (1 << 63)


def uuid_key(topic_id: uuid.UUID) -> int:
    """Sort key giving Kafka's ``Uuid.compareTo`` order."""
    return topic_id.int ^ _SIGN_BITS


def topic_order(topic_ids: Iterable[uuid.UUID]) -> list[uuid.UUID]:
    """``topic_ids`` in Kafka's ``Uuid.compareTo`` order."""
    return sorted(topic_ids, key=uuid_key)


def kafka_uuid_str(topic_id: uuid.UUID) -> str:
    """How Kafka prints a ``Uuid`` (URL-safe base64 of the 16 bytes, unpadded): for error messages."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode("ascii")


def java_string_key(s: str):
    """Sort key giving Java's ``String.compareTo`` order (UTF-16 code units)."""
    return s.encode("utf-16-be", "surrogatepass")


def sorted_member_ids(member_ids: Iterable[str]) -> list[str]:
    """Member ids in Java string order."""
    ids = list(member_ids)
    if all(m.isascii() for m in ids):
        return sorted(ids)          # same order, without encoding every id
    return sorted(ids, key=java_string_key)


class TopicIndex:
    """The topics of one assignment numbered 0..n-1 in Kafka's ``Uuid`` order, for the assignors'
    inner loops: sorting indices sorts topic ids, and lookups go through ``UUID.int`` (a
    ``uuid.UUID`` hashes through a Python-level ``__hash__``, an int in C: several times faster)."""

    __slots__ = ("ids", "counts", "by_int", "_subscriptions")

    def __init__(self, topics: Mapping[uuid.UUID, int]):
        self.ids: list[uuid.UUID] = topic_order(topics)
        self.counts: list[int] = [topics[t] for t in self.ids]
        self.by_int: dict[int, int] = {t.int: i for i, t in enumerate(self.ids)}
        self._subscriptions: dict = {}

    def subscription(self, topic_ids, missing) -> tuple[tuple[int, ...], frozenset[int]]:
        """``topic_ids`` as (sorted indices, the same as a set); a topic not in the metadata raises
        ``missing(topic_id)`` (for the first such topic in ``Uuid`` order). Members subscribing to
        the same topics usually share one frozenset: converted once."""
        try:
            known = self._subscriptions.get(topic_ids)
        except TypeError:               # not hashable: convert without remembering
            known, topic_ids = None, frozenset(topic_ids)
        if known is None:
            by_int = self.by_int
            found = [by_int.get(t.int) for t in topic_ids]
            if None in found:
                raise missing(min((t for t, i in zip(topic_ids, found) if i is None), key=uuid_key))
            found.sort()
            known = self._subscriptions[topic_ids] = (tuple(found), frozenset(found))
        return known
