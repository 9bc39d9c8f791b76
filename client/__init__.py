"""groupcoord's client library: Kafka's consumer-group member, sans-I/O and over asyncio.

- :class:`Member` (``member.py``): Kafka's ConsumerCoordinator as a pure object: actions out,
  responses and time in.
- :class:`GroupConsumer` (``consumer.py``): the asyncio driver; :class:`BrokerConnection`
  (``connection.py``) one Kafka connection.
- :class:`ShareMember` (``member/share.py``): Kafka's share consumer (KIP-932) as a pure object;
  :class:`ShareConsumer` (``share_consumer.py``) its asyncio driver.
- :class:`ConsumerConfig` (``consumer_config.py``): Kafka's consumer configs and defaults
  (:class:`ShareConsumerConfig` a share consumer's).
- ``partitioner.py``: Kafka's murmur2 and default (sticky) partitioner.
- ``assignors/``: the partition assignors.
"""
from .consumer_config import CONSUMER_CONFIGS, ConfigError, ConsumerConfig, ShareConsumerConfig
from .member import (
    CLIENT_VERSIONS, Action, Closed, CommitCompleted, CommitFailedError, Connect, ConsumerRecord, Disconnect,
    ErrorRaised, FatalConsumerError, IllegalStateError, Member, MemberState, NoOffsetForPartitionError,
    OffsetAndMetadata, OffsetsFetched, PartitionsAssigned, PartitionsLost, PartitionsRevoked, RebalanceCallback,
    RebalanceInProgressError, RetriableCommitFailedError, SendRequest, UnsupportedOperationError,
    choose_rebalance_protocol,
)
from .member.share import ShareMember, ShareState
from .member.share_actions import (
    AcknowledgeType, AcknowledgementsCommitted, ShareCommitCompleted, ShareRecord,
)
from .partitioner import DefaultPartitioner, StickyPartitionCache, murmur2, partition_for_key, to_positive

__all__ = [
    "CLIENT_VERSIONS", "CONSUMER_CONFIGS", "Action", "BrokerConnection", "Closed", "CommitCompleted",
    "CommitFailedError", "ConfigError", "Connect", "ConsumerConfig", "ConsumerRecord", "DefaultPartitioner",
    "Disconnect", "ErrorRaised", "FatalConsumerError", "GroupConsumer", "IllegalStateError", "Member",
    "MemberState", "NoOffsetForPartitionError", "OffsetAndMetadata", "OffsetsFetched", "PartitionsAssigned",
    "PartitionsLost", "PartitionsRevoked", "RebalanceCallback", "RebalanceInProgressError",
    "RetriableCommitFailedError", "SendRequest", "StickyPartitionCache", "AcknowledgeType",
    "AcknowledgementsCommitted", "ShareCommitCompleted", "ShareConsumer", "ShareConsumerConfig", "ShareMember",
    "ShareRecord", "ShareState", "UnsupportedOperationError", "choose_rebalance_protocol", "murmur2",
    "partition_for_key", "to_positive",
]


def __getattr__(name: str):
    # the asyncio driver is imported on first use: the sans-I/O core does not need asyncio
    if name == "GroupConsumer":
        from .consumer import GroupConsumer
        return GroupConsumer
    if name == "ShareConsumer":
        from .share_consumer import ShareConsumer
        return ShareConsumer
    if name == "BrokerConnection":
        from .connection import BrokerConnection
        return BrokerConnection
    raise AttributeError(name)
