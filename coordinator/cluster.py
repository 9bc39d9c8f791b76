"""The emulated cluster: nodes, topics, partitions and their in-memory logs.

Sans-I/O like the rest of the core: nothing here touches sockets or time except
through the clock and timers it is given. Partition leadership is spread over the
nodes round-robin (partition p of every topic is led by node ``p % nodes``), and so
is leadership of the offsets topic, which decides each group's coordinator.

Every partition is treated as replicated on every node, its replicas in ring order from
its preferred leader (``p % nodes``, ``p+1``, ...). When a node goes down, each partition it
led gets the next live replica as leader, as Kafka's controller would elect it; its groups
then have a new coordinator. Leader epochs stay 0: a new epoch makes clients validate their
positions with OffsetForLeaderEpoch, which groupcoord does not speak (kafka-python then stops
fetching), and the logs, all in one process, need no truncation anyway. A node that comes back leads nothing
until a preferred-leader election (:meth:`Cluster.elect_preferred_leaders`) gives it back the
partitions it prefers, as Kafka's ``auto.leader.rebalance.enable`` does eventually.

Durable topics: with a ``store`` (a :class:`~.storage.LogStore`; set by the service), every
change of the topics (created, deleted, partitions added) is written to it before it is made,
and so are a produce's records (segment files, :mod:`.segments`) and the end offset it moves a
partition to, before the produce is acknowledged. :meth:`Cluster.restore_topics` brings them back
at start. Retention (:meth:`Cluster.apply_retention`, on the service's timer) deletes whole segments
as Kafka does, by ``retention.ms`` and ``retention.bytes``.

Idempotent and transactional producers (:mod:`.producers`): each partition keeps its producers' state
(epochs, the last five batches' sequences, ongoing transactions, aborted transactions), checked by
:meth:`Cluster.append` and moved by the transaction markers :meth:`Cluster.write_marker` appends. Its last
stable offset bounds read_committed fetches. The state is not stored apart: a restart replays it from
the restored batches (markers included); retention keeps the producers, as Kafka's producer snapshots do,
and drops the aborted transactions whose markers it deleted.
"""
from __future__ import annotations

import bisect
import re
import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterable

import structlog

from groupcoord.protocol import records
from groupcoord.protocol.errors import ErrorCode

from .producers import (CompletedTxn, Origin, ProducerAppendInfo, ProducerStateError, ProducerStateManager,
                        end_txn_marker_key, end_txn_marker_value, parse_end_txn_marker)

logger = structlog.get_logger("groupcoord.cluster")

OFFSETS_TOPIC = "__consumer_offsets"
MAX_TOPIC_NAME = 249
#: the most partitions a topic may have here (Kafka has no such limit, but a request for a billion
#: would hold the event loop and the memory: refused with INVALID_PARTITIONS)
MAX_PARTITIONS = 100_000
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")


def java_string_hash(s: str) -> int:
    """Java's String.hashCode: 31*h + c over UTF-16 code units, as a signed int32."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's Utils.abs: abs, except that Integer.MIN_VALUE maps to 0."""
    return 0 if n == -(2**31) else abs(n)


def partition_for(key: str, partitions: int) -> int:
    """The offsets-topic partition of a group: abs(javaHash(group_id)) % partitions."""
    return kafka_abs(java_string_hash(key)) % partitions


def validate_topic_name(name: str) -> str | None:
    """None when legal, else why not (Kafka's Topic.validate)."""
    if not name:
        return "topic name is empty"
    if name in (".", ".."):
        return "topic name cannot be '.' or '..'"
    if len(name) > MAX_TOPIC_NAME:
        return f"topic name is longer than {MAX_TOPIC_NAME} characters"
    if not _LEGAL_TOPIC.match(name):
        return "topic name may only contain ASCII alphanumerics, '.', '_' and '-'"
    return None


@dataclass
class Node:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    up: bool = True


class Segment:
    """One segment of a partition's log (Kafka's LogSegment, in memory): its base offset, where its
    batches start in the log's lists, its size and its largest record timestamp."""

    __slots__ = ("base_offset", "first", "size_bytes", "max_timestamp")

    def __init__(self, base_offset: int, first: int) -> None:
        self.base_offset = base_offset
        self.first = first
        self.size_bytes = 0
        self.max_timestamp = -1


class PartitionLog:
    """Record batches of one partition, in memory, at the offsets :class:`Cluster` gives them, in
    segments (rolled at ``segment.bytes``; retention deletes whole segments from the oldest, as Kafka's
    log does)."""

    __slots__ = ("batches", "bases", "lasts", "log_start_offset", "log_end_offset", "size_bytes", "segments",
                 "producer_state")

    def __init__(self, start_offset: int = 0) -> None:
        self.batches: list[bytes] = []
        self.bases: list[int] = []
        self.lasts: list[int] = []
        self.log_start_offset = start_offset
        self.log_end_offset = start_offset
        self.size_bytes = 0
        self.segments: list[Segment] = []
        #: the producers that wrote here (idempotent or transactional), made at their first batch
        self.producer_state: ProducerStateManager | None = None

    # ---- producers and transactions (UnifiedLog's) ---------------------------------------------------
    @property
    def last_stable_offset(self) -> int:
        """UnifiedLog.lastStableOffset: the first offset of the oldest ongoing transaction (not below the
        log start), else the high watermark (the log end here)."""
        state = self.producer_state
        if state is None or not state.ongoing:
            return self.log_end_offset
        first = max(next(iter(state.ongoing)), self.log_start_offset)
        return first if first < self.log_end_offset else self.log_end_offset

    @property
    def ongoing_transactions(self) -> dict[int, int]:
        """producer id -> first offset of each ongoing transaction."""
        state = self.producer_state
        return {} if state is None else {pid: first for first, pid in state.ongoing.items()}

    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list:
        """The aborted transactions (AbortedTxn) overlapping [fetch_offset, upper_bound_offset):
        UnifiedLog.collectAbortedTransactions."""
        state = self.producer_state
        return [] if state is None else state.aborted.collect(fetch_offset, upper_bound_offset)

    def producers(self, name: str = "") -> ProducerStateManager:
        if self.producer_state is None:
            self.producer_state = ProducerStateManager(name)
        return self.producer_state

    def transaction_verification_needed(self, producer_id: int, producer_epoch: int) -> bool:
        """UnifiedLog.maybeStartTransactionVerification: whether a transactional batch must be verified
        with the transaction coordinator first (not when its transaction is already ongoing here);
        raises ProducerStateError (INVALID_PRODUCER_EPOCH) for an epoch older than the producer's."""
        state = self.producer_state
        entry = None if state is None else state.last_entry(producer_id)
        if entry is not None and producer_epoch < entry.producer_epoch:
            raise ProducerStateError(ErrorCode.INVALID_PRODUCER_EPOCH,
                                     f"Epoch of producer {producer_id} is {producer_epoch}, which is smaller "
                                     f"than the last seen epoch {entry.producer_epoch}")
        return not (state is not None and state.has_ongoing_transaction(producer_id, producer_epoch))

    def analyze_producers(self, name: str, placed: list, origin: Origin, transaction_version: int = 0):
        """UnifiedLog.analyzeAndValidateProducerState over batches placed at the log end: (the producers'
        updates, the transactions completed, the duplicate batch or None). Raises ProducerStateError.
        Nothing changes until :meth:`apply_producers`. ``placed``: (batch, base, last, max timestamp, header)."""
        updated: dict[int, ProducerAppendInfo] = {}
        completed: list[CompletedTxn] = []
        state = self.producer_state
        for batch, base, last, max_timestamp, header in placed:
            pid = header.producer_id
            if pid < 0:
                continue
            if state is None:
                state = self.producers(name)
            if origin is Origin.CLIENT:
                entry = state.last_entry(pid)
                duplicate = None if entry is None else entry.find_duplicate(
                    header.producer_epoch, header.base_sequence, header.last_sequence)
                if duplicate is not None:
                    return updated, completed, duplicate
                if header.is_transactional and not state.has_ongoing_transaction(pid, header.producer_epoch):
                    if entry is not None and header.producer_epoch < entry.producer_epoch:
                        raise ProducerStateError(
                            ErrorCode.INVALID_PRODUCER_EPOCH,
                            f"Epoch of producer {pid} is {header.producer_epoch}, which is smaller than the "
                            f"last seen epoch {entry.producer_epoch}")
            info = updated.get(pid)
            if info is None:
                info = updated[pid] = state.prepare_update(pid, origin)
            if header.is_control:
                _, recs = records.decode_batch(batch, verify=False)
                if not recs:
                    continue        # (an empty control batch: the transaction was cleaned away)
                try:
                    control_type, coordinator_epoch = parse_end_txn_marker(recs[0].key, recs[0].value)
                except ValueError:
                    continue        # (another control record: not a transaction's end)
                done = info.append_end_txn_marker(control_type, coordinator_epoch, header.producer_epoch, base,
                                                  recs[0].timestamp, transaction_version)
                if done is not None:
                    completed.append(done)
            else:
                info.append_data_batch(header.producer_epoch, header.base_sequence, header.last_sequence,
                                       max_timestamp, base, last, header.is_transactional)
        return updated, completed, None

    def apply_producers(self, updated: dict, completed: list) -> None:
        """Take what :meth:`analyze_producers` found (the append was kept)."""
        if not updated:
            return
        state = self.producer_state
        for info in updated.values():
            state.update(info)
        for done in completed:
            state.complete_txn(done)

    def segment_base(self, incoming_bytes: int, segment_bytes: int) -> int:
        """The base offset of the segment ``incoming_bytes`` more go to: the active one, or a new one
        at the log end when they would take it past ``segment_bytes`` (or there is none)."""
        active = self.segments[-1] if self.segments else None
        if active is None or (active.size_bytes and active.size_bytes + incoming_bytes > segment_bytes):
            return self.log_end_offset
        return active.base_offset

    def restore(self, batch: bytes, header: records.BatchHeader, segment_base: int, name: str = "") -> None:
        """A batch read back from a segment file, at its own offsets; its producer's state replayed as
        Kafka's loadProducersFromRecords does (no check refuses it), markers included, so that the
        ongoing transactions, the aborted ones and the duplicates known are what they were."""
        if not self.batches:
            self.log_start_offset = self.log_end_offset = header.base_offset
        if header.producer_id >= 0:
            placed = [(batch, header.base_offset, header.last_offset, header.max_timestamp, header)]
            try:
                updated, completed, _ = self.analyze_producers(name, placed, Origin.REPLICATION)
            except (ProducerStateError, records.DecodeError, ValueError) as exc:
                logger.warning("producer state not replayed", partition=name, offset=header.base_offset,
                               error=str(exc))
            else:
                self.apply_producers(updated, completed)
        self.append_placed(batch, header.base_offset, header.last_offset, header.max_timestamp, segment_base)

    def append_placed(self, batch: bytes, base: int, last: int, max_timestamp: int, segment_base: int) -> None:
        """Append a batch whose base offset is already the log end, into the segment of ``segment_base``."""
        if not self.segments or self.segments[-1].base_offset != segment_base:
            self.segments.append(Segment(segment_base, len(self.batches)))
        segment = self.segments[-1]
        segment.size_bytes += len(batch)
        segment.max_timestamp = max(segment.max_timestamp, max_timestamp)
        self.batches.append(batch)
        self.bases.append(base)
        self.lasts.append(last)
        self.log_end_offset = max(self.log_end_offset, last + 1)
        self.size_bytes += len(batch)

    def retention_cut(self, now_ms: int, retention_ms: int, retention_bytes: int) -> list[int]:
        """The base offsets of the segments Kafka's retention deletes (``UnifiedLog.deletableSegments``
        with ``deleteRetentionMsBreachedSegments`` / ``deleteRetentionSizeBreachedSegments``): the oldest
        ones, the active one included, whose largest timestamp is more than ``retention_ms`` old, or while
        the log stays at least ``retention_bytes`` without them (-1: no limit)."""
        size = self.size_bytes
        gone = []
        for segment in self.segments:
            by_time = retention_ms >= 0 and now_ms - segment.max_timestamp > retention_ms
            by_size = retention_bytes >= 0 and size - segment.size_bytes >= retention_bytes
            if not segment.size_bytes or not (by_time or by_size):
                break
            size -= segment.size_bytes
            gone.append(segment.base_offset)
        return gone

    def delete_segments(self, count: int) -> None:
        """Drop the ``count`` oldest segments: the log starts at the next one's base offset, or at its end
        when none is left (the next append starts a new segment there)."""
        if count <= 0:
            return
        cut = self.segments[count].first if count < len(self.segments) else len(self.batches)
        self.size_bytes -= sum(len(b) for b in self.batches[:cut])
        del self.batches[:cut], self.bases[:cut], self.lasts[:cut], self.segments[:count]
        for segment in self.segments:
            segment.first -= cut
        self.log_start_offset = self.segments[0].base_offset if self.segments else self.log_end_offset
        if self.producer_state is not None:     # (the producers stay, as Kafka's snapshots keep them)
            self.producer_state.aborted.truncate_below(self.log_start_offset)

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Batches from the one holding offset on, up to max_bytes (at least one batch)."""
        return b"".join(batch for _, _, batch in self.batches_from(offset, max_bytes))

    def batches_from(self, offset: int, max_bytes: int, max_offset: int | None = None) -> list[tuple[int, int, bytes]]:
        """(base offset, last offset, bytes) of the batches from the one holding offset on, up to
        max_bytes (at least one batch) and, given ``max_offset``, only those below it (a read_committed
        read stops at the last stable offset, a batch boundary): a log read (Fetch's, a share-partition's)."""
        end = self.log_end_offset if max_offset is None else min(max_offset, self.log_end_offset)
        if offset >= end or not self.batches:
            return []
        bases = self.bases
        i = max(0, bisect.bisect_right(bases, offset) - 1)
        if self.lasts[i] < offset:
            i += 1              # (offset in a gap: a damaged segment skipped at load)
        out = []
        total = 0
        for j in range(i, len(bases)):
            batch = self.batches[j]
            if (out and total + len(batch) > max_bytes) or bases[j] >= end:
                break
            out.append((bases[j], self.lasts[j], batch))
            total += len(batch)
        return out

    def read_committed(self, offset: int, max_bytes: int) -> tuple[bytes, list]:
        """A read_committed read (FetchIsolation.TXN_COMMITTED): the batches below the last stable offset
        from the one holding offset on, up to max_bytes (at least one batch), and the aborted
        transactions overlapping them (LocalLog.addAbortedTransactions: up to the offset after the
        bytes read)."""
        got = self.batches_from(offset, max_bytes, self.last_stable_offset)
        if not got:
            return b"", []
        state = self.producer_state
        if state is None or not state.aborted.entries:
            return b"".join(batch for _, _, batch in got), []
        i = bisect.bisect_right(self.bases, got[-1][0])
        upper = self.bases[i] if i < len(self.bases) else self.log_end_offset     # (the next batch's base)
        return b"".join(batch for _, _, batch in got), state.aborted.collect(offset, upper)

    def offset_for_timestamp(self, ts: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= ts, by batch max timestamps."""
        for batch in self.batches:
            header = records.read_batch_header(batch)
            if header.max_timestamp >= ts:
                _, recs = records.decode_batch(batch, verify=False)
                for rec in recs:
                    if rec.timestamp >= ts:
                        return rec.offset, rec.timestamp
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        best = None
        for batch in self.batches:
            header = records.read_batch_header(batch)
            if best is None or header.max_timestamp > best[1]:
                best = (header.last_offset, header.max_timestamp)
        return best


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionLog] = field(default_factory=list)
    replication_factor: int = 1
    configs: dict[str, str | None] = field(default_factory=dict)
    internal: bool = False
    leaders: list[int] = field(default_factory=list)         # current leader per partition

    @property
    def partition_count(self) -> int:
        return len(self.partitions)


class Cluster:
    """Nodes, topics and the placement of partitions and group coordinators."""

    def __init__(self, nodes: Iterable[Node], *, offsets_partitions: int = 50,
                 cluster_id: str = "groupcoord-cluster",
                 topic_id_factory: Callable[[str], uuid.UUID] | None = None,
                 clock: Callable[[], int] | None = None) -> None:
        self.nodes: dict[int, Node] = {n.node_id: n for n in nodes}
        if not self.nodes:
            raise ValueError("a cluster needs at least one node")
        self.cluster_id = cluster_id
        self.offsets_partitions = offsets_partitions
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        self._topic_id_factory = topic_id_factory or (lambda name: uuid.uuid4())
        self.store = None       # durable topics, end offsets and records (a storage.LogStore), or None
        self.clock = clock      # ms, for the timestamps of transaction markers (None: 0)
        #: the broker's log configs (log.retention.ms, log.retention.bytes, log.segment.bytes), which a
        #: topic's configs override
        self.log_defaults = {"retention.ms": 604_800_000, "retention.bytes": -1, "segment.bytes": 1_073_741_824}
        ids = sorted(self.nodes)
        self._ids = ids
        # offsets-topic partition -> node leading it (its groups' coordinator); moved by
        # elections and by the fault engine
        self.offsets_leaders: list[int] = [ids[p % len(ids)] for p in range(offsets_partitions)]
        self._waiters: list = []          # parked fetches: objects with .on_append(topic, partition)
        self._partition_cache: dict[str, int] = {}
        self.controller_id = ids[0]
        # bumped by every change a Metadata answer shows (nodes, leaders, topics, partitions):
        # answers built at one epoch are shared by every identical request of that epoch
        self.epoch = 0
        self.metadata_answers: tuple[int, dict] = (0, {})    # (epoch, request key -> answer)
        # called with the names of topics created, deleted or grown (the consumer groups' metadata)
        self.topic_listeners: list[Callable[[set[str]], None]] = []

    # ---- placement -----------------------------------------------------------
    def node_ids(self) -> list[int]:
        return list(self._ids)

    def replicas(self, partition: int) -> list[int]:
        """Replicas of partition p of any topic, preferred leader first (ring order)."""
        ids = self._ids
        n = len(ids)
        return [ids[(partition + k) % n] for k in range(n)]

    def preferred_leader(self, partition: int) -> int:
        return self._ids[partition % len(self._ids)]

    def leader_for(self, topic: str, partition: int) -> int:
        t = self.topics.get(topic)
        if t is not None and 0 <= partition < len(t.leaders):
            return t.leaders[partition]
        return self.preferred_leader(partition)

    def is_up(self, node_id: int) -> bool:
        node = self.nodes.get(node_id)
        return node is not None and node.up

    def _elect(self, partition: int) -> int | None:
        """The first live replica in ring order (None when every node is down)."""
        for n in self.replicas(partition):
            if self.nodes[n].up:
                return n
        return None

    def _partitions_led(self):
        """(topic name or None for the offsets topic, partition, leader) of every partition."""
        for p, leader in enumerate(self.offsets_leaders):
            yield None, p, leader
        for t in self.topics.values():
            for p, leader in enumerate(t.leaders):
                yield t.name, p, leader

    def set_leader(self, topic: str | None, partition: int, node_id: int) -> int:
        """Make node_id the leader (topic None: the offsets topic); returns the previous one."""
        leaders = self.offsets_leaders if topic is None else self.topics[topic].leaders
        old = leaders[partition]
        leaders[partition] = node_id
        self.epoch += 1
        return old

    def node_down(self, node_id: int) -> list[tuple[str | None, int, int, int]]:
        """Mark a node down and re-elect the leaders of what it led. Returns the moves:
        (topic or None for the offsets topic, partition, old leader, new leader). Partitions
        with no live replica left keep their (offline) leader."""
        node = self.nodes[node_id]
        node.up = False
        self.epoch += 1
        moves = []
        for topic, p, leader in list(self._partitions_led()):
            if leader == node_id:
                new = self._elect(p)
                if new is not None:
                    self.set_leader(topic, p, new)
                    moves.append((topic, p, node_id, new))
        if self.controller_id == node_id:
            live = [n for n in self._ids if self.nodes[n].up]
            if live:
                self.controller_id = live[0]
        return moves

    def node_up(self, node_id: int) -> list[tuple[str | None, int, int, int]]:
        """Mark a node up. It leads nothing new, except partitions that had no live replica
        at all (offline: they come back with it, or go to the first live replica)."""
        self.nodes[node_id].up = True
        self.epoch += 1
        moves = []
        for topic, p, leader in list(self._partitions_led()):
            if not self.nodes[leader].up:
                new = self._elect(p)
                if new is not None and new != leader:
                    self.set_leader(topic, p, new)
                    moves.append((topic, p, leader, new))
        if not self.nodes[self.controller_id].up:
            self.controller_id = node_id
        return moves

    def elect_preferred_leaders(self, node_id: int | None = None) -> list[tuple[str | None, int, int, int]]:
        """Kafka's preferred-replica election: every partition whose preferred leader is live
        (and is node_id, when given) goes back to it. Returns the moves."""
        moves = []
        for topic, p, leader in list(self._partitions_led()):
            preferred = self.preferred_leader(p)
            if preferred != leader and self.nodes[preferred].up and node_id in (None, preferred):
                self.set_leader(topic, p, preferred)
                moves.append((topic, p, leader, preferred))
        return moves

    def coordinator_partition(self, key: str) -> int:
        cache = self._partition_cache
        p = cache.get(key)
        if p is None:
            if len(cache) > 100_000:
                cache.clear()
            p = cache[key] = partition_for(key, self.offsets_partitions)
        return p

    def coordinator_for(self, key: str) -> int:
        p = self._partition_cache.get(key)           # (every request asks: the cache looked at here)
        return self.offsets_leaders[self.coordinator_partition(key) if p is None else p]

    # ---- topics ----------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, replication_factor: int = 1,
                     configs: dict | None = None) -> Topic:
        if name in self.topics:
            raise KeyError(name)
        topic = Topic(name, self._topic_id_factory(name), [PartitionLog() for _ in range(partitions)],
                      replication_factor, dict(configs or {}))
        if self.store is not None:
            self.store.clear_records(name, range(partitions))   # (a deleted namesake's, left by a crash)
            self.store.put_topic(name, topic.topic_id, partitions, replication_factor, topic.configs)
        self._add_topic(topic)
        return topic

    def restore_topics(self, topics: dict, end_offsets: dict[tuple[uuid.UUID, int], int], store=None) -> None:
        """Topics read back from the store (a storage.TopicValue by name), each partition with the
        records its segment files kept (a partition without any, from a data dir of an earlier
        version, starts empty at its kept end offset: log start = log end). ``store``: where the records
        are read from (a storage.LogStore). Nothing is written."""
        for name, t in topics.items():
            parts = []
            for p in range(t.partitions):
                kept_end = end_offsets.get((t.topic_id, p), 0)
                log = PartitionLog(kept_end)
                if store is not None:       # (a torn tail cut: the log ends where its records do)
                    for segment_base, batch, header in store.load_records(name, p):
                        log.restore(batch, header, segment_base, f"{name}-{p}")
                parts.append(log)
            self._add_topic(Topic(name, t.topic_id, parts, t.replication_factor, dict(t.configs)))

    # ---- the log's configs (a topic's, else the broker's) ---------------------------
    def log_config(self, topic: Topic, name: str) -> int:
        """A topic's ``retention.ms``, ``retention.bytes`` or ``segment.bytes``, else the broker's
        ``log.<name>`` (:attr:`log_defaults`)."""
        value = topic.configs.get(name)
        if value is not None:
            try:
                return int(value)
            except ValueError:
                pass
        return self.log_defaults[name]

    def apply_retention(self, now_ms: int) -> list[tuple[str, int, int]]:
        """Kafka's log retention over every partition (whole segments from the oldest, the active one
        included); their segment files go. Returns (topic, partition, new log start offset) of each
        partition cut."""
        cut = []
        for topic in list(self.topics.values()):
            if topic.internal:
                continue
            ms, size = self.log_config(topic, "retention.ms"), self.log_config(topic, "retention.bytes")
            for p, log in enumerate(topic.partitions):
                bases = log.retention_cut(now_ms, ms, size)
                if not bases:
                    continue
                if self.store is not None:
                    try:
                        self.store.delete_segments(topic.name, p, bases)
                    except OSError as exc:
                        logger.warning("segments not deleted", topic=topic.name, partition=p, error=str(exc))
                        continue
                log.delete_segments(len(bases))
                cut.append((topic.name, p, log.log_start_offset))
        return cut

    def _add_topic(self, topic: Topic) -> None:
        topic.leaders = [self._initial_leader(p) for p in range(topic.partition_count)]
        self.topics[topic.name] = topic
        self.topics_by_id[topic.topic_id] = topic
        self.epoch += 1
        self._topics_changed(topic.name)

    def _topics_changed(self, name: str) -> None:
        for listener in self.topic_listeners:
            listener({name})

    def delete_topic(self, name: str) -> Topic | None:
        topic = self.topics.get(name)
        if topic is None:
            return None
        if self.store is not None:
            self.store.delete_topic(name, topic.topic_id, topic.partition_count)
        del self.topics[name]
        self.topics_by_id.pop(topic.topic_id, None)
        self.epoch += 1
        self._topics_changed(name)
        return topic

    def add_partitions(self, name: str, total: int) -> None:
        topic = self.topics[name]
        if total <= topic.partition_count:
            raise ValueError(f"topic {name} already has {topic.partition_count} partitions")
        if self.store is not None:
            self.store.clear_records(name, range(topic.partition_count, total))
            self.store.put_topic(name, topic.topic_id, total, topic.replication_factor, topic.configs)
        first = topic.partition_count
        topic.partitions.extend(PartitionLog() for _ in range(total - first))
        topic.leaders.extend(self._initial_leader(p) for p in range(first, total))
        self.epoch += 1
        self._topics_changed(name)

    def _initial_leader(self, partition: int) -> int:
        preferred = self.preferred_leader(partition)
        if self.nodes[preferred].up:
            return preferred
        elected = self._elect(partition)
        return preferred if elected is None else elected

    def partition_count(self, name: str) -> int | None:
        topic = self.topics.get(name)
        return None if topic is None else topic.partition_count

    def log(self, topic: str, partition: int) -> PartitionLog | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= partition < len(t.partitions):
            return None
        return t.partitions[partition]

    # ---- data plane --------------------------------------------------------------
    def append(self, topic: str, partition: int, data: bytes) -> tuple[ErrorCode, int]:
        """Append every batch of a Produce partition, all or none; (error, base offset of the first).

        The producer checks of Kafka's LogValidator.validateBatch (no control batch from a client, a
        producer id needs a sequence) and UnifiedLog.analyzeAndValidateProducerState (epochs, sequences,
        INVALID_TXN_STATE): a batch already appended (same producer, epoch and sequences, one of the
        producer's last five) is not appended again, and answers NONE with the offset it got then."""
        log = self.log(topic, partition)
        if log is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
        staged = []
        pos = 0
        while pos < len(data):
            try:
                header = records.read_batch_header(data, pos)
            except records.DecodeError:
                return ErrorCode.CORRUPT_MESSAGE, -1
            if header.magic != 2:
                return ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, -1
            batch = data[pos:pos + header.size]
            if len(batch) != header.size or not records.verify_crc(batch):
                return ErrorCode.CORRUPT_MESSAGE, -1
            if header.is_control or (header.producer_id >= 0 and header.base_sequence < 0):
                return ErrorCode.INVALID_RECORD, -1
            staged.append((batch, header))
            pos += header.size
        if not staged:
            return ErrorCode.CORRUPT_MESSAGE, -1
        # the batches at their offsets, kept (segment file, end offset) before they are taken
        placed = []
        base = log.log_end_offset
        for batch, header in staged:
            if header.base_offset != base:
                batch = records.set_base_offset(batch, base)
            placed.append((batch, base, base + header.last_offset_delta, header.max_timestamp, header))
            base += header.last_offset_delta + 1
        updated, completed = {}, []
        if any(header.producer_id >= 0 for _, header in staged):
            try:
                updated, completed, duplicate = log.analyze_producers(f"{topic}-{partition}", placed, Origin.CLIENT)
            except ProducerStateError as exc:
                logger.debug("produce refused", topic=topic, partition=partition, error=str(exc))
                return exc.code, -1
            if duplicate is not None:
                return ErrorCode.NONE, duplicate.first_offset
        code = self._append_placed(topic, partition, log, placed)
        if code != ErrorCode.NONE:
            return code, -1
        log.apply_producers(updated, completed)
        self._notify(topic, partition)
        return ErrorCode.NONE, placed[0][1]

    def write_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int, *, transaction_version: int = 0,
                     timestamp_ms: int | None = None) -> ErrorCode:
        """Append a transaction marker (Kafka's EndTransactionMarker control batch, as
        MemoryRecords.withEndTransactionMarker builds it) to a partition, as KafkaApis'
        handleWriteTxnMarkersRequest does through the log (AppendOrigin.COORDINATOR): the producer's
        transaction here ends (the last stable offset moves; an abort goes to the aborted-transactions
        index) and parked fetches look again. A producer without a transaction here gets the marker too.
        INVALID_PRODUCER_EPOCH for an epoch older than the producer's (TV2: not newer),
        TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch. ``timestamp_ms``: the marker's
        timestamp (default: the cluster's clock)."""
        log = self.log(topic, partition)
        if log is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if timestamp_ms is None:
            timestamp_ms = self.clock() if self.clock is not None else 0
        base = log.log_end_offset
        batch = records.encode_batch(
            [records.Record(0, 0, end_txn_marker_key(commit), end_txn_marker_value(coordinator_epoch), [])],
            base_offset=base, base_timestamp=timestamp_ms, producer_id=producer_id, producer_epoch=producer_epoch,
            base_sequence=records.NO_SEQUENCE, transactional=True, control=True)
        header = records.read_batch_header(batch)
        placed = [(batch, base, base, header.max_timestamp, header)]
        try:
            updated, completed, _ = log.analyze_producers(f"{topic}-{partition}", placed, Origin.COORDINATOR,
                                                          transaction_version)
        except ProducerStateError as exc:
            logger.info("transaction marker refused", topic=topic, partition=partition, error=str(exc))
            return exc.code
        code = self._append_placed(topic, partition, log, placed)
        if code != ErrorCode.NONE:
            return code
        log.apply_producers(updated, completed)
        self._notify(topic, partition)
        return ErrorCode.NONE

    def _append_placed(self, topic: str, partition: int, log: PartitionLog, placed: list) -> ErrorCode:
        """Batches already at their offsets (from the log end on): kept in the store (segment file, end
        offset), then in the log."""
        t = self.topics[topic]
        end = placed[-1][2] + 1
        segment_base = log.segment_base(sum(len(b[0]) for b in placed), self.log_config(t, "segment.bytes"))
        store = self.store
        if store is not None:
            try:
                store.append_records(topic, partition, segment_base, b"".join(b[0] for b in placed))
                try:
                    store.put_end_offset(t.topic_id, partition, end)
                except OSError:
                    store.undo_records(topic, partition)        # (not taken: not kept either)
                    raise
            except OSError as exc:      # a full disk: Kafka answers the partition KAFKA_STORAGE_ERROR
                logger.warning("records not kept", topic=topic, partition=partition, error=str(exc))
                return ErrorCode.KAFKA_STORAGE_ERROR
        for batch, batch_base, last, max_timestamp, _ in placed:
            log.append_placed(batch, batch_base, last, max_timestamp, segment_base)
        return ErrorCode.NONE

    def expire_producers(self, now_ms: int, expiration_ms: int) -> int:
        """Kafka's ``producer.id.expiration.ms`` over every partition: the producers idle that long, and
        without an open transaction, are forgotten (their next batch starts afresh); how many went."""
        gone = 0
        for topic in self.topics.values():
            for log in topic.partitions:
                if log.producer_state is not None:
                    gone += log.producer_state.remove_expired(now_ms, expiration_ms)
        return gone

    def add_waiter(self, waiter) -> None:
        self._waiters.append(waiter)

    def remove_waiter(self, waiter) -> None:
        try:
            self._waiters.remove(waiter)
        except ValueError:
            pass

    def _notify(self, topic: str, partition: int) -> None:
        for waiter in list(self._waiters):
            waiter.on_append(topic, partition)
