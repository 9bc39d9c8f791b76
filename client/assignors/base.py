"""Kafka's ConsumerPartitionAssignor interface, in Python.

An assignor runs on the group leader: it gets every member's subscription and the
cluster's partition counts and returns every member's assignment. Members give it
data through ``subscription_user_data`` and learn the result in ``on_assignment``.
"""
from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
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
