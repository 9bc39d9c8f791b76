"""Kafka's OffsetMetadataManager: the committed offsets of every group, by group id, whatever the
group's type; OffsetCommit, OffsetFetch, OffsetDelete, the offsets of deleted topics and the
offset retention sweep.

What depends on the group's type is asked of the group: the member and generation (or member
epoch) checks of a commit or a fetch (``validate_offset_commit``, ``validate_offset_fetch``), whether
it subscribes to a topic, and when its offsets expire (``offset_expiration_condition``). The
state changes only by replaying the OffsetCommit records an operation makes (:meth:`replay`), the
same replay live and at load.

Transactional offset commits (KIP-447, :meth:`OffsetManager.txn_offset_commit`): a TxnOffsetCommit's
offsets are kept pending by producer id (Kafka's ``pendingTransactionalOffsets``, indexed by group and
partition as its ``openTransactions``) until the transaction's marker makes them the committed offsets
(:meth:`OffsetManager.complete_transaction`, commit) or drops them (abort); the records are the offsets
log's TxnOffsetCommit (1000) and TxnMarker (1001) (:mod:`..storage`), replayed live and at load. Kafka
makes a pending offset visible only when no later commit of its partition has overtaken it (it compares
the records' log offsets); here the commit that overtakes it marks it ``superseded`` in its record.
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


def _committed(v) -> OffsetAndMetadata:
    """The committed offset a pending transactional one (a TxnOffsetCommitValue) becomes."""
    return _new(OffsetAndMetadata, (v.offset, v.leader_epoch, v.metadata, v.commit_timestamp,
                                    None if v.expire_timestamp == -1 else v.expire_timestamp))


def _unstable(index: int) -> dict:
    """OffsetFetch's partition with a transactional offset pending, asked with require_stable."""
    return {"partition_index": index, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
            "error_code": int(_E.UNSTABLE_OFFSET_COMMIT)}


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

    def with_topics(self, topics: list) -> "OffsetCommitRequest":
        """The same request of other topics (the simulator's flat lane: one member's commits)."""
        return OffsetCommitRequest(self.group_id, topics, self.generation_id, self.member_id, self.group_instance_id,
                                   self.retention_time_ms, self.group_id_not_found)


def fetch_error(group_id: str | None, code: int) -> dict:
    """An OffsetFetch group (the v8+ shape) failed as a whole."""
    return {"group_id": group_id, "topics": [], "error_code": int(code)}


@dataclass(slots=True)
class OffsetFetchRequest:
    """One group of an OffsetFetch, whatever its version (the handler shims the versions: v0-7
    ask for one group, v8+ for several, each a request of its own): what the core takes.

    ``topics``: [{"name", "partition_indexes"}], or None for every committed offset.
    ``require_stable`` (v7+): a partition with a transactional offset pending answers
    UNSTABLE_OFFSET_COMMIT (Kafka's ``fetchOffsets``/``fetchAllOffsets``);
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
class TxnOffsetCommitRequest:
    """One TxnOffsetCommit, whatever its version (the handler shims the versions): what the core takes.

    ``topics``: the partitions the API layer let through, [{"name", "partitions": [{"partition_index",
    "committed_offset", "committed_leader_epoch" (-1), "committed_metadata"}]}].
    ``generation_id`` -1, ``member_id`` "" and ``group_instance_id`` None (v0-2 carry none of them): a
    commit the group checks no member of (KIP-447)."""
    transactional_id: str
    group_id: str | None
    producer_id: int
    producer_epoch: int
    topics: list
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None

    def error(self) -> int | None:
        """What Kafka's ``GroupCoordinatorService.commitTransactionalOffsets`` refuses before the
        shard sees it: a null or empty group id."""
        return _E.INVALID_GROUP_ID if not self.group_id else None


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
        #: producer id -> group id -> (topic, partition) -> (sequence, TxnOffsetCommitValue): the
        #: transactional offsets pending (Kafka's ``pendingTransactionalOffsets``); the sequence orders
        #: them as their records (Kafka's record offsets)
        self._pending: dict[int, dict[str, dict[tuple[str, int], tuple[int, _st.TxnOffsetCommitValue]]]] = {}
        #: group id -> (topic, partition) -> producer ids with an offset pending (``openTransactions``)
        self._open: dict[str, dict[tuple[str, int], set[int]]] = {}
        #: offsets partition -> producer id -> the latest producer epoch its log holds (the producer
        #: state Kafka's log keeps: an older epoch is INVALID_PRODUCER_EPOCH)
        self._producer_epochs: dict[int, dict[int, int]] = {}
        self._txn_seq = 0

    # ==================================================================== reading
    def of(self, group_id: str) -> dict[str, dict[int, OffsetAndMetadata]]:
        """The group's committed offsets: topic -> partition -> OffsetAndMetadata (empty if none)."""
        return self._offsets.get(group_id, {})

    def count(self, group_id: str) -> int:
        return sum(len(parts) for parts in self._offsets.get(group_id, {}).values())

    def group_ids(self) -> list[str]:
        """The groups with committed offsets."""
        return list(self._offsets)

    # ---- transactional offsets -------------------------------------------------------
    def has_pending_transactional_offsets(self, group_id: str, topic: str | None = None,
                                          partition: int | None = None) -> bool:
        """Kafka's ``hasPendingTransactionalOffsets`` (of one partition) and ``openTransactions.contains``
        (of the group, without a partition)."""
        opened = self._open.get(group_id)
        if opened is None:
            return False
        return topic is None or (topic, partition) in opened

    def pending_offsets(self, producer_id: int, group_id: str | None = None) -> dict:
        """The producer's transactional offsets pending: {(group, topic, partition): OffsetAndMetadata}
        (of one group, or every group)."""
        out = {}
        for gid, parts in self._pending.get(producer_id, {}).items():
            if group_id is None or gid == group_id:
                for (topic, partition), (_, v) in parts.items():
                    out[(gid, topic, partition)] = _committed(v)
        return out

    def open_producers(self, group_id: str) -> set[int]:
        """The producer ids with transactional offsets pending in the group."""
        return {pid for pids in self._open.get(group_id, {}).values() for pid in pids}

    def pending_group_ids(self) -> list[str]:
        """The groups with transactional offsets pending."""
        return list(self._open)

    def producer_epoch(self, offsets_partition: int, producer_id: int) -> int | None:
        """The latest epoch of the producer the offsets partition's log holds, or None."""
        return self._producer_epochs.get(offsets_partition, {}).get(producer_id)

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

    def replay_txn_offset(self, key: _st.TxnOffsetCommitKey, value: _st.TxnOffsetCommitValue | None) -> None:
        """Replay of a TxnOffsetCommit record (Kafka's ``replay`` of an OffsetCommit record of a
        transactional batch): the offset pending in the producer's transaction; a tombstone drops it."""
        producer_id, group_id, topic, partition = key
        tp = (topic, partition)
        if value is None:
            groups = self._pending.get(producer_id)
            parts = groups.get(group_id) if groups is not None else None
            if parts is not None and parts.pop(tp, None) is not None:
                if not parts:
                    del groups[group_id]
                    if not groups:
                        del self._pending[producer_id]
                self._close(group_id, tp, producer_id)
            return
        self._txn_seq += 1
        self._pending.setdefault(producer_id, {}).setdefault(group_id, {})[tp] = (self._txn_seq, value)
        self._open.setdefault(group_id, {}).setdefault(tp, set()).add(producer_id)
        epochs = self._producer_epochs.setdefault(self.ctx.partition_of(group_id), {})
        if value.producer_epoch > epochs.get(producer_id, -1):
            epochs[producer_id] = value.producer_epoch

    def _close(self, group_id: str, tp: tuple, producer_id: int) -> None:
        opened = self._open.get(group_id)
        pids = opened.get(tp) if opened is not None else None
        if pids is not None:
            pids.discard(producer_id)
            if not pids:
                del opened[tp]
                if not opened:
                    del self._open[group_id]

    def replay_marker(self, offsets_partition: int, key: _st.TxnMarkerKey, value: _st.TxnMarkerValue | None) -> dict:
        """Replay of a transaction marker in an offsets partition (Kafka's
        ``OffsetMetadataManager.replayEndTransactionMarker``): the producer's pending offsets of the
        partition's groups become their committed offsets (commit), those a later commit overtook
        excepted, or are dropped (abort). Returns, by group id, (the offsets made visible as
        [(topic, partition, OffsetAndMetadata)], how many were pending)."""
        producer_id = key.producer_id
        result: dict = {}
        if value is None:
            return result
        epochs = self._producer_epochs.setdefault(offsets_partition, {})
        if value.producer_epoch > epochs.get(producer_id, -1):
            epochs[producer_id] = value.producer_epoch
        groups = self._pending.get(producer_id)
        if groups is None:
            return result           # (Kafka: no pending offsets, the marker is ignored)
        commit = value.control_type == 1
        partition_of = self.ctx.partition_of
        for group_id in [g for g in groups if partition_of(g) == offsets_partition]:
            parts = groups.pop(group_id)
            visible = []
            for tp, (seq, v) in parts.items():
                self._close(group_id, tp, producer_id)
                if not commit or v.superseded:
                    continue
                visible.append((tp[0], tp[1], _committed(v)))
                # the offsets other producers wrote before this one are overtaken by it
                for other in self._open.get(group_id, {}).get(tp, ()):
                    entry = self._pending[other][group_id][tp]
                    if entry[0] < seq and not entry[1].superseded:
                        self._pending[other][group_id][tp] = (entry[0], entry[1]._replace(superseded=True))
            if visible:
                self.replay_all([((group_id, t, p), o) for t, p, o in visible])
            result[group_id] = (visible, len(parts))
        if not groups:
            del self._pending[producer_id]
        return result

    def _pending_tombstones(self, group_id: str, pairs) -> list:
        """The TxnOffsetCommit tombstones of the offsets pending in these (topic, partition)s of the group
        (what goes with their OffsetCommit tombstones, so that compaction keeps no pending offset)."""
        opened = self._open.get(group_id)
        if not opened:
            return []
        key = _st.TxnOffsetCommitKey
        return [(key(pid, group_id, t, p), None) for t, p in pairs for pid in sorted(opened.get((t, p), ()))]

    def _write(self, group_id: str, records: list) -> None:
        """Replay the records, then append them (a commit is acknowledged once written)."""
        self.replay_all(records)
        self.ctx.append(group_id, records)

    def _tombstones(self, group_id: str, pairs) -> None:
        """The tombstones of these offsets of the group, and of the transactional offsets pending
        there (Kafka's replay of a tombstone drops them too)."""
        pairs = list(pairs)
        pending = self._pending_tombstones(group_id, pairs)
        records = [(_st.OffsetCommitKey(group_id, t, p), None) for t, p in pairs]
        self.replay_all(records)
        for key, value in pending:
            self.replay_txn_offset(key, value)
        self.ctx.append(group_id, records + pending)

    def delete_all(self, group_id: str) -> list:
        """The tombstones of every offset of the group (``deleteAllOffsets``: the committed ones and
        those of partitions with only transactional offsets pending, with the pending ones' own),
        replayed: for the runtime to append with the group's own."""
        committed = self.of(group_id)
        pairs = [(t, p) for t, parts in committed.items() for p in parts]
        pairs += [(t, p) for t, p in self._open.get(group_id, ()) if p not in committed.get(t, ())]
        pending = self._pending_tombstones(group_id, pairs)
        records = [(_st.OffsetCommitKey(group_id, t, p), None) for t, p in pairs]
        self.replay_all(records)
        for key, value in pending:
            self.replay_txn_offset(key, value)
        return records + pending

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
        if self._open and group_id in self._open:      # (transactional offsets pending: a rare path)
            records += self._supersede(group_id, records)
        if self.emit_commits:
            ctx.event(group, "offset.committed", now, {
                "member": member_id, "instance_id": group_instance_id, "partitions": stored,
                "errors": rejected, "topics": len({t["name"] for t in topics})})
        if ctx.persist:             # acknowledged once written (tested here too: no call without a store)
            ctx.append(group_id, records)
        respond({"throttle_time_ms": 0, "topics": out_topics})

    def commit_offsets(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
                       offsets: list) -> bool:
        """:meth:`offset_commit` of a member's commit, without a request or an answer, where it
        stores every partition and answers no error: ``offsets`` [(topic, partition, offset, leader
        epoch or -1, metadata or None)] in the request's order, with no commit timestamp and no
        retention time (-1: the simulator's steady state). False, nothing done, where
        offset_commit would answer an error, reject a partition, or do more (the group loading,
        gone or not a classic group, transactional offsets pending): offset_commit answers it."""
        ctx = self.ctx
        if ctx.loading and ctx.is_loading(group_id):
            return False
        group = ctx.groups.get(group_id)
        if (group is None or group.type != "classic" or (self._open and group_id in self._open)
                or group.validate_offset_commit(member_id, instance_id, generation_id) is not None):
            return False
        max_len = self.offset_metadata_max_bytes
        for _, _, _, _, metadata in offsets:
            if metadata is not None and len(metadata) > max_len // 2 and java_string_length(metadata) > max_len:
                return False
        clock = ctx.clock
        now = clock()
        self._member_committed(group, member_id, now)
        key, value, new = _st.OffsetCommitKey, OffsetAndMetadata, _new     # (as offset_commit's loop)
        records = [(new(key, (group_id, topic, partition)),
                    new(value, (offset, epoch, "" if metadata is None else metadata, now, None)))
                   for topic, partition, offset, epoch, metadata in offsets]
        self.replay_all(records)
        if self.emit_commits:
            ctx.event(group, "offset.committed", now, {
                "member": member_id, "instance_id": instance_id, "partitions": len(records), "errors": 0,
                "topics": len({o[0] for o in offsets})})
        if ctx.persist:
            ctx.append(group_id, records)
        return True

    def _supersede(self, group_id: str, records: list) -> list:
        """The pending transactional offsets a commit of their partitions overtook (Kafka leaves them
        out when their transaction commits: their record offsets are below the commit's), marked
        so in their records, replayed: the records to append after the commit's."""
        opened = self._open[group_id]
        out = []
        for key, _ in records:
            tp = (key[1], key[2])
            for pid in sorted(opened.get(tp, ())):
                v = self._pending[pid][group_id][tp][1]
                if not v.superseded:
                    out.append((_st.TxnOffsetCommitKey(pid, group_id, tp[0], tp[1]), v._replace(superseded=True)))
        for key, value in out:
            self.replay_txn_offset(key, value)
        return out

    # ==================================================================== TxnOffsetCommit
    def txn_offset_commit(self, respond: Callable[[dict], None], req: TxnOffsetCommitRequest) -> None:
        """TxnOffsetCommit of a request the API layer validated and the transaction coordinator
        verified (Kafka's ``OffsetMetadataManager.commitTransactionalOffset``): the offsets are kept
        pending in the producer's transaction, none visible until its commit marker."""
        ctx = self.ctx
        now = ctx.clock()
        group_id, topics = req.group_id, req.topics
        if ctx.is_loading(group_id):
            respond(commit_error(topics, _E.COORDINATOR_LOAD_IN_PROGRESS))
            return
        epoch = self.producer_epoch(ctx.partition_of(group_id), req.producer_id)
        if epoch is not None and req.producer_epoch < epoch:
            # (the log refuses the transactional batch of an older epoch: ProducerAppendInfo.checkProducerEpoch)
            respond(commit_error(topics, _E.INVALID_PRODUCER_EPOCH))
            return
        group = ctx.groups.get(group_id)
        if group is None:
            if req.generation_id >= 0:
                respond(commit_error(topics, _E.ILLEGAL_GENERATION))
                return
            group = self._simple_group(group_id, now, "offset_commit")     # a "simple" group
        by_partition = (topics, ctx.topic_id) if self.epochs_by_partition else (None, None)
        error = group.validate_offset_commit(req.member_id, req.group_instance_id, req.generation_id, False,
                                             *by_partition, transactional=True)
        if error == _E.STALE_MEMBER_EPOCH:
            error = _E.ILLEGAL_GENERATION       # (validateTransactionalOffsetCommit)
        if error is not None:
            respond(commit_error(topics, error))
            return
        max_len = self.offset_metadata_max_bytes
        key, value = _st.TxnOffsetCommitKey, _st.TxnOffsetCommitValue
        producer_id, producer_epoch = req.producer_id, req.producer_epoch
        records = []
        out_topics = []
        rejected = 0
        for t in topics:
            name = t["name"]
            parts_out = []
            for p in t["partitions"]:
                index = p["partition_index"]
                metadata = p.get("committed_metadata")
                if metadata is not None and java_string_length(metadata) > max_len:
                    parts_out.append({"partition_index": index, "error_code": int(_E.OFFSET_METADATA_TOO_LARGE)})
                    rejected += 1
                    continue
                leader_epoch = p.get("committed_leader_epoch", -1)
                records.append((key(producer_id, group_id, name, index),
                                value(producer_epoch, p["committed_offset"], -1 if leader_epoch is None else leader_epoch,
                                      "" if metadata is None else metadata, now, -1)))
                parts_out.append({"partition_index": index, "error_code": _NONE})
            out_topics.append({"name": name, "partitions": parts_out})
        for k, v in records:
            self.replay_txn_offset(k, v)
        ctx.event(group, "offsets.transactional_commit", now, {
            "member": req.member_id, "instance_id": req.group_instance_id, "producer_id": producer_id,
            "producer_epoch": producer_epoch, "partitions": len(records), "errors": rejected,
            "topics": len({t["name"] for t in topics})})
        ctx.append(group_id, records)
        respond({"throttle_time_ms": 0, "topics": out_topics})

    def complete_transaction(self, offsets_partition: int, producer_id: int, producer_epoch: int,
                             commit: bool, coordinator_epoch: int = 0) -> int:
        """The transaction's marker reached the offsets partition (Kafka's
        ``GroupCoordinatorService.completeTransaction``): the producer's pending offsets of the
        partition's groups become visible (commit) or are dropped (abort). Appended as one: the
        marker, an OffsetCommit record per offset made visible, the other producers' offsets this
        commit overtook (marked superseded), then the tombstones of the producer's pending offsets.
        Returns an error code: INVALID_PRODUCER_EPOCH for an epoch older than the one the partition's
        log holds (the log's check of a marker), COORDINATOR_LOAD_IN_PROGRESS while it loads."""
        ctx = self.ctx
        if offsets_partition in ctx.loading:
            return int(_E.COORDINATOR_LOAD_IN_PROGRESS)
        epoch = self.producer_epoch(offsets_partition, producer_id)
        if epoch is not None and producer_epoch < epoch:
            return int(_E.INVALID_PRODUCER_EPOCH)
        now = ctx.clock()
        partition_of = ctx.partition_of
        pending = {g: list(parts) for g, parts in self._pending.get(producer_id, {}).items()
                   if partition_of(g) == offsets_partition}
        # the other producers' offsets of these partitions not yet overtaken (the commit may overtake them)
        others = [(g, tp, pid) for g, tps in pending.items() for tp in tps
                  for pid in sorted(self._open[g][tp]) if pid != producer_id
                  and not self._pending[pid][g][tp][1].superseded]
        marker = (_st.TxnMarkerKey(producer_id), _st.TxnMarkerValue(producer_epoch, 1 if commit else 0,
                                                                    coordinator_epoch))
        result = self.replay_marker(offsets_partition, *marker)
        records = [marker]
        for group_id, visible_pending in result.items():
            records += [(_st.OffsetCommitKey(group_id, t, p), o) for t, p, o in visible_pending[0]]
        for group_id, tp, pid in others:
            v = self._pending[pid][group_id][tp][1]
            if v.superseded:
                records.append((_st.TxnOffsetCommitKey(pid, group_id, *tp), v))
        for group_id, tps in pending.items():
            records += [(_st.TxnOffsetCommitKey(producer_id, group_id, *tp), None) for tp in tps]
        if ctx.persist:
            ctx.store.append(offsets_partition, records)
        for group_id, (visible, count) in result.items():
            group = ctx.groups.get(group_id)
            if group is None:
                continue
            if commit:
                ctx.event(group, "offsets.transaction_committed", now, {
                    "producer_id": producer_id, "producer_epoch": producer_epoch, "partitions": len(visible),
                    "superseded": count - len(visible)})
            else:
                ctx.event(group, "offsets.transaction_aborted", now, {
                    "producer_id": producer_id, "producer_epoch": producer_epoch, "partitions": count})
        return _NONE

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
        live = group is not None and group.state != "Dead"
        offsets = self._offsets.get(group_id, {}) if live else {}
        # (Kafka's fetchOffsets/fetchAllOffsets: with require_stable, a partition with a transactional
        # offset pending answers UNSTABLE_OFFSET_COMMIT; an all-topics fetch lists committed ones only)
        opened = self._open.get(group_id) if req.require_stable and live else None
        out = []
        if topics is None:
            for name, parts in offsets.items():
                out.append({"name": name, "partitions": [
                    _unstable(index) if opened and (name, index) in opened else
                    {"partition_index": index, "committed_offset": o.committed_offset,
                     "committed_leader_epoch": o.leader_epoch, "metadata": o.metadata, "error_code": _NONE}
                    for index, o in parts.items()]})
        else:
            for t in topics:
                parts = offsets.get(t["name"])
                parts_out = []
                for index in t["partition_indexes"]:
                    o = parts.get(index) if parts is not None else None
                    if opened and (t["name"], index) in opened:
                        parts_out.append(_unstable(index))
                    elif o is None:
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
                if (parts is not None and index in parts or self.has_pending_transactional_offsets(
                        group_id, name, index)) and (name, index) not in gone:
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
            opened = self._open.get(group.group_id)
            if opened:         # (onTopicsDeleted: the pending transactional offsets of the topic too)
                parts = dict.fromkeys([*(parts or ()), *(p for t, p in opened if t == topic)])
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
        opened = self._open.get(group.group_id)
        if not offsets:
            return not opened, []
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
                # (an offset with a transactional offset pending does not expire yet)
                if expired and not (opened and (topic, index) in opened):
                    gone.append((topic, index))
                else:
                    all_expired = False
        # (nor is a group with transactional offsets pending deleted)
        return all_expired and not opened, gone
