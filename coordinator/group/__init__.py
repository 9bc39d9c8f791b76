"""The group coordinator, split as Kafka's group-coordinator module is: the group manager
(:mod:`.manager`, Kafka's GroupMetadataManager: the groups of a coordinator, their records and
loading, the classic protocol's JoinGroup, SyncGroup, Heartbeat and LeaveGroup, DescribeGroups,
ListGroups, DeleteGroups), the classic group (:mod:`.classic`, ClassicGroup: a group's members and
the transitions of its state machine) and the offset manager (:mod:`.offsets`,
OffsetMetadataManager: commits, fetches, deletions, retention)."""
from .classic import ClassicGroup, GroupState, Member, OffsetAndMetadata
from .manager import GroupCoordinator, join_error, sync_error

__all__ = ["ClassicGroup", "GroupCoordinator", "GroupState", "Member", "OffsetAndMetadata", "join_error",
           "sync_error"]
