"""Where each assigned partition starts: its committed offset (fetched by the commits part),
else auto.offset.reset through ListOffsets to the partition's leader."""
from __future__ import annotations

from groupcoord.protocol.errors import ErrorCode

from ..assignors.base import TopicPartition as TP
from .actions import ErrorRaised, NoOffsetForPartitionError
from .connections import BROKER, LIST_OFFSETS, Request

EARLIEST, LATEST = -2, -1                   # ListOffsets timestamps

_error = ErrorCode.lookup


def answered_offset(p: dict) -> int:
    """The offset of a partition in a ListOffsets answer: ``offset`` (v1+), else the first of v0's
    ``old_style_offsets``; -1 for none."""
    offset = p.get("offset", -1)
    if offset is None or offset < 0:
        olds = p.get("old_style_offsets") or []
        offset = olds[0] if olds else -1
    return offset


class Positions:
    """``need_committed``: assigned partitions waiting for their committed offset;
    ``need_reset``: those to reset with auto.offset.reset. The positions themselves are the
    member's (``Member.positions``)."""

    def __init__(self, member):
        cfg = member.config
        self.member = member
        self.need_committed: set[TP] = set()
        self.need_reset: set[TP] = set()
        self.reset_in_flight: set[TP] = set()
        self.retry_at = 0
        self.strategy: str = cfg["auto.offset.reset"]
        self.retry_backoff_ms: int = cfg["retry.backoff.ms"]

    def forget(self, assignment: frozenset) -> None:
        """Keep only what concerns partitions still assigned."""
        self.need_committed.intersection_update(assignment)
        self.need_reset.intersection_update(assignment)

    def seeked(self, tp: TP) -> None:
        self.need_committed.discard(tp)
        self.need_reset.discard(tp)

    def step(self, now: int) -> None:
        if not self.need_reset:
            return
        pending = self.need_reset - self.reset_in_flight
        if not pending or now < self.retry_at:
            return
        member = self.member
        if self.strategy == "none":
            self.need_reset -= pending
            member.net.actions.append(ErrorRaised(NoOffsetForPartitionError(pending), False))
            return
        timestamp = EARLIEST if self.strategy == "earliest" else LATEST
        metadata = member.metadata
        by_leader: dict[int, list[TP]] = {}
        for tp in sorted(pending):
            leader = metadata.leader_of(tp)
            if leader is None:
                metadata.requested = True
                continue
            by_leader.setdefault(leader, []).append(tp)
        for leader, tps in by_leader.items():
            by_topic: dict[str, list] = {}
            for tp in tps:
                by_topic.setdefault(tp.topic, []).append(
                    {"partition_index": tp.partition, "current_leader_epoch": -1, "timestamp": timestamp,
                     "max_num_offsets": 1})
            body = {"replica_id": -1, "isolation_level": 0,
                    "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()], "timeout_ms": 0}
            node = metadata.node(leader)
            if node is None:
                continue
            rid = member.net.send((BROKER, leader), LIST_OFFSETS, body, self.on_list_offsets, now,
                                  node=node, ctx=frozenset(tps))
            if rid is not None:
                self.reset_in_flight |= set(tps)

    def on_list_offsets(self, resp: dict | None, req: Request, now: int) -> None:
        tps = req.ctx
        self.reset_in_flight -= tps
        if resp is None:
            self.retry_at = now + self.retry_backoff_ms
            return
        member = self.member
        for t in resp["topics"]:
            for p in t["partitions"]:
                tp = TP(t["name"], p["partition_index"])
                if tp not in self.need_reset:
                    continue
                code = _error(p["error_code"])
                if code == ErrorCode.NONE:
                    offset = answered_offset(p)
                    if offset >= 0:
                        member.positions[tp] = offset
                        self.need_reset.discard(tp)
                        continue
                member.metadata.requested = True
                self.retry_at = now + self.retry_backoff_ms

    def deadline(self, now: int, best: int) -> int:
        d = self.retry_at
        return d if now < d < best else best
