"""A simple fetcher (``Member(fetch=True)``): Fetch to the partition leaders, records decoded
from the record batches and handed out by ``Member.take_records``."""
from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass

from groupcoord.protocol import records as records_codec
from groupcoord.protocol.errors import DecodeError, ErrorCode, KafkaError

from ..assignors.base import TopicPartition as TP
from .actions import ConsumerRecord, ErrorRaised
from .connections import BROKER, FETCH, Request

_E = ErrorCode
_error = ErrorCode.lookup


@dataclass
class CompletedFetch:
    records: deque
    next_offset: int
    fetch_offset: int


class Fetcher:
    """``completed``: fetched records per partition, not yet handed out; ``rng`` orders the
    partitions of each Fetch."""

    def __init__(self, member, rng: random.Random | None = None):
        self.member = member
        self.in_flight: set[int] = set()                 # node ids
        self.completed: dict[TP, CompletedFetch] = {}
        self.rng = rng or random.Random()

    def forget(self, assignment: frozenset) -> None:
        for tp in list(self.completed):
            if tp not in assignment:
                del self.completed[tp]

    def step(self, now: int) -> None:
        member = self.member
        positions = member.positions
        fetchable = [tp for tp in member.assignment if tp in positions and tp not in self.completed
                     and tp not in member.pending_revocation]
        if not fetchable:
            return
        metadata = member.metadata
        by_leader: dict[int, list[TP]] = {}
        for tp in fetchable:
            leader = metadata.leader_of(tp)
            if leader is None:
                metadata.requested = True
                continue
            by_leader.setdefault(leader, []).append(tp)
        cfg = member.config
        for leader, tps in by_leader.items():
            if leader in self.in_flight:
                continue
            self.rng.shuffle(tps)
            by_topic: dict[str, list] = {}
            offsets = {}
            for tp in tps:
                offsets[tp] = positions[tp]
                by_topic.setdefault(tp.topic, []).append({
                    "partition": tp.partition, "current_leader_epoch": -1, "fetch_offset": positions[tp],
                    "last_fetched_epoch": -1, "log_start_offset": -1,
                    "partition_max_bytes": cfg["max.partition.fetch.bytes"]})
            body = {"cluster_id": None, "replica_id": -1, "max_wait_ms": cfg["fetch.max.wait.ms"],
                    "min_bytes": cfg["fetch.min.bytes"], "max_bytes": cfg["fetch.max.bytes"],
                    "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                    "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
                    "forgotten_topics_data": [], "rack_id": cfg["client.rack"]}
            node = metadata.node(leader)
            if node is None:
                continue
            rid = member.net.send((BROKER, leader), FETCH, body, self.on_fetch, now, node=node,
                                  timeout_ms=member.net.request_timeout_ms + cfg["fetch.max.wait.ms"],
                                  ctx=(leader, offsets))
            if rid is not None:
                self.in_flight.add(leader)

    def on_fetch(self, resp: dict | None, req: Request, now: int) -> None:
        leader, offsets = req.ctx
        self.in_flight.discard(leader)
        if resp is None:
            # the leader may be gone (Kafka's client asks for metadata on a disconnect)
            self.member.metadata.requested = True
            return
        member = self.member
        if resp.get("error_code"):
            member.metadata.requested = True
            return
        check = member.config["check.crcs"]
        positions = member.positions
        for t in resp["responses"]:
            for p in t["partitions"]:
                tp = TP(t["topic"], p["partition_index"])
                fetch_offset = offsets.get(tp)
                if fetch_offset is None or tp not in member.assignment or positions.get(tp) != fetch_offset:
                    continue
                code = _error(p["error_code"])
                if code == _E.OFFSET_OUT_OF_RANGE:
                    positions.pop(tp, None)
                    member.offsets.need_reset.add(tp)
                    continue
                if code != _E.NONE:
                    member.metadata.requested = True
                    continue
                recs: deque = deque()
                next_offset = fetch_offset
                try:
                    for header, batch in records_codec.iter_batches(p.get("records") or b""):
                        if header.next_offset <= fetch_offset:
                            continue
                        if not header.is_control:
                            _, decoded = records_codec.decode_batch(batch, verify=check)
                            for r in decoded:
                                if r.offset >= fetch_offset:
                                    recs.append(ConsumerRecord(tp.topic, tp.partition, r.offset, r.timestamp,
                                                               header.timestamp_type, r.key, r.value,
                                                               tuple(r.headers or ())))
                        next_offset = max(next_offset, header.next_offset)
                except DecodeError as e:
                    member.net.actions.append(ErrorRaised(KafkaError(_E.CORRUPT_MESSAGE, f"{tp}: {e}"), False))
                if recs or next_offset > fetch_offset:
                    self.completed[tp] = CompletedFetch(recs, next_offset, fetch_offset)

    def take_records(self, limit: int) -> list[ConsumerRecord]:
        """Fetched records of assigned partitions, advancing their positions."""
        member = self.member
        positions = member.positions
        out: list[ConsumerRecord] = []
        for tp in list(self.completed):
            if len(out) >= limit:
                break
            cf = self.completed[tp]
            if tp in member.pending_revocation:
                continue
            if tp not in member.assignment or positions.get(tp) != cf.fetch_offset:
                del self.completed[tp]
                continue
            while cf.records and len(out) < limit:
                rec = cf.records.popleft()
                out.append(rec)
                positions[tp] = rec.offset + 1
            cf.fetch_offset = positions[tp]
            if not cf.records:
                positions[tp] = max(positions[tp], cf.next_offset)
                del self.completed[tp]
        return out
