"""Kafka's OffsetMetadataManager for classic groups: OffsetCommit, OffsetFetch, OffsetDelete, the
offsets of deleted topics and the offset retention sweep. The offsets live in each group
(``ClassicGroup.offsets``); the group manager (:mod:`.manager`) routes the requests here and
keeps the groups, the log and the timers this uses."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from groupcoord.protocol.errors import ErrorCode

from .. import storage as _st
from .consumer import ConsumerGroup
from .classic import (
    COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE, ClassicGroup, OffsetAndMetadata,
)


_E = ErrorCode
_NONE = 0


def java_string_length(s: str) -> int:
    """``String.length()`` of Java: UTF-16 code units."""
    n = len(s)
    if s.isascii():
        return n
    return n + sum(1 for c in s if ord(c) > 0xFFFF)


def commit_error(topics, code: int) -> dict:
    """An OffsetCommit response giving every partition of ``topics`` the same error."""
    code = int(code)
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [{"partition_index": p["partition_index"], "error_code": code}
                                           for p in t["partitions"]]} for t in topics]}


@dataclass(slots=True)
class OffsetCommitRequest:
    """One OffsetCommit, whatever its version (the handler shims the versions): what the core takes.

    ``topics``: the partitions the API layer let through, [{"name", "partitions": [{"partition_index",
    "committed_offset", "committed_leader_epoch" (-1), "commit_timestamp" (-1, v1 only),
    "committed_metadata"}]}].
    ``generation_id`` -1 and ``member_id`` "": a commit of no member (v0, admin, a simple group).
    ``retention_time_ms``: v2-4 RetentionTimeMs (-1: none).
    ``group_id_not_found``: answer GROUP_ID_NOT_FOUND instead of ILLEGAL_GENERATION for a
    missing group with generation >= 0 (request version >= 9)."""
    group_id: str | None
    topics: list
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    retention_time_ms: int = -1
    group_id_not_found: bool = False

    def error(self) -> int | None:
        """What Kafka's API layer refuses before the coordinator sees it: a null group id."""
        return _E.INVALID_GROUP_ID if self.group_id is None else None


def fetch_error(group_id: str | None, code: int) -> dict:
    """An OffsetFetch group (the v8+ shape) failed as a whole."""
    return {"group_id": group_id, "topics": [], "error_code": int(code)}


@dataclass(slots=True)
class OffsetFetchRequest:
    """One group of an OffsetFetch, whatever its version (the handler shims the versions: v0-7
    ask for one group, v8+ for several, each a request of its own): what the core takes.

    ``topics``: [{"name", "partition_indexes"}], or None for every committed offset.
    ``require_stable`` has no effect (no transactional offsets are pending here);
    ``member_id``/``member_epoch`` are only checked for KIP-848 groups in Kafka."""
    group_id: str | None
    topics: list | None = None
    require_stable: bool = False
    member_id: str | None = None
    member_epoch: int = -1

    def error(self) -> int | None:
        """What Kafka's API layer refuses before the coordinator sees it: a null group id."""
        return _E.INVALID_GROUP_ID if self.group_id is None else None


@dataclass(slots=True)
class OffsetDeleteRequest:
    """One OffsetDelete: what the core takes. ``topics``: the partitions the API layer let through,
    [{"name", "partitions": [{"partition_index"}]}]."""
    group_id: str
    topics: list

    def error(self) -> int | None:
        """What Kafka's API layer refuses before the coordinator sees it: an empty group id."""
        return _E.INVALID_GROUP_ID if not self.group_id else None


class OffsetManager:
    """The offsets of the groups of one :class:`~.manager.GroupCoordinator` (``manager``)."""

    def __init__(self, manager) -> None:
        self.manager = manager
        config = manager.config
        self.offsets_retention_ms = int(config["offsets.retention.minutes"]) * 60_000
        self.offsets_retention_check_interval_ms = int(config["offsets.retention.check.interval.ms"])
        self.offset_metadata_max_bytes = int(config["offset.metadata.max.bytes"])

    def _offset_tombstones(self, group_id: str, pairs) -> None:
        if self.manager._persist:
            self.manager._append(group_id, [(_st.OffsetCommitKey(group_id, t, p), None) for t, p in pairs])

    # ==================================================================== OffsetCommit
    def offset_commit(self, respond: Callable[[dict], None], req: OffsetCommitRequest) -> None:
        """OffsetCommit of a request the API layer validated (:meth:`OffsetCommitRequest.error`)."""
        clock = self.manager._clock           # (see heartbeat_error)
        now = clock()
        group_id, generation_id, member_id = req.group_id, req.generation_id, req.member_id
        group_instance_id, topics = req.group_instance_id, req.topics
        error = None
        group = None
        classic = True
        if self.manager._loading and self.manager._is_loading(group_id):
            error = _E.COORDINATOR_LOAD_IN_PROGRESS
        else:
            group = self.manager._groups.get(group_id)
            if group is None and group_id in self.manager._consumer_groups:
                group = self.manager._consumer_groups[group_id]
                classic = False
                # (group_id_not_found is set from OffsetCommit v9 on: the version a member of this protocol needs)
                error = group.validate_offset_commit(member_id, generation_id, req.group_id_not_found)
            else:
                if group is None:
                    if generation_id < 0:
                        group = self.manager._create_group(group_id, now, "offset_commit")   # a "simple" group
                    else:
                        error = _E.GROUP_ID_NOT_FOUND if req.group_id_not_found else _E.ILLEGAL_GENERATION
                if error is None:
                    error = self._validate_offset_commit(group, member_id, group_instance_id, generation_id)
        if error is not None:
            respond(commit_error(topics, error))
            return
        state = group.state
        if classic and (state == STABLE or state == PREPARING_REBALANCE):
            self.manager._rearm_session(group.group_id, group.members[member_id], now)
        retention_time_ms = req.retention_time_ms
        expire = None if retention_time_ms is None or retention_time_ms == -1 else now + retention_time_ms
        max_len = self.offset_metadata_max_bytes
        offsets = group.offsets
        out_topics = []
        stored = rejected = 0
        persist = self.manager._persist
        records = [] if persist else None
        for t in topics:
            name = t["name"]
            parts_out = []
            parts = None
            for p in t["partitions"]:
                metadata = p.get("committed_metadata")
                if metadata is not None and len(metadata) > max_len // 2 and java_string_length(metadata) > max_len:
                    parts_out.append({"partition_index": p["partition_index"],
                                      "error_code": int(_E.OFFSET_METADATA_TOO_LARGE)})
                    rejected += 1
                    continue
                if parts is None:
                    parts = offsets.get(name)
                    if parts is None:
                        parts = offsets[name] = {}
                ts = p.get("commit_timestamp", -1)
                epoch = p.get("committed_leader_epoch", -1)
                o = parts[p["partition_index"]] = OffsetAndMetadata(
                    p["committed_offset"], -1 if epoch is None else epoch,
                    "" if metadata is None else metadata,
                    now if ts is None or ts == -1 else ts, expire)
                if persist:
                    records.append((_st.OffsetCommitKey(group.group_id, name, p["partition_index"]),
                                    _st.OffsetCommitValue(o.committed_offset, o.leader_epoch, o.metadata,
                                                          o.commit_timestamp, -1 if expire is None else expire)))
                stored += 1
                parts_out.append({"partition_index": p["partition_index"], "error_code": _NONE})
            out_topics.append({"name": name, "partitions": parts_out})
        if self.manager._emit_commits:
            self.manager._event(group, "offset.committed", now, {
                "member": member_id, "instance_id": group_instance_id, "partitions": stored,
                "errors": rejected, "topics": len({t["name"] for t in topics})})
        if records:
            # acknowledged only once written to the operating system
            self.manager._append(group.group_id, records)
        respond({"throttle_time_ms": 0, "topics": out_topics})

    @staticmethod
    def _validate_offset_commit(group: ClassicGroup, member_id: str, instance_id: str | None,
                                generation_id: int) -> ErrorCode | None:
        state = group.state
        if state == DEAD:
            return _E.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and state == EMPTY:
            return None   # admin / manual assignment commits to an empty group
        if generation_id >= 0 or member_id or instance_id is not None:
            error = group.validate_member(member_id, instance_id)
            if error is not None:
                return error
            if generation_id != group.generation_id:
                return _E.ILLEGAL_GENERATION
        elif state != EMPTY:
            return _E.UNKNOWN_MEMBER_ID
        if state == COMPLETING_REBALANCE:
            return _E.REBALANCE_IN_PROGRESS
        return None

    # ==================================================================== OffsetFetch
    def offset_fetch(self, respond: Callable[[dict], None], req: OffsetFetchRequest) -> None:
        """OffsetFetch for one group of a request the API layer validated
        (:meth:`OffsetFetchRequest.error`), answered in the v8+ group shape
        ``{"group_id", "topics": [{"name", "partitions": [...]}], "error_code"}``."""
        group_id, topics = req.group_id, req.topics
        if self.manager._loading and self.manager._is_loading(group_id):
            respond(fetch_error(group_id, _E.COORDINATOR_LOAD_IN_PROGRESS))
            return
        group = self.manager._groups.get(group_id)
        if group is None and group_id in self.manager._consumer_groups:
            group = self.manager._consumer_groups[group_id]
            error = group.validate_offset_fetch(req.member_id, req.member_epoch)
            if error is not None:
                respond(fetch_error(group_id, error))
                return
        if group is not None and group.state == DEAD:
            group = None
        out = []
        if topics is None:
            if group is not None:
                for name, parts in group.offsets.items():
                    out.append({"name": name, "partitions": [
                        {"partition_index": index, "committed_offset": o.committed_offset,
                         "committed_leader_epoch": o.leader_epoch, "metadata": o.metadata, "error_code": _NONE}
                        for index, o in parts.items()]})
        else:
            offsets = group.offsets if group is not None else {}
            for t in topics:
                parts = offsets.get(t["name"])
                parts_out = []
                for index in t["partition_indexes"]:
                    o = parts.get(index) if parts is not None else None
                    if o is None:
                        parts_out.append({"partition_index": index, "committed_offset": -1,
                                          "committed_leader_epoch": -1, "metadata": "", "error_code": _NONE})
                    else:
                        parts_out.append({"partition_index": index, "committed_offset": o.committed_offset,
                                          "committed_leader_epoch": o.leader_epoch, "metadata": o.metadata,
                                          "error_code": _NONE})
                out.append({"name": t["name"], "partitions": parts_out})
        respond({"group_id": group_id, "topics": out, "error_code": _NONE})

    # ==================================================================== OffsetDelete
    def offset_delete(self, respond: Callable[[dict], None], req: OffsetDeleteRequest) -> None:
        """OffsetDelete of a request the API layer validated (:meth:`OffsetDeleteRequest.error`).
        Response ``{"error_code", "throttle_time_ms", "topics"}``."""
        group_id, topics = req.group_id, req.topics
        if self.manager._loading and self.manager._is_loading(group_id):
            respond({"error_code": int(_E.COORDINATOR_LOAD_IN_PROGRESS), "throttle_time_ms": 0, "topics": []})
            return
        group = self.manager._groups.get(group_id)
        if group is None:
            group = self.manager._consumer_groups.get(group_id)
        if group is None or group.state == DEAD:
            respond({"error_code": int(_E.GROUP_ID_NOT_FOUND), "throttle_time_ms": 0, "topics": []})
            return
        if group.state != EMPTY and not group.uses_consumer_protocol():
            respond({"error_code": int(_E.NON_EMPTY_GROUP), "throttle_time_ms": 0, "topics": []})
            return
        out = []
        deleted = 0
        gone = []
        for t in topics:
            name = t["name"]
            if group.is_subscribed_to_topic(name):
                code = int(_E.GROUP_SUBSCRIBED_TO_TOPIC)
                out.append({"name": name, "partitions": [{"partition_index": p["partition_index"], "error_code": code}
                                                         for p in t["partitions"]]})
                continue
            parts = group.offsets.get(name)
            parts_out = []
            for p in t["partitions"]:
                index = p["partition_index"]
                if parts is not None and parts.pop(index, None) is not None:
                    deleted += 1
                    gone.append((name, index))
                parts_out.append({"partition_index": index, "error_code": _NONE})
            if parts is not None and not parts:
                del group.offsets[name]
            out.append({"name": name, "partitions": parts_out})
        if deleted:
            self._offset_tombstones(group_id, gone)
            self.manager._event(group, "offsets.deleted", self.manager._clock(), {"partitions": deleted})
        respond({"error_code": _NONE, "throttle_time_ms": 0, "topics": out})

    def delete_topic_offsets(self, topic: str, partitions: Iterable[int] | None = None) -> int:
        """Drop the committed offsets of a deleted topic (or of some of its partitions) in every
        group, as Kafka's ``onPartitionsDeleted``; returns how many were dropped."""
        now = self.manager._clock()
        wanted = None if partitions is None else set(partitions)
        total = 0
        for group in [*self.manager._groups.values(), *self.manager._consumer_groups.values()]:
            parts = group.offsets.get(topic)
            if not parts:
                continue
            if wanted is None:
                dropped = len(parts)
                gone = [(topic, index) for index in parts]
                del group.offsets[topic]
            else:
                dropped = 0
                gone = []
                for index in wanted:
                    if parts.pop(index, None) is not None:
                        dropped += 1
                        gone.append((topic, index))
                if not parts:
                    del group.offsets[topic]
            self._offset_tombstones(group.group_id, gone)
            if dropped:
                total += dropped
                self.manager._event(group, "offsets.deleted", now, {"partitions": dropped})
        return total

    # ==================================================================== offset retention
    def cleanup_group_metadata(self) -> tuple[int, int]:
        """One retention sweep (Kafka's ``cleanupGroupMetadata``): expire offsets by each group's
        expiration condition, then delete Empty groups left without offsets.

        Runs by itself every ``offsets.retention.check.interval.ms``; returns
        (offsets expired, groups deleted)."""
        now = self.manager._clock()
        retention = self.offsets_retention_ms
        expired_total = deleted_groups = 0
        for group in [*self.manager._groups.values(), *self.manager._consumer_groups.values()]:
            gone = [] if self.manager._persist else None
            all_expired, expired = self._cleanup_expired_offsets(group, now, retention, gone)
            if gone:
                self._offset_tombstones(group.group_id, gone)
            expired_total += expired
            if expired:
                self.manager._event(group, "offsets.expired", now, {"partitions": expired})
            if all_expired and group.state == EMPTY:
                if isinstance(group, ConsumerGroup):
                    self.manager._delete_consumer_group(group, now, "offsets_expired")
                else:
                    self.manager._delete_group(group, now, "offsets_expired")
                deleted_groups += 1
        return expired_total, deleted_groups

    @staticmethod
    def _cleanup_expired_offsets(group: ClassicGroup | ConsumerGroup, now: int, retention: int,
                                 removed: list | None = None) -> tuple[bool, int]:
        """Returns (no offsets left, number expired)."""
        if not group.offsets:
            return True, 0
        state = group.state
        if isinstance(group, ConsumerGroup):
            base_state = None   # ConsumerGroup.offsetExpirationCondition: from the commit time
        elif group.protocol_type is not None:
            if state == EMPTY:
                base_state = group.current_state_timestamp
            elif group.uses_consumer_protocol() and group.subscribed_topics is not None and state == STABLE:
                base_state = None
            else:
                return False, 0
        else:
            base_state = None   # simple group: from the commit time
        all_expired = True
        expired = 0
        for topic in list(group.offsets):
            if group.is_subscribed_to_topic(topic):
                all_expired = False
                continue
            parts = group.offsets[topic]
            for index in list(parts):
                o = parts[index]
                if o.expire_timestamp is not None:
                    gone = now >= o.expire_timestamp
                else:
                    base = base_state if base_state is not None else o.commit_timestamp
                    gone = now - base >= retention
                if gone:
                    del parts[index]
                    if removed is not None:
                        removed.append((topic, index))
                    expired += 1
                else:
                    all_expired = False
            if not parts:
                del group.offsets[topic]
        return all_expired, expired
