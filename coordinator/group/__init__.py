"""The group coordinator, split as Kafka's group-coordinator module is: the runtime
(:mod:`.runtime`: one registry of groups of every type, loading by replay, routing, ListGroups,
DeleteGroups and the online migration between types), one package per group type (:mod:`.classic`,
:mod:`.consumer`: the group, its manager, its records), and the offset manager (:mod:`.offsets`:
every group's committed offsets, by group id). A type's manager gets a narrow context
(:mod:`.context`), not the runtime."""
from .classic.group import ClassicGroup, GroupState, Member
from .classic.requests import join_error, sync_error
from .offsets import OffsetAndMetadata
from .runtime import GroupCoordinator

__all__ = ["ClassicGroup", "GroupCoordinator", "GroupState", "Member", "OffsetAndMetadata", "join_error",
           "sync_error"]
