"""A share consumer's records (KIP-932, Kafka's ShareConsumeRequestManager and ShareSessionHandler):
share sessions with each partition leader, ShareFetch, acknowledgements and ShareAcknowledge.

One share session per leader, one request in flight on it at a time (its epochs are sequential):
opened at epoch 0 with every assigned partition that node leads, then carried on with the
partitions added (with their acknowledgements) and those forgotten; a session the leader lost
(SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, a broken connection) starts over at 0.

Records are fetched only while the application waits for some (``wanted``, set by a poll that
found none buffered), so that no lock is taken for records nobody will process soon. A record is
held under its acquisition lock until ``deadline``: the time the ShareFetch that acquired it was
sent plus the AcquisitionLockTimeoutMs of its answer (the lock was taken after the request left,
so the leader's deadline is no earlier). A buffered record whose lock has expired is not handed
out, and the acknowledgement of a record whose lock expired is not sent (another consumer may hold
that record now): it fails with INVALID_RECORD_STATE, as the leader would answer.

Acknowledgements wait in ``pending`` per partition until they go out: piggy-backed on the next
ShareFetch to the leader when one is due, else in a ShareAcknowledge at once; a commit sends them
all. Offsets of an acquired range that no record came for (control records, compacted gaps) are
acknowledged GAP. Each answered acknowledgement is reported (:class:`AcknowledgementsCommitted`).
"""
from __future__ import annotations

import itertools
import logging
from collections import deque
from dataclasses import dataclass, field

from groupcoord.protocol import records as records_codec
from groupcoord.protocol.errors import DecodeError, ErrorCode, KafkaError

from ..assignors.base import TopicPartition as TP
from .actions import ErrorRaised
from .connections import BROKER, SHARE_ACKNOWLEDGE, SHARE_FETCH, Request
from .share_actions import GAP, AcknowledgementsCommitted, ShareCommitCompleted, ShareRecord

log = logging.getLogger("groupcoord.client")

_E = ErrorCode
_error = ErrorCode.lookup
INT32_MAX = 2**31 - 1
OPEN_EPOCH, CLOSE_EPOCH = 0, -1
#: top-level errors after which the leader has no session for the member (it starts over at 0)
_SESSION_ERRORS = (_E.SHARE_SESSION_NOT_FOUND, _E.INVALID_SHARE_SESSION_EPOCH, _E.SHARE_SESSION_LIMIT_REACHED)
#: partition errors that mean the leader moved or is not ready
_LEADER_ERRORS = (_E.NOT_LEADER_OR_FOLLOWER, _E.FENCED_LEADER_EPOCH, _E.KAFKA_STORAGE_ERROR,
                  _E.OFFSET_NOT_AVAILABLE, _E.REPLICA_NOT_AVAILABLE, _E.UNKNOWN_TOPIC_OR_PARTITION,
                  _E.UNKNOWN_TOPIC_ID, _E.LEADER_NOT_AVAILABLE)


def next_epoch(epoch: int) -> int:
    """ShareRequestMetadata.nextEpoch: +1, from INT32_MAX back to 1."""
    return 1 if epoch >= INT32_MAX else epoch + 1


def ack_batches(acks: list[tuple[int, int]]) -> list[dict]:
    """AcknowledgementBatches of (offset, type) pairs: runs of consecutive offsets of one type,
    one type per batch (as Kafka's clients send them)."""
    out: list[dict] = []
    first = last = kind = None
    for offset, t in sorted(acks):
        if kind == t and offset == last + 1:
            last = offset
            continue
        if kind is not None:
            out.append({"first_offset": first, "last_offset": last, "acknowledge_types": [kind]})
        first = last = offset
        kind = t
    if kind is not None:
        out.append({"first_offset": first, "last_offset": last, "acknowledge_types": [kind]})
    return out


@dataclass
class Ack:
    offset: int
    type: int
    deadline: int                    # the record's lock deadline
    seq: int = 0                     # its number (the commits waiting for it)


@dataclass
class Session:
    """The member's share session with one leader."""
    node: int
    epoch: int = OPEN_EPOCH
    partitions: set = field(default_factory=set)      # in the leader's session
    in_flight: int | None = None                      # request id
    retry_at: int = 0


@dataclass
class CommitOp:
    handle: int
    waiting: set                     # the acknowledgements (Ack.seq) it waits for, wherever they go
    results: dict = field(default_factory=dict)       # TP -> (offsets, error)


class ShareFetcher:
    """``buffer``: per partition, acquired records not handed out yet (with their lock deadlines);
    ``pending``: per partition, acknowledgements not sent yet; ``sessions``: per leader node."""

    def __init__(self, member):
        cfg = member.config
        self.member = member
        self.net = member.net
        self.sessions: dict[int, Session] = {}
        self.buffer: dict[TP, deque] = {}
        self.pending: dict[TP, list[Ack]] = {}
        self.commits: dict[int, CommitOp] = {}
        self._failed_types: dict[TP, dict] = {}              # lock-expired acknowledgements' types, until reported
        self._failed_seqs: dict[TP, set] = {}                # and their numbers
        self._seq = itertools.count(1)
        self.wanted = False
        self.lock_timeout_ms: int | None = None           # the last AcquisitionLockTimeoutMs
        self.max_records: int = cfg["max.poll.records"]
        self.max_wait_ms: int = cfg["fetch.max.wait.ms"]
        self.min_bytes: int = cfg["fetch.min.bytes"]
        self.max_bytes: int = cfg["fetch.max.bytes"]
        self.record_limit: bool = cfg["share.acquire.mode"] == "record_limit"
        self.check_crcs: bool = cfg["check.crcs"]
        self.retry_backoff_ms: int = cfg["retry.backoff.ms"]
        self.closing = False                              # close: the sessions are being closed
        self.records_fetched = 0                          # (stats) records acquired and buffered
        self.expired_before_delivery = 0                  # (stats) buffered records whose lock expired

    # ---- what the member asks -------------------------------------------------------------
    def buffered(self) -> int:
        return sum(len(q) for q in self.buffer.values())

    def take(self, limit: int, now: int) -> list[tuple[ShareRecord, int]]:
        """Up to limit buffered records whose locks still hold, with their deadlines; those whose
        locks expired are dropped (the leader gives them out again)."""
        out: list[tuple[ShareRecord, int]] = []
        for tp in list(self.buffer):
            q = self.buffer[tp]
            while q and len(out) < limit:
                rec, deadline = q.popleft()
                if deadline <= now:
                    self.expired_before_delivery += 1
                    continue
                out.append((rec, deadline))
            if not q:
                del self.buffer[tp]
            if len(out) >= limit:
                break
        return out

    def acknowledge(self, tp: TP, offset: int, kind: int, deadline: int) -> None:
        self.pending.setdefault(tp, []).append(Ack(offset, kind, deadline, next(self._seq)))

    def release_buffer(self) -> None:
        """Closing: the buffered records are released with the session."""
        self.buffer.clear()

    def commit(self, now: int) -> int:
        """Send every pending acknowledgement; a :class:`ShareCommitCompleted` with the returned
        handle follows once each of them was answered or failed (at once when there are none), to
        whichever leader it went."""
        handle = next(self.net.ids)
        waiting = {a.seq for acks in self.pending.values() for a in acks}
        op = self.commits[handle] = CommitOp(handle, waiting)
        if not waiting:
            self._finish_commit(op)
        return handle

    def _session(self, node: int) -> Session:
        s = self.sessions.get(node)
        if s is None:
            s = self.sessions[node] = Session(node)
        return s

    def connection_lost(self, node: int | None) -> None:
        s = self.sessions.get(node)
        if s is not None:
            self._reset(s, "connection lost")
        self.member.metadata.requested = True          # the leader may be gone

    def idle(self) -> bool:
        """No request in flight on any session."""
        return all(s.in_flight is None for s in self.sessions.values())

    # ---- the step ---------------------------------------------------------------------------
    def step(self, now: int) -> None:
        member = self.member
        metadata = member.metadata
        # the partitions each leader should have in its session, and those with acknowledgements
        desired: dict[int, set] = {}
        for tp in member.assignment:
            leader = metadata.leader_of(tp)
            if leader is None:
                metadata.requested = True
                continue
            desired.setdefault(leader, set()).add(tp)
        acked: dict[int, list[TP]] = {}
        for tp, acks in self.pending.items():
            if not acks:
                continue
            leader = metadata.leader_of(tp)
            if leader is None:
                metadata.requested = True
                continue
            acked.setdefault(leader, []).append(tp)
        fetch = self.wanted and not self.buffer and not self.closing
        for node in sorted(set(desired) | set(acked) | set(self.sessions)):
            s = self.sessions.get(node)
            if s is not None and (s.in_flight is not None or now < s.retry_at):
                continue
            want = desired.get(node, set())
            tps = acked.get(node, [])
            if self.closing:
                if s is not None and s.epoch > 0:
                    self._acknowledge(s, tps, now, close=True)
                else:
                    self._unsendable(node, tps)
                    self.sessions.pop(node, None)
            elif fetch and want:
                self._fetch(self._session(node), want, tps, now)
            elif tps:
                s = self._session(node)
                if s.epoch == OPEN_EPOCH:
                    self._unsendable(node, tps)
                else:
                    self._acknowledge(s, tps, now)

    def _unsendable(self, node: int, tps: list[TP]) -> None:
        """Acknowledgements for a leader with no open session cannot be sent (a ShareFetch that
        opens one may not carry any; the records were released with the old session)."""
        error = KafkaError(_E.INVALID_SHARE_SESSION_EPOCH, "no share session with the leader to acknowledge in")
        taken = {tp: acks for tp in tps if (acks := self.pending.pop(tp, []))}
        results = {tp: (frozenset(a.offset for a in acks), error) for tp, acks in taken.items()}
        self._report(results, [], node, taken)

    def _take_acks(self, tps: list[TP], now: int) -> tuple[dict, dict]:
        """The acknowledgements of tps to send ({TP: [Ack]}), and those that cannot be: the
        record's lock expired ({TP: (offsets, error)})."""
        send: dict[TP, list[Ack]] = {}
        failed: dict[TP, tuple] = {}
        for tp in tps:
            acks = self.pending.pop(tp, [])
            # (a GAP too: the leader takes a partition's acknowledgements all or none)
            live = [a for a in acks if a.deadline > now]
            dead = [a.offset for a in acks if a.deadline <= now]
            if live:
                send[tp] = live
            if dead:
                self._failed_types.setdefault(tp, {}).update((a.offset, a.type) for a in acks if a.deadline <= now)
                self._failed_seqs.setdefault(tp, set()).update(a.seq for a in acks if a.deadline <= now)
                failed[tp] = (frozenset(dead), KafkaError(
                    _E.INVALID_RECORD_STATE, "the record's acquisition lock expired before it was acknowledged"))
        return send, failed

    def _topics(self, partitions: dict[TP, list[Ack]]) -> list[dict]:
        """The request's Topics: {TP: acks} by topic id."""
        ids = self.member.topic_ids
        by_topic: dict = {}
        for tp, acks in sorted(partitions.items()):
            tid = ids.get(tp.topic)
            if tid is None:
                continue
            by_topic.setdefault(tid, []).append({"partition_index": tp.partition, "acknowledgement_batches":
                                                 ack_batches([(a.offset, a.type) for a in acks])})
        return [{"topic_id": tid, "partitions": ps} for tid, ps in by_topic.items()]

    def _fetch(self, s: Session, want: set, tps: list[TP], now: int) -> None:
        member = self.member
        node = member.metadata.node(s.node)
        if node is None:
            return
        if s.epoch == OPEN_EPOCH:
            if tps:                                         # a session opens without acknowledgements
                self._unsendable(s.node, tps)
            send, failed = {}, {}
            added, forgotten = set(want), set()
        else:
            outside = [tp for tp in tps if tp not in want]
            if outside:
                # acknowledged outside the session (a partition no longer assigned): a ShareAcknowledge
                # first, the fetch at the next step
                self._acknowledge(s, outside, now)
                if s.in_flight is not None:
                    return
            send, failed = self._take_acks([tp for tp in tps if tp in want], now)
            added, forgotten = want - s.partitions, s.partitions - want
        parts = {tp: send.get(tp, []) for tp in added | set(send)}
        ids = member.topic_ids
        forgotten_ids: dict = {}
        for tp in sorted(forgotten):
            tid = ids.get(tp.topic)
            if tid is not None:
                forgotten_ids.setdefault(tid, []).append(tp.partition)
        epoch = s.epoch
        record_limit = self.record_limit
        group_id, member_id = member.group_id, member.member_id

        def build(v: int) -> dict:
            body = {"group_id": group_id, "member_id": member_id, "share_session_epoch": epoch,
                    "max_wait_ms": self.max_wait_ms, "min_bytes": self.min_bytes, "max_bytes": self.max_bytes,
                    "max_records": self.max_records, "batch_size": self.max_records,
                    "topics": self._topics(parts),
                    "forgotten_topics_data": [{"topic_id": t, "partitions": ps} for t, ps in forgotten_ids.items()]}
            if v >= 2:
                body["share_acquire_mode"] = 1 if record_limit else 0
                body["is_renew_ack"] = False
            return body
        handles: list = []
        rid = member.net.send((BROKER, s.node), SHARE_FETCH, build, self.on_share_fetch, now, node=node,
                              timeout_ms=member.net.request_timeout_ms + self.max_wait_ms,
                              ctx=(s, now, send, failed, added, forgotten, handles))
        if rid is None:
            self._restore(s, send, failed, handles)
            return
        s.in_flight = rid

    def _acknowledge(self, s: Session, tps: list[TP], now: int, *, close: bool = False) -> None:
        """A ShareAcknowledge with the acknowledgements of tps (epoch -1 when closing)."""
        member = self.member
        node = member.metadata.node(s.node)
        if node is None:
            return
        send, failed = self._take_acks(tps, now)
        if not send and not close:
            self._report(failed, [], s.node)
            return
        epoch = CLOSE_EPOCH if close else s.epoch
        group_id, member_id = member.group_id, member.member_id

        def build(v: int) -> dict:
            body = {"group_id": group_id, "member_id": member_id, "share_session_epoch": epoch,
                    "topics": self._topics(send)}
            if v >= 2:
                body["is_renew_ack"] = False
            return body
        handles: list = []
        rid = member.net.send((BROKER, s.node), SHARE_ACKNOWLEDGE, build, self.on_share_acknowledge, now,
                              node=node, ctx=(s, now, send, failed, handles, close))
        if rid is None:
            self._restore(s, send, failed, handles)
            return
        s.in_flight = rid

    def _restore(self, s: Session, send: dict, failed: dict, handles: list) -> None:
        """A request that could not go out (no connection yet): its acknowledgements wait again."""
        for tp, acks in send.items():
            self.pending.setdefault(tp, [])[:0] = acks
        if failed:
            self._report(failed, [], s.node)

    # ---- the answers ------------------------------------------------------------------------
    def _reset(self, s: Session, reason: str) -> None:
        if s.epoch != OPEN_EPOCH:
            log.info("%s: share session with node %s starts over: %s", self.member.who(), s.node, reason)
        s.epoch = OPEN_EPOCH
        s.partitions.clear()

    @staticmethod
    def _offsets(acks: list[Ack]) -> frozenset:
        return frozenset(a.offset for a in acks)

    def on_share_fetch(self, resp: dict | None, req: Request, now: int) -> None:
        s, sent_at, send, failed, added, forgotten, handles = req.ctx
        if s.in_flight == req.request_id:
            s.in_flight = None
        member = self.member
        if resp is None or resp["error_code"]:
            code = _E.NETWORK_EXCEPTION if resp is None else _error(resp["error_code"])
            self._failed_request(s, send, failed, handles, code, now)
            return
        s.epoch = next_epoch(s.epoch)
        s.partitions |= added
        s.partitions -= forgotten
        lock_ms = resp.get("acquisition_lock_timeout_ms") or 0
        if lock_ms > 0:
            self.lock_timeout_ms = lock_ms
        deadline = sent_at + (self.lock_timeout_ms or 30000)
        names = member.metadata.topic_names
        results = dict(failed)
        answered: set = set()
        for t in resp["responses"]:
            topic = names.get(t["topic_id"])
            if topic is None:
                member.metadata.requested = True
                continue
            for p in t["partitions"]:
                tp = TP(topic, p["partition_index"])
                answered.add(tp)
                if tp in send:
                    code = _error(p["acknowledge_error_code"])
                    results[tp] = (self._offsets(send[tp]), None if code == _E.NONE
                                   else KafkaError(code, p.get("acknowledge_error_message")))
                code = _error(p["error_code"])
                if code != _E.NONE:
                    if code in _LEADER_ERRORS:
                        member.metadata.requested = True
                    elif code == _E.TOPIC_AUTHORIZATION_FAILED:
                        member.net.actions.append(ErrorRaised(KafkaError(code, f"{tp}"), False))
                    else:
                        log.info("%s: ShareFetch of %s failed: %s", member.who(), tp, code.name)
                    continue
                self._take_records(tp, p, deadline)
        for tp in send:
            if tp not in answered:            # (librdkafka's reading of a missing partition)
                results[tp] = (self._offsets(send[tp]), KafkaError(_E.INVALID_RECORD_STATE))
        self._report(results, handles, s.node, send)

    def _take_records(self, tp: TP, p: dict, deadline: int) -> None:
        acquired = p["acquired_records"]
        if not acquired:
            return
        if self.closing:
            return                                      # released with the session's close
        # (records of a partition no longer assigned are handed out all the same, as Kafka's client
        # does: they are this member's until acknowledged or their locks expire)
        member = self.member
        ranges = [(r["first_offset"], r["last_offset"], r["delivery_count"]) for r in acquired]
        got: dict[int, tuple] = {}
        lo, hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
        try:
            for header, batch in records_codec.iter_batches(p.get("records") or b""):
                if header.next_offset <= lo or header.base_offset > hi or header.is_control:
                    continue
                _, decoded = records_codec.decode_batch(batch, verify=self.check_crcs)
                for r in decoded:
                    got[r.offset] = (r, header.timestamp_type)
        except DecodeError as e:
            member.net.actions.append(ErrorRaised(KafkaError(_E.CORRUPT_MESSAGE, f"{tp}: {e}"), False))
        q = self.buffer.setdefault(tp, deque())
        for first, last, count in ranges:
            for o in range(first, last + 1):
                hit = got.get(o)
                if hit is None:
                    self.acknowledge(tp, o, GAP, deadline)
                    continue
                r, ts_type = hit
                q.append((ShareRecord(tp.topic, tp.partition, o, r.timestamp, ts_type, r.key, r.value,
                                      tuple(r.headers or ()), count), deadline))
                self.records_fetched += 1
        if not q:
            del self.buffer[tp]

    def on_share_acknowledge(self, resp: dict | None, req: Request, now: int) -> None:
        s, sent_at, send, failed, handles, close = req.ctx
        if s.in_flight == req.request_id:
            s.in_flight = None
        if close:
            self.sessions.pop(s.node, None)
        if resp is None or resp["error_code"]:
            code = _E.NETWORK_EXCEPTION if resp is None else _error(resp["error_code"])
            self._failed_request(s, send, failed, handles, code, now)
            return
        if not close:
            s.epoch = next_epoch(s.epoch)
        names = self.member.metadata.topic_names
        results = dict(failed)
        for t in resp["responses"]:
            topic = names.get(t["topic_id"])
            for p in t["partitions"] if topic is not None else ():
                tp = TP(topic, p["partition_index"])
                if tp not in send:
                    continue
                code = _error(p["error_code"])
                if code in _LEADER_ERRORS:
                    self.member.metadata.requested = True
                results[tp] = (self._offsets(send[tp]), None if code == _E.NONE
                               else KafkaError(code, p.get("error_message")))
        for tp, acks in send.items():
            if tp not in results:
                results[tp] = (self._offsets(acks), KafkaError(_E.INVALID_RECORD_STATE))
        self._report(results, handles, s.node, send)

    def _failed_request(self, s: Session, send: dict, failed: dict, handles: list, code: ErrorCode,
                        now: int) -> None:
        """No answer, or a top-level error: the acknowledgements sent are failed (never retried, as
        Kafka's clients do); a session error or a lost connection starts the session over."""
        if code in _SESSION_ERRORS or code == _E.NETWORK_EXCEPTION:
            self._reset(s, code.name)
        else:
            if code in (_E.UNKNOWN_TOPIC_ID, _E.UNKNOWN_TOPIC_OR_PARTITION):
                self.member.metadata.requested = True
            s.retry_at = now + self.retry_backoff_ms
        results = dict(failed)
        results.update({tp: (self._offsets(acks), KafkaError(code)) for tp, acks in send.items()})
        self._report(results, handles, s.node, send)

    def _report(self, results: dict, handles: list, node: int, send: dict | None = None) -> None:
        """Acknowledgement results to the application (the commit callback), and to the commits
        waiting for this node's answer; ``send``: the acknowledgements sent (for their types)."""
        if results:
            types = {tp: {a.offset: a.type for a in acks} for tp, acks in (send or {}).items()}
            for tp in results:
                kinds = self._failed_types.pop(tp, None)
                if kinds:
                    types.setdefault(tp, {}).update(kinds)
            self.net.actions.append(AcknowledgementsCommitted(dict(results), types))
        if self.commits:
            seqs = {tp: {a.seq for a in acks} for tp, acks in (send or {}).items()}
            for tp in results:
                failed = self._failed_seqs.pop(tp, None)
                if failed:
                    seqs.setdefault(tp, set()).update(failed)
            for op in list(self.commits.values()):
                for tp, result in results.items():
                    mine = seqs.get(tp, set()) & op.waiting
                    if mine:
                        op.results[tp] = result
                        op.waiting -= mine
                if not op.waiting:
                    self._finish_commit(op)
        else:
            for tp in results:
                self._failed_seqs.pop(tp, None)

    def _finish_commit(self, op: CommitOp, error: Exception | None = None) -> None:
        if self.commits.pop(op.handle, None) is not None:
            self.net.actions.append(ShareCommitCompleted(op.handle, dict(op.results), error))

    def fail_commits(self, error: Exception) -> None:
        for op in list(self.commits.values()):
            self._finish_commit(op, error)

    def deadline(self, now: int, best: int) -> int:
        for s in self.sessions.values():
            d = s.retry_at
            if now < d < best:
                best = d
        return best
