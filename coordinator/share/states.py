"""The share coordinator's state of every share-partition (Kafka's ``__share_group_state``), sans-I/O.

Kafka keeps it in a share coordinator the share-partition leaders and the group coordinator reach through
its ``Persister`` (InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState,
DeleteShareGroupState). Here it is one object the two sides call directly: the group coordinator's side
as its :class:`~..group.share.manager.SharePartitionStates` (:meth:`ShareStates.initialize`,
:meth:`ShareStates.delete`), the share-partition leader's through :meth:`ShareStates.read` and
:meth:`ShareStates.write`.

Each share-partition's state is a :class:`~.partition.ShareSnapshot` keyed by (group id, topic id,
partition); a write is merged into it as the share coordinator merges a ShareUpdate. With a ``log`` (a
callable taking the key, ``"snapshot"`` and the share-partition's whole new state, or ``"delete"`` and
None), every change is handed to it before it takes effect, so a durable store can keep the latest state
of each share-partition and :meth:`ShareStates.restore` bring them back; an exception from the log fails
the change (a write's exception fails the acknowledgement that made it).

Fencing as Kafka's share coordinator: an initialize or a write with a state epoch older than the kept one
is FENCED_STATE_EPOCH, a write with a leader epoch older than the kept one FENCED_LEADER_EPOCH, a write to
a share-partition nobody initialized INVALID_REQUEST.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Hashable, Iterable

from groupcoord.protocol.errors import ErrorCode, KafkaError

from .partition import PartitionStateBatchData, ShareSnapshot

__all__ = ["ShareStates", "StateKey"]

#: (group id, topic id, partition)
StateKey = tuple[str, Hashable, int]


class ShareStates:
    """Every share-partition's persisted state (see the module).

    ``on_delete``: called with the keys whose state went (a group's offsets deleted, the group deleted)
    or was initialized afresh over a kept one (AlterShareGroupOffsets), so that the share-partition
    leaders drop what they hold of them and load the new state when next asked."""

    def __init__(self, *, clock: Callable[[], int], log: Callable[[StateKey, str, object], None] | None = None,
                 on_delete: Callable[[list[StateKey]], None] | None = None) -> None:
        self._clock = clock
        self.log = log
        self.on_delete = on_delete
        self._states: dict[StateKey, ShareSnapshot] = {}

    def __len__(self) -> int:
        return len(self._states)

    def keys(self) -> list[StateKey]:
        return list(self._states)

    def of_group(self, group_id: str) -> dict[StateKey, ShareSnapshot]:
        """The states of one group's share-partitions."""
        return {k: s for k, s in self._states.items() if k[0] == group_id}

    # ---- the group coordinator's side (SharePartitionStates) ----

    def initialize(self, group_id: str, state_epoch: int, partitions: dict, start_offsets: dict | None = None,
                   *, complete_count_known: bool = False) -> int:
        """InitializeShareGroupState: each partition ({topic id: partitions}) starts afresh at ``state_epoch``
        with start offset -1 (its leader picks the start offset from share.auto.offset.reset), or the one
        ``start_offsets`` ({topic id: {partition: start offset}}, AlterShareGroupOffsets) gives it; with
        ``complete_count_known`` (Kafka 4.3's ShareGroupOffset.fromRequest) a share-partition given a start
        offset has delivery complete count 0, else -1 (unknown); the leader epoch is 0 (Kafka's
        ShareGroupOffset.UNINITIALIZED_EPOCH). A kept state is replaced (its snapshot epoch bumped) and its
        key handed to ``on_delete``."""
        now = self._clock()
        for topic_id, indexes in partitions.items():
            for p in indexes:
                key = (group_id, topic_id, p)
                kept = self._states.get(key)
                if kept is not None and state_epoch < kept.state_epoch:
                    return int(ErrorCode.FENCED_STATE_EPOCH)
        replaced = []
        try:
            for topic_id, indexes in partitions.items():
                for p in sorted(indexes):
                    key = (group_id, topic_id, p)
                    start = (start_offsets or {}).get(topic_id, {}).get(p, -1)
                    kept = self._states.get(key)
                    snapshot = ShareSnapshot(state_epoch=state_epoch, start_offset=start, leader_epoch=0,
                                             delivery_complete_count=0 if complete_count_known and start != -1
                                             else -1,
                                             snapshot_epoch=kept.snapshot_epoch + 1 if kept is not None else 0,
                                             create_timestamp=now, write_timestamp=now)
                    self._record(key, "snapshot", snapshot)
                    self._states[key] = snapshot
                    if kept is not None:
                        replaced.append(key)
        except OSError:         # (not kept: those before it are, the share coordinator's write failed)
            return int(ErrorCode.UNKNOWN_SERVER_ERROR)
        finally:
            if replaced and self.on_delete is not None:
                self.on_delete(replaced)
        return 0

    def delete(self, group_id: str, partitions: dict) -> int:
        """DeleteShareGroupState: the group's state of these partitions ({topic id: partitions}) goes."""
        gone = [(group_id, topic_id, p) for topic_id, indexes in partitions.items() for p in sorted(indexes)
                if (group_id, topic_id, p) in self._states]
        done = []
        try:
            for key in gone:
                self._record(key, "delete", None)
                del self._states[key]
                done.append(key)
        except OSError:
            return int(ErrorCode.UNKNOWN_SERVER_ERROR)
        finally:
            if done and self.on_delete is not None:
                self.on_delete(done)
        return 0

    # ---- the share-partition leader's side ----

    def read(self, key: StateKey) -> ShareSnapshot | None:
        """ReadShareGroupState: the kept state, None when nobody initialized it."""
        return self._states.get(key)

    def write(self, key: StateKey, write: PartitionStateBatchData) -> None:
        """WriteShareGroupState: merge a write (raises KafkaError when fenced or uninitialized)."""
        kept = self._states.get(key)
        if kept is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Share partition {_name(key)} is not initialized")
        if write.state_epoch < kept.state_epoch:
            raise KafkaError(ErrorCode.FENCED_STATE_EPOCH, f"Share partition {_name(key)} has a newer state epoch")
        if write.leader_epoch != -1 and write.leader_epoch < kept.leader_epoch:
            raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH, f"Share partition {_name(key)} has a newer leader epoch")
        merged = kept.merge(write)
        merged = replace(merged, state_epoch=write.state_epoch, write_timestamp=self._clock())
        self._record(key, "snapshot", merged)
        self._states[key] = merged

    def restore(self, states: Iterable[tuple[StateKey, ShareSnapshot]]) -> None:
        """Whole states read back (a store's compacted form)."""
        for key, snapshot in states:
            self._states[key] = snapshot

    def _record(self, key: StateKey, kind: str, value: object) -> None:
        if self.log is not None:
            self.log(key, kind, value)


def _name(key: StateKey) -> str:
    return f"{key[0]}-{key[1]}:{key[2]}"
