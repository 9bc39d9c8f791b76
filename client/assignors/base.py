"""Kafka's ConsumerPartitionAssignor interface, in Python.

An assignor runs on the group leader: it gets every member's subscription and the
cluster's partition counts and returns every member's assignment. Members give it
data through ``subscription_user_data`` and learn the result in ``on_assignment``.
"""
from __future__ import annotations

import bisect
import enum
import functools
import operator
from array import array
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Mapping, NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class RebalanceProtocol(enum.Enum):
    EAGER = 0
    COOPERATIVE = 1


@dataclass
class Subscription:
    """What a member sends in its JoinGroup metadata (ConsumerProtocolSubscription)."""

    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None
    group_instance_id: str | None = None


@dataclass
class Assignment:
    """What a member receives in its SyncGroup response (ConsumerProtocolAssignment)."""

    partitions: list[TopicPartition]
    user_data: bytes | None = None


@dataclass
class GroupSubscription:
    subscriptions: dict[str, Subscription]          # member id -> subscription


@dataclass
class GroupAssignment:
    assignments: dict[str, Assignment]              # member id -> assignment


@dataclass
class ConsumerGroupMetadata:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


class ClusterMetadata:
    """Partition counts per topic, and optionally the racks of each partition's replicas."""

    def __init__(self, partitions: Mapping[str, int],
                 racks: Mapping[TopicPartition, frozenset[str]] | None = None):
        self._partitions = dict(partitions)
        self._racks = dict(racks or {})

    def partition_count(self, topic: str) -> int | None:
        return self._partitions.get(topic)

    def topics(self) -> list[str]:
        return sorted(self._partitions)

    def partition_racks(self, tp: TopicPartition) -> frozenset[str]:
        return self._racks.get(tp, frozenset())

    @property
    def has_racks(self) -> bool:
        return bool(self._racks)


class ConsumerPartitionAssignor(ABC):
    """Base of every assignor; ``name`` is what goes on the wire as the protocol name."""

    name: str = ""
    supported_protocols: tuple[RebalanceProtocol, ...] = (RebalanceProtocol.EAGER,)
    version: int = 0

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        return None

    @abstractmethod
    def assign(self, cluster: ClusterMetadata, group_subscription: GroupSubscription) -> GroupAssignment:
        ...

    def on_assignment(self, assignment: Assignment, metadata: ConsumerGroupMetadata) -> None:
        pass


# --------------------------------------------------------------------------------------------
# Shared machinery of the built-in assignors (Kafka's AbstractPartitionAssignor and helpers).
# --------------------------------------------------------------------------------------------

def java_string_key(s: str) -> bytes:
    """Sort key giving Java's ``String.compareTo`` order (UTF-16 code units)."""
    return s.encode("utf-16-be", "surrogatepass")


def java_sorted(strings) -> list[str]:
    """Strings in Java's ``String.compareTo`` order (plain order unless non-BMP chars occur)."""
    strings = list(strings)
    if all(s.isascii() for s in strings):
        return sorted(strings)
    return sorted(strings, key=java_string_key)


def member_order_key(member_id: str, subscription: Subscription) -> tuple:
    """Kafka's ``MemberInfo`` order: static members (with a group instance id) first, sorted by
    instance id, then dynamic members sorted by member id."""
    gid = subscription.group_instance_id
    if gid is not None:
        return (0, java_string_key(gid), java_string_key(member_id))
    return (1, java_string_key(member_id), b"")


@functools.lru_cache(maxsize=1 << 16)
def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` as an unsigned 32-bit int."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def java_hash_table_capacity(size: int) -> int:
    """The table size of a default-constructed ``java.util.HashMap`` after ``size`` puts."""
    cap = 16
    while size > cap * 3 // 4:
        cap *= 2
    return cap


def java_hashmap_order(keys: list[str]) -> list[int]:
    """Indices of ``keys`` (inserted in this order into a ``new HashMap<>()``) in the order the
    map iterates them: by bucket of the spread hash, then insertion order. Kafka's assignors
    iterate member maps in this order, and some of their outcomes depend on it."""
    cap = java_hash_table_capacity(len(keys))
    buckets = []
    for k in keys:
        h = java_string_hash(k)
        buckets.append((h ^ (h >> 16)) & (cap - 1))
    return sorted(range(len(keys)), key=buckets.__getitem__)


class PartitionLayout:
    """Numbers every partition of some topics with a dense int id (a "pid").

    Topics are laid out in name order, each topic's partitions consecutively, so that sorting
    pids sorts partitions by (topic, partition). Assignors work on pids (plain ints, no
    per-partition objects) and convert at the edges, with C-level ``map`` chains.
    """

    __slots__ = ("topics", "counts", "offsets", "total", "_topic_index", "_starts", "_where",
                 "_topic_of", "_part_of")

    def __init__(self, partitions_per_topic: Mapping[str, int]):
        self.topics: list[str] = java_sorted(t for t, n in partitions_per_topic.items() if n and n > 0)
        self.counts: list[int] = [partitions_per_topic[t] for t in self.topics]
        self.offsets: dict[str, int] = {}
        self._topic_index: dict[str, int] = {}
        self._where: dict[str, tuple[int, int]] = {}
        starts = []
        off = 0
        for i, (t, n) in enumerate(zip(self.topics, self.counts)):
            self.offsets[t] = off
            self._topic_index[t] = i
            self._where[t] = (off, n)
            starts.append(off)
            off += n
        self._starts = starts
        self.total = off
        self._topic_of: array | None = None
        self._part_of: array | None = None

    def topic_index(self, topic: str) -> int | None:
        return self._topic_index.get(topic)

    def start(self, topic_index: int) -> int:
        return self._starts[topic_index]

    def pid(self, topic: str, partition: int) -> int | None:
        """The id of a partition, or None when the topic or partition is not in the layout."""
        w = self._where.get(topic)
        if w is None or not 0 <= partition < w[1]:
            return None
        return w[0] + partition

    def topic_of(self, pid: int) -> int:
        return bisect.bisect_right(self._starts, pid) - 1

    def topic_of_array(self):
        """pid -> topic index, an array (a list when small), built on first use."""
        if self._topic_of is None:
            if self.total <= 4096:      # small: plain lists are quicker to make
                self._topic_of = [ti for ti, n in enumerate(self.counts) for _ in range(n)]
                self._part_of = [p for n in self.counts for p in range(n)]
                return self._topic_of
            topic_of = array("i")
            part_of = array("i")
            arange = array("i", range(max(self.counts, default=0)))
            for ti, n in enumerate(self.counts):
                topic_of += array("i", [ti]) * n
                part_of += arange[:n]
            self._topic_of, self._part_of = topic_of, part_of
        return self._topic_of

    def part_of_array(self):
        """pid -> partition number, like ``topic_of_array``."""
        self.topic_of_array()
        return self._part_of

    def pids(self, partitions) -> list[int]:
        """[(topic, partition), ...] -> pids, in order, leaving out those not in the layout."""
        if isinstance(partitions, TopicPartitionGroups):
            groups = partitions.groups
            if not groups:
                return []
            if len(groups) <= 32:
                return self._pids_of_groups(groups)
            topics, lists = zip(*groups)
            where = list(map(self._where.get, topics))
            if None not in where:
                lens = list(map(len, lists))
                flat = list(chain.from_iterable(lists))
                offs = list(chain.from_iterable(map(repeat, map(_first, where), lens)))
                counts = chain.from_iterable(map(repeat, map(_second, where), lens))
                try:
                    if not flat or (min(flat) >= 0 and all(map(int.__lt__, flat, counts))):
                        return list(map(int.__add__, offs, flat))
                except TypeError:
                    pass
            return self._pids_of_groups(groups)
        if not isinstance(partitions, (list, tuple)):
            partitions = list(partitions)
        if not partitions:
            return []
        if len(partitions) <= 32:
            return self._pids_of_pairs(partitions)
        try:
            topics, parts = zip(*partitions)
            offs = list(map(self.offsets.get, topics))
            if None not in offs and min(parts) >= 0:
                counts = map(self._where.__getitem__, topics)
                if all(map(int.__lt__, parts, map(_second, counts))):
                    return list(map(int.__add__, offs, parts))
        except (TypeError, ValueError):
            pass
        return self._pids_of_pairs(partitions)

    def _pids_of_pairs(self, partitions) -> list[int]:
        out = []
        where = self._where.get
        for t, p in partitions:
            w = where(t)
            if w is not None and type(p) is int and 0 <= p < w[1]:
                out.append(w[0] + p)
        return out

    def _pids_of_groups(self, groups) -> list[int]:
        out = []
        where = self._where.get
        for t, parts in groups:
            w = where(t)
            if w is None:
                continue
            off, n = w
            for p in parts:
                if type(p) is int and 0 <= p < n:
                    out.append(off + p)
        return out

    def to_pairs(self, pids, factory=None) -> list:
        """pids -> [(topic, partition), ...] (``factory`` builds each pair from a tuple)."""
        if not pids:
            return []
        topic_of = self.topic_of_array()
        names = map(self.topics.__getitem__, map(topic_of.__getitem__, pids))
        pairs = zip(names, map(self._part_of.__getitem__, pids))
        return list(map(factory, pairs)) if factory is not None else list(pairs)


class TopicPartitionGroups:
    """Partitions grouped by topic, [(topic, [partition, ...]), ...], as user data carries them;
    iterates as (topic, partition) pairs, and converts to pids without per-pair work."""

    __slots__ = ("groups",)

    def __init__(self, groups):
        self.groups = list(groups)

    def __iter__(self):
        for topic, parts in self.groups:
            for p in parts:
                yield (topic, p)

    def __len__(self):
        return sum(len(parts) for _, parts in self.groups)

    def __eq__(self, other):
        return list(self) == list(other)

    def __repr__(self):
        return f"TopicPartitionGroups({self.groups!r})"


_first = operator.itemgetter(0)
_second = operator.itemgetter(1)
_make_tp = functools.partial(tuple.__new__, TopicPartition)


class AbstractPartitionAssignor(ConsumerPartitionAssignor):
    """Kafka's AbstractPartitionAssignor: collects the partition counts of the subscribed topics
    (topics unknown to the cluster, or with no partitions, are left out) and wraps the
    per-member partition lists in :class:`Assignment` objects without user data."""

    def assign(self, cluster: ClusterMetadata, group_subscription: GroupSubscription) -> GroupAssignment:
        subscriptions = group_subscription.subscriptions
        topics: set[str] = set()
        for sub in subscriptions.values():
            topics.update(sub.topics)
        partitions_per_topic = {}
        for topic in topics:
            n = cluster.partition_count(topic)
            if n:
                partitions_per_topic[topic] = n
        raw = self.assign_partitions(partitions_per_topic, subscriptions, cluster)
        return GroupAssignment({member: Assignment(list(raw.get(member, ())))
                                for member in subscriptions})

    @abstractmethod
    def assign_partitions(self, partitions_per_topic: dict[str, int],
                          subscriptions: dict[str, Subscription],
                          cluster: ClusterMetadata | None = None) -> dict[str, list[TopicPartition]]:
        """{member: [TopicPartition, ...]} for every member in ``subscriptions``."""
