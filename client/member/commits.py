"""Offsets with the coordinator (ConsumerCoordinator's side): OffsetCommit (sync with retries
until default.api.timeout.ms, async without, auto-commit every auto.commit.interval.ms, the
commits before a revocation and on close) and OffsetFetch (the application's, and the committed
offsets of newly assigned partitions)."""
from __future__ import annotations

from dataclasses import dataclass

from groupcoord.protocol.errors import ErrorCode, KafkaError

from ..assignors.base import TopicPartition as TP
from .actions import (
    STABLE,
    CommitCompleted,
    CommitFailedError,
    ErrorRaised,
    FatalConsumerError,
    MemberState,
    OffsetAndMetadata,
    OffsetsFetched,
    RebalanceInProgressError,
    RetriableCommitFailedError,
)
from .connections import COORDINATOR, OFFSET_COMMIT, OFFSET_FETCH, Request

_E = ErrorCode
_error = ErrorCode.lookup
_COORDINATOR_ERRORS = (_E.COORDINATOR_NOT_AVAILABLE, _E.NOT_COORDINATOR)


@dataclass
class CommitOp:
    handle: int
    kind: str                       # sync, async, auto, rebalance, close
    offsets: dict
    deadline: int
    retry: bool
    next_try: int = 0
    in_flight: bool = False
    done: bool = False
    error: Exception | None = None


@dataclass
class FetchOffsetsOp:
    handle: int
    partitions: frozenset
    deadline: int
    internal: bool                  # the committed offsets of newly assigned partitions
    next_try: int = 0
    in_flight: bool = False


def offset_commit_body(group_id: str, generation_id: int, member_id: str, instance_id: str | None,
                       items) -> dict:
    """The OffsetCommit body of ``items`` ((TP, OffsetAndMetadata), a topic's partitions together:
    one topic entry each run of them, in their order)."""
    topics: list[dict] = []
    last = None
    for tp, om in items:
        if tp.topic != last:
            last = tp.topic
            parts: list[dict] = []
            topics.append({"name": last, "partitions": parts})
        parts.append({"partition_index": tp.partition, "committed_offset": om.offset,
                      "committed_leader_epoch": -1 if om.leader_epoch is None else om.leader_epoch,
                      "commit_timestamp": -1, "committed_metadata": om.metadata})
    return {"group_id": group_id, "generation_id_or_member_epoch": generation_id, "member_id": member_id,
            "group_instance_id": instance_id, "retention_time_ms": -1, "topics": topics}


class Commits:
    """``ops``: the commits under way; ``fetches``: the OffsetFetches under way;
    ``committed_offsets``: the last offset committed successfully, per partition."""

    def __init__(self, member, now: int):
        cfg = member.config
        self.member = member
        self.net = member.net
        self.discovery = member.discovery
        self.group = member.membership
        self.ops: list[CommitOp] = []
        self.fetches: list[FetchOffsetsOp] = []
        self.committed_in_flight: set[TP] = set()
        self.committed_offsets: dict[TP, int] = {}
        self.auto_commit: bool = cfg["enable.auto.commit"] and member.group_id is not None
        self.auto_commit_interval_ms: int = cfg["auto.commit.interval.ms"]
        self.next_auto_commit = now + self.auto_commit_interval_ms
        self.api_timeout_ms: int = cfg["default.api.timeout.ms"]
        self.retry_backoff_ms: int = cfg["retry.backoff.ms"]

    # ---- commits ------------------------------------------------------------------------
    def start(self, offsets: dict, kind: str, now: int, *, retry: bool, timeout_ms: int | None = None) -> int:
        handle = next(self.net.ids)
        deadline = now + (self.api_timeout_ms if timeout_ms is None else timeout_ms)
        op = CommitOp(handle, kind, dict(offsets), deadline, retry)
        if not offsets:
            op.done = True
            self.net.actions.append(CommitCompleted(handle, kind, {}, None))
            return handle
        fatal = self.member.fatal_error
        if fatal is not None:
            self.complete(op, fatal)
            return handle
        self.ops.append(op)
        return handle

    def op(self, handle: int) -> CommitOp | None:
        return next((op for op in self.ops if op.handle == handle), None)

    def pending(self) -> bool:
        return any(not op.done for op in self.ops)

    def complete(self, op: CommitOp, error: Exception | None) -> None:
        op.done = True
        op.error = error
        if error is None:
            for tp, om in op.offsets.items():
                self.committed_offsets[tp] = om.offset
        self.net.actions.append(CommitCompleted(op.handle, op.kind, op.offsets, error))

    def fail_all(self, error: Exception) -> None:
        """End every commit under way with error (the member closed or failed)."""
        for op in self.ops:
            if not op.done:
                self.complete(op, error)
        self.ops.clear()

    def step_auto_commit(self, now: int) -> None:
        """An auto-commit is due (the member's guard: auto-commit on, its time come)."""
        group = self.group
        if group.state is not STABLE or group.completion is not None:
            return
        if self.discovery.coordinator is None:
            self.next_auto_commit = now + self.retry_backoff_ms
            return
        self.next_auto_commit = now + self.auto_commit_interval_ms
        offsets = self.member.all_consumed()
        if offsets:
            self.start(offsets, "auto", now, retry=False)

    def step(self, now: int) -> None:
        """Commits wait (the member's guard)."""
        member = self.member
        group = self.group
        for op in list(self.ops):
            if op.done:
                self.ops.remove(op)
                continue
            if op.in_flight:
                continue
            if now >= op.deadline:
                self.ops.remove(op)
                self.complete(op, op.error or KafkaError(
                    _E.REQUEST_TIMED_OUT, "the commit did not complete within its timeout"))
                continue
            if now < op.next_try:
                continue
            gen = group.generation
            state = group.state
            if member.subscription:
                if state is not STABLE or gen.generation_id < 0:
                    self.ops.remove(op)
                    if state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE) \
                            or group.rejoin_needed:
                        self.complete(op, RebalanceInProgressError())
                    else:
                        self.complete(op, CommitFailedError(
                            "the consumer is not part of an active group", _E.UNKNOWN_MEMBER_ID))
                    continue
                generation_id, member_id = gen.generation_id, gen.member_id
            else:
                generation_id, member_id = -1, ""
            conn = self.discovery.conn(now)
            if conn is None:
                continue
            self.send(op, generation_id, member_id, state, conn, now)

    def send(self, op: CommitOp, generation_id: int, member_id: str, state, conn, now: int) -> None:
        """The OffsetCommit of op, on the coordinator's ready connection conn (step: it may go)."""
        member = self.member
        body = offset_commit_body(member.group_id, generation_id, member_id, member.group_instance_id,
                                  sorted(op.offsets.items()))
        rid = self.net.send(COORDINATOR, OFFSET_COMMIT, body, self.on_commit, now,
                            ctx=(op, generation_id, member_id, state), conn=conn)
        if rid is not None:
            op.in_flight = True

    def on_commit(self, resp: dict | None, req: Request, now: int) -> bool | None:
        op, sent_generation, sent_member, _ = req.ctx
        op.in_flight = False
        if op.done:
            return None
        if resp is None:
            self.retriable(op, KafkaError(_E.NETWORK_EXCEPTION, "no response to OffsetCommit"), now)
            return None
        first = 0
        for t in resp["topics"]:
            for p in t["partitions"]:
                code = p["error_code"]
                if code and not first:
                    first = code
        member = self.member
        group = self.group
        if not first:
            self.complete(op, None)
            # settled when no rebalance step and no close() waits for a commit (the done op
            # leaves the list at the next poll)
            return group.prepare is None and group.completion is None and member.closing is None
        code = _error(first)
        if code in (_E.COORDINATOR_LOAD_IN_PROGRESS, _E.UNKNOWN_TOPIC_OR_PARTITION):
            self.retriable(op, KafkaError(code), now)
        elif code in _COORDINATOR_ERRORS or code == _E.REQUEST_TIMED_OUT:
            member.discovery.unknown(now, f"OffsetCommit: {code.name}")
            self.retriable(op, KafkaError(code), now)
        elif code == _E.FENCED_INSTANCE_ID:
            self.complete(op, FatalConsumerError(code))
            raise FatalConsumerError(code, f"static member {member.group_instance_id} was fenced")
        elif code == _E.STALE_MEMBER_EPOCH and getattr(group, "stale_commits", None) is not None:
            # the consumer protocol (CommitRequestManager): a commit that retries is sent again
            # with the epoch of the next heartbeat response; if none comes before its deadline it
            # fails as commitSyncExceptionForError says; one that does not retry fails
            error = CommitFailedError("OffsetCommit failed with stale member epoch. " + code.message, code)
            if op.retry and now < op.deadline:
                op.error = error
                op.next_try = op.deadline
                group.stale_commits.append(op)
            else:
                self.complete(op, KafkaError(code) if not op.retry else error)
        elif code == _E.REBALANCE_IN_PROGRESS:
            group.request_rejoin("offset commit failed since the group is already rebalancing")
            self.complete(op, RebalanceInProgressError())
        elif code in (_E.UNKNOWN_MEMBER_ID, _E.ILLEGAL_GENERATION):
            gen = group.generation
            unchanged = (sent_generation, sent_member) == (gen.generation_id, gen.member_id)
            if not unchanged and group.state == MemberState.PREPARING_REBALANCE:
                self.complete(op, RebalanceInProgressError())
            else:
                if unchanged and sent_generation >= 0:
                    group.reset_generation(f"OffsetCommit: {code.name}", reset_member_id=code == _E.UNKNOWN_MEMBER_ID)
                    group.request_rejoin(f"OffsetCommit: {code.name}", prepare=True)
                self.complete(op, CommitFailedError(code=code))
        else:
            self.complete(op, KafkaError(code))

    def retriable(self, op: CommitOp, error: KafkaError, now: int) -> None:
        if op.retry and now + self.retry_backoff_ms < op.deadline:
            op.error = error
            op.next_try = now + self.retry_backoff_ms
            return
        self.complete(op, error if op.retry else RetriableCommitFailedError(error.code, str(error)))

    # ---- committed offsets ----------------------------------------------------------------
    def fetch(self, partitions, now: int, timeout_ms: int | None = None) -> int:
        """The application's OffsetFetch; returns its handle."""
        handle = next(self.member.net.ids)
        deadline = now + (self.api_timeout_ms if timeout_ms is None else timeout_ms)
        self.fetches.append(FetchOffsetsOp(handle, frozenset(TP(*tp) for tp in partitions), deadline,
                                           internal=False))
        return handle

    def step_fetches(self, now: int) -> None:
        member = self.member
        need_committed = member.offsets.need_committed
        if not need_committed and not self.fetches:
            return
        # partitions newly assigned need their committed offsets (as one internal fetch)
        pending = frozenset(need_committed - self.committed_in_flight)
        if pending and member.group_id is not None and not any(op.internal for op in self.fetches):
            self.fetches.append(FetchOffsetsOp(0, pending, now + self.api_timeout_ms, internal=True))
            self.committed_in_flight |= pending
        for op in list(self.fetches):
            if op.in_flight:
                continue
            if now >= op.deadline and not op.internal:
                self.fetches.remove(op)
                member.net.actions.append(OffsetsFetched(op.handle, {}, KafkaError(
                    _E.REQUEST_TIMED_OUT, "OffsetFetch did not complete within its timeout")))
                continue
            if now < op.next_try or not member.discovery.ready(now):
                continue
            by_topic: dict[str, list[int]] = {}
            for tp in sorted(op.partitions):
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
            group = member.group_id

            def build(v: int, topics=topics) -> dict:
                if v >= 8:
                    return {"groups": [{"group_id": group, "member_id": None, "member_epoch": -1,
                                        "topics": topics}], "require_stable": False}
                return {"group_id": group, "topics": topics, "require_stable": False}
            if member.net.send(COORDINATOR, OFFSET_FETCH, build, self.on_offset_fetch, now, ctx=op) is not None:
                op.in_flight = True

    def on_offset_fetch(self, resp: dict | None, req: Request, now: int) -> None:
        op: FetchOffsetsOp = req.ctx
        op.in_flight = False
        if op not in self.fetches:
            return
        if resp is None:
            op.next_try = now + self.retry_backoff_ms
            return
        member = self.member
        if req.version >= 8:
            g = next((g for g in resp["groups"] if g["group_id"] == member.group_id), None)
            code, topics = (_error(g["error_code"]), g["topics"]) if g else (_E.NONE, [])
        else:
            code, topics = _error(resp.get("error_code", 0)), resp["topics"]
        if code == _E.NONE:
            for t in topics:
                for p in t["partitions"]:
                    pc = _error(p["error_code"])
                    if pc != _E.NONE:
                        code = pc
                        break
        if code in (_E.COORDINATOR_LOAD_IN_PROGRESS, _E.UNSTABLE_OFFSET_COMMIT):
            op.next_try = now + self.retry_backoff_ms
            return
        if code in _COORDINATOR_ERRORS:
            member.discovery.unknown(now, f"OffsetFetch: {code.name}")
            op.next_try = now + self.retry_backoff_ms
            return
        self.fetches.remove(op)
        if code == _E.GROUP_AUTHORIZATION_FAILED:
            raise FatalConsumerError(code, f"not authorized to group {member.group_id}")
        result: dict[TP, OffsetAndMetadata | None] = {tp: None for tp in op.partitions}
        if code == _E.NONE:
            for t in topics:
                for p in t["partitions"]:
                    tp = TP(t["name"], p["partition_index"])
                    if tp in result and p["committed_offset"] >= 0:
                        epoch = p.get("committed_leader_epoch", -1)
                        result[tp] = OffsetAndMetadata(p["committed_offset"], p.get("metadata") or "",
                                                       None if epoch is None or epoch < 0 else epoch)
        if op.internal:
            self.committed_in_flight -= op.partitions
            offsets = member.offsets
            if code != _E.NONE:
                member.net.actions.append(ErrorRaised(KafkaError(code, "fetching committed offsets failed"), False))
                offsets.need_committed -= op.partitions
                offsets.need_reset |= (op.partitions & member.assignment) - set(member.positions)
                return
            for tp, om in result.items():
                if tp not in offsets.need_committed:
                    continue              # no longer assigned, or seeked meanwhile
                offsets.need_committed.discard(tp)
                if om is not None:
                    member.positions[tp] = om.offset
                    self.committed_offsets[tp] = om.offset
                else:
                    offsets.need_reset.add(tp)
            return
        member.net.actions.append(OffsetsFetched(op.handle, result, None if code == _E.NONE else KafkaError(code)))

    def fail_fetches(self, error: Exception) -> None:
        for op in self.fetches:
            if not op.internal:
                self.member.net.actions.append(OffsetsFetched(op.handle, {}, error))
        self.fetches.clear()

    def fetches_deadline(self, now: int, best: int) -> int:
        """The OffsetFetches' next retry or timeout (the commits' are read by the member)."""
        for op in self.fetches:
            if not op.in_flight:
                d = op.next_try
                if now < d < best:
                    best = d
            d = op.deadline
            if now < d < best:
                best = d
        return best
