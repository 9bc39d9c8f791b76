"""Kafka's OffsetMetadataManager: the committed offsets of every group, by group id, whatever the
group's type; OffsetCommit, OffsetFetch, OffsetDelete, the offsets of deleted topics and the
offset retention sweep.

What depends on the group's type is asked of the group: the member and generation (or member
epoch) checks of a commit or a fetch (``validate_offset_commit``, ``validate_offset_fetch``), whether
it subscribes to a topic, and when its offsets expire (``offset_expiration_condition``). The
state changes only by replaying the OffsetCommit records an operation makes (:meth:`replay`), the
same replay live and at load.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, NamedTuple

from groupcoord.protocol.errors import ErrorCode

from .. import storage as _st
from ..releases import at_least
from .context import GroupContext, entry


_E = ErrorCode
_new = tuple.__new__
_NONE = 0


def java_string_length(s: str) -> int:
    """``String.length()`` of Java: UTF-16 code units."""
    n = len(s)
    if s.isascii():
        return n
    return n + sum(1 for c in s if ord(c) > 0xFFFF)


class OffsetAndMetadata(NamedTuple):
    """One committed offset, as the coordinator keeps it."""

    committed_offset: int
    leader_epoch: int            # -1: none
    metadata: str                # null is stored as ""
    commit_timestamp: int        # ms
    expire_timestamp: int | None = None   # OffsetCommit v2-4 with an explicit retention


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
    """The committed offsets of one coordinator's groups (``ctx``: :class:`~.context.GroupContext`).

    ``simple_group(group_id, now, cause)``: the group a commit outside any group creates (a classic
    "simple" group, as Kafka's ``getOrMaybeCreateClassicGroup``); ``member_committed(group, member_id,
    now)``: a classic group's member's commit counts as its heartbeat; ``delete_group(group, now,
    reason)``: the runtime's deletion of an Empty group the retention sweep left without offsets."""

    def __init__(self, ctx: GroupContext, simple_group: Callable, member_committed: Callable,
                 delete_group: Callable) -> None:
        self.ctx = ctx
        config = ctx.config
        self.offsets_retention_ms = int(config["offsets.retention.minutes"]) * 60_000
        self.offsets_retention_check_interval_ms = int(config["offsets.retention.check.interval.ms"])
        self.offset_metadata_max_bytes = int(config["offset.metadata.max.bytes"])
        self.epochs_by_partition = at_least(ctx.release, "4.3")
        self._simple_group = simple_group
        self._member_committed = member_committed
        self._delete_group = delete_group
        #: group id -> topic -> partition -> OffsetAndMetadata
        self._offsets: dict[str, dict[str, dict[int, OffsetAndMetadata]]] = {}
        self.emit_commits = True

    # ==================================================================== reading
    def of(self, group_id: str) -> dict[str, dict[int, OffsetAndMetadata]]:
        """The group's committed offsets: topic -> partition -> OffsetAndMetadata (empty if none)."""
        return self._offsets.get(group_id, {})

    def count(self, group_id: str) -> int:
        return sum(len(parts) for parts in self._offsets.get(group_id, {}).values())

    def group_ids(self) -> list[str]:
        """The groups with committed offsets."""
        return list(self._offsets)

    # ==================================================================== records
    def replay(self, key: _st.OffsetCommitKey, value: _st.OffsetCommitValue | None) -> None:
        """Kafka's ``OffsetMetadataManager.replay``: an offset committed, or its tombstone. (At load,
        the runtime gives offsets without a group a simple classic group once every record is in.)"""
        self.replay_all(((key, value),))

    def replay_all(self, records) -> None:
        """:meth:`replay` of each record in turn (one call for a commit's records). A value is an
        OffsetAndMetadata (an operation's, kept as is) or the log's OffsetCommitValue (at load)."""
        offsets = self._offsets
        new = _new
        last = parts = None
        for key, value in records:
            group_id, topic, partition = key
            if value is None:
                last = None
                topics = offsets.get(group_id)
                parts = topics.get(topic) if topics is not None else None
                if parts is not None and parts.pop(partition, None) is not None and not parts:
                    del topics[topic]
                    if not topics:
                        del offsets[group_id]
                continue
            if (group_id, topic) != last:       # (a commit's records come by topic: one lookup per topic)
                last = group_id, topic
                topics = offsets.get(group_id)
                if topics is None:
                    topics = offsets[group_id] = {}
                parts = topics.get(topic)
                if parts is None:
                    parts = topics[topic] = {}
            if value.__class__ is not OffsetAndMetadata:
                offset, leader_epoch, metadata, commit_timestamp, expire = value
                # (tuple.__new__: a named tuple without its Python __new__, a third of the cost per offset)
                value = new(OffsetAndMetadata, (offset, leader_epoch, metadata, commit_timestamp,
                                                None if expire == -1 else expire))
            parts[partition] = value

    def _write(self, group_id: str, records: list) -> None:
        """Replay the records, then append them (a commit is acknowledged once written)."""
        self.replay_all(records)
        self.ctx.append(group_id, records)

    def _tombstones(self, group_id: str, pairs) -> None:
        self._write(group_id, [(_st.OffsetCommitKey(group_id, t, p), None) for t, p in pairs])

    def delete_all(self, group_id: str) -> list:
        """The tombstones of every offset of the group (``deleteAllOffsets``), replayed: for the
        runtime to append with the group's own."""
        records = [(_st.OffsetCommitKey(group_id, t, p), None) for t, parts in self.of(group_id).items()
                   for p in parts]
        self.replay_all(records)
        return records

    # ==================================================================== OffsetCommit
    def offset_commit(self, respond: Callable[[dict], None], req: OffsetCommitRequest) -> None:
        """OffsetCommit of a request the API layer validated (:meth:`OffsetCommitRequest.error`)."""
        ctx = self.ctx
        clock = ctx.clock           # (through a local: 3.11 specializes the call)
        now = clock()
        group_id, generation_id, member_id = req.group_id, req.generation_id, req.member_id
        group_instance_id, topics = req.group_instance_id, req.topics
        error = None
        group = None
        if ctx.loading and ctx.is_loading(group_id):       # (a call saved when nothing loads)
            error = _E.COORDINATOR_LOAD_IN_PROGRESS
        else:
            group = ctx.groups.get(group_id)
            if group is None:
                if generation_id < 0:
                    group = self._simple_group(group_id, now, "offset_commit")     # a "simple" group
                else:
                    error = _E.GROUP_ID_NOT_FOUND if req.group_id_not_found else _E.ILLEGAL_GENERATION
            if error is None:
                # (group_id_not_found is set from OffsetCommit v9 on: the version a member of the consumer
                # protocol needs)
                # Kafka 4.3 (KIP-1251): older epochs checked by partition, given the partitions
                by_partition = (topics, ctx.topic_id) if self.epochs_by_partition else (None, None)
                error = group.validate_offset_commit(member_id, group_instance_id, generation_id,
                                                     req.group_id_not_found, *by_partition)
        if error is not None:
            respond(commit_error(topics, error))
            return
        if group.type == "classic":
            self._member_committed(group, member_id, now)
        retention_time_ms = req.retention_time_ms
        expire = None if retention_time_ms is None or retention_time_ms == -1 else now + retention_time_ms
        max_len = self.offset_metadata_max_bytes
        out_topics = []
        records = []
        stored = rejected = 0
        key, value = _st.OffsetCommitKey, OffsetAndMetadata
        new = _new
        for t in topics:
            name = t["name"]
            parts_out = []
            for p in t["partitions"]:
                index = p["partition_index"]
                metadata = p.get("committed_metadata")
                if metadata is not None and len(metadata) > max_len // 2 and java_string_length(metadata) > max_len:
                    parts_out.append({"partition_index": index, "error_code": int(_E.OFFSET_METADATA_TOO_LARGE)})
                    rejected += 1
                    continue
                ts = p.get("commit_timestamp", -1)
                epoch = p.get("committed_leader_epoch", -1)
                # (tuple.__new__ as in replay_all)
                records.append((new(key, (group_id, name, index)),
                                new(value, (p["committed_offset"], -1 if epoch is None else epoch,
                                            "" if metadata is None else metadata,
                                            now if ts is None or ts == -1 else ts, expire))))
                stored += 1
                parts_out.append({"partition_index": index, "error_code": _NONE})
            out_topics.append({"name": name, "partitions": parts_out})
        self.replay_all(records)
        if self.emit_commits:
            ctx.event(group, "offset.committed", now, {
                "member": member_id, "instance_id": group_instance_id, "partitions": stored,
                "errors": rejected, "topics": len({t["name"] for t in topics})})
        if ctx.persist:             # acknowledged once written (tested here too: no call without a store)
            ctx.append(group_id, records)
        respond({"throttle_time_ms": 0, "topics": out_topics})

    # ==================================================================== OffsetFetch
    def offset_fetch(self, respond: Callable[[dict], None], req: OffsetFetchRequest) -> None:
        """OffsetFetch for one group of a request the API layer validated
        (:meth:`OffsetFetchRequest.error`), answered in the v8+ group shape
        ``{"group_id", "topics": [{"name", "partitions": [...]}], "error_code"}``."""
        ctx = self.ctx
        group_id, topics = req.group_id, req.topics
        if ctx.is_loading(group_id):
            respond(fetch_error(group_id, _E.COORDINATOR_LOAD_IN_PROGRESS))
            return
        group = ctx.groups.get(group_id)
        if group is not None:
            error = group.validate_offset_fetch(req.member_id, req.member_epoch)
            if error is not None:
                respond(fetch_error(group_id, error))
                return
        offsets = self._offsets.get(group_id, {}) if group is not None and group.state != "Dead" else {}
        out = []
        if topics is None:
            for name, parts in offsets.items():
                out.append({"name": name, "partitions": [
                    {"partition_index": index, "committed_offset": o.committed_offset,
                     "committed_leader_epoch": o.leader_epoch, "metadata": o.metadata, "error_code": _NONE}
                    for index, o in parts.items()]})
        else:
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
        ctx = self.ctx
        group_id, topics = req.group_id, req.topics
        if ctx.is_loading(group_id):
            respond({"error_code": int(_E.COORDINATOR_LOAD_IN_PROGRESS), "throttle_time_ms": 0, "topics": []})
            return
        group = ctx.groups.get(group_id)
        if group is None or group.state == "Dead":
            respond({"error_code": int(_E.GROUP_ID_NOT_FOUND), "throttle_time_ms": 0, "topics": []})
            return
        error = group.validate_offset_delete()
        if error is not None:
            respond({"error_code": int(error), "throttle_time_ms": 0, "topics": []})
            return
        out = []
        gone = []
        offsets = self.of(group_id)
        for t in topics:
            name = t["name"]
            if group.is_subscribed_to_topic(name):
                code = int(_E.GROUP_SUBSCRIBED_TO_TOPIC)
                out.append({"name": name, "partitions": [{"partition_index": p["partition_index"], "error_code": code}
                                                         for p in t["partitions"]]})
                continue
            parts = offsets.get(name)
            parts_out = []
            for p in t["partitions"]:
                index = p["partition_index"]
                if parts is not None and index in parts and (name, index) not in gone:
                    gone.append((name, index))
                parts_out.append({"partition_index": index, "error_code": _NONE})
            out.append({"name": name, "partitions": parts_out})
        if gone:
            self._tombstones(group_id, gone)
            ctx.event(group, "offsets.deleted", ctx.clock(), {"partitions": len(gone)})
        respond({"error_code": _NONE, "throttle_time_ms": 0, "topics": out})

    def delete_topic_offsets(self, topic: str, partitions: Iterable[int] | None = None) -> int:
        """Drop the committed offsets of a deleted topic (or of some of its partitions) in every
        group, as Kafka's ``onPartitionsDeleted``; returns how many were dropped."""
        ctx = self.ctx
        now = ctx.clock()
        wanted = None if partitions is None else set(partitions)
        total = 0
        for group in list(ctx.groups.values()):
            parts = self.of(group.group_id).get(topic)
            if not parts:
                continue
            gone = [(topic, index) for index in (parts if wanted is None else wanted) if index in parts]
            if gone:
                self._tombstones(group.group_id, gone)
                total += len(gone)
                ctx.event(group, "offsets.deleted", now, {"partitions": len(gone)})
        return total

    # ==================================================================== offset retention
    def schedule_expiration(self) -> None:
        ctx = self.ctx
        ctx.timers.schedule(("offsets-expiry",), ctx.clock() + self.offsets_retention_check_interval_ms,
                            self._on_expiration_timer)

    @entry
    def _on_expiration_timer(self) -> None:
        try:
            self.cleanup_group_metadata()
        finally:
            self.schedule_expiration()

    def cleanup_group_metadata(self) -> tuple[int, int]:
        """One retention sweep (Kafka's ``cleanupGroupMetadata``): expire offsets by each group's
        expiration condition, then delete Empty groups left without offsets (of the types whose
        groups expire: not share groups).

        Runs by itself every ``offsets.retention.check.interval.ms``; returns
        (offsets expired, groups deleted)."""
        ctx = self.ctx
        now = ctx.clock()
        expired_total = deleted_groups = 0
        for group in list(ctx.groups.values()):
            should_expire = getattr(group, "should_expire", None)       # (Kafka's Group.shouldExpire)
            if should_expire is not None and not should_expire():
                continue
            all_expired, gone = self._expired_offsets(group, now)
            if gone:
                self._tombstones(group.group_id, gone)
                expired_total += len(gone)
                ctx.event(group, "offsets.expired", now, {"partitions": len(gone)})
            if all_expired and group.is_empty():
                self._delete_group(group, now, "offsets_expired")
                deleted_groups += 1
        return expired_total, deleted_groups

    def _expired_offsets(self, group, now: int) -> tuple[bool, list]:
        """(no offsets left after the sweep, the (topic, partition)s that expired) (Kafka's
        ``cleanupExpiredOffsets``)."""
        offsets = self._offsets.get(group.group_id)
        if not offsets:
            return True, []
        condition = group.offset_expiration_condition()
        if condition is None:
            return False, []
        retention = self.offsets_retention_ms
        all_expired = True
        gone = []
        for topic, parts in offsets.items():
            if group.is_subscribed_to_topic(topic):
                all_expired = False
                continue
            for index, o in parts.items():
                if o.expire_timestamp is not None:
                    expired = now >= o.expire_timestamp
                else:
                    expired = now - condition(o) >= retention
                if expired:
                    gone.append((topic, index))
                else:
                    all_expired = False
        return all_expired, gone
