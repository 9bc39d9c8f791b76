"""One rebalance round of one big group, driven through the sans-I/O Service on a fake clock, as
the simulator drives it (sim/simulate.py) but with no member cores: the requests are made here.

A group of N members forms (JoinGroup without and with the member id, the initial delay,
SyncGroup); :meth:`Group.round` then runs the round as a steady-state rebalance goes:

  join   the leader rejoins (a rebalance starts), the N-1 others' heartbeats get
         REBALANCE_IN_PROGRESS, they rejoin, and the last JoinGroup completes the join phase:
         N responses, the leader's with every member's subscription;
  sync   N-1 SyncGroups park, the leader's brings N assignments, and N responses go out;
  beat   N heartbeats of the Stable group.

:func:`lines` counts the coordinator's executed lines of one round (sys.settrace), the measure
test_rebalance_cost.py compares between sizes (no timing, so no noise); bench/rebalance.py times
the steps.
"""
from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path

from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.service import Service
from groupcoord.protocol import consumer as cp
from groupcoord.protocol import frames

JOIN, SYNC, HEARTBEAT = 11, 14, 12
VERSIONS = {JOIN: 9, SYNC: 5, HEARTBEAT: 4}
GROUP = "big"
BIG_GROUP_RECORD_BYTES = 16 * 1024 * 1024
COORDINATOR_DIR = str(Path(__file__).resolve().parents[2] / "coordinator")


class Group:
    """A group of n members on one Service with a fake clock; the requests are made here."""

    def __init__(self, n: int, partitions: int | None = None, codec: bool = False):
        self.n = n
        self.now = 0
        self.codec = codec
        self.partitions = partitions or min(n, 1000)
        # a group record grows about 87 bytes a member here (869 kB at 10,000): past ~12,000 members it
        # exceeds Kafka's default message.max.bytes (1 MB), which such a group needs raised, on Kafka as here
        cfg = BrokerConfig({"group.initial.rebalance.delay.ms": 3000, "message.max.bytes": BIG_GROUP_RECORD_BYTES},
                           profile="test", environ={})
        counter = iter(range(1 << 62))
        self.service = Service(cfg, clock=lambda: self.now, emit=lambda e: None,
                               member_id_factory=lambda prefix: f"{prefix}-{next(counter):08d}")
        self.service.create_topic("t", self.partitions)
        self.metadata = cp.encode_subscription({"topics": ["t"], "user_data": None, "owned_partitions": [],
                                                "generation_id": -1, "rack_id": None}, 3)
        self.ids = [""] * n
        self.generation = -1
        self.leader = ""
        self.replies: dict[tuple[int, int], dict] = {}
        self._corr = 0
        self.form()

    # ---- requests -----------------------------------------------------------------------------
    def _reply(self, i: int, api_key: int, corr: int, resp: dict) -> None:
        if self.codec:
            resp = frames.encode_response(api_key, VERSIONS[api_key], corr, resp, framed=False)
        self.replies[i, api_key] = resp

    def prepare(self, api_key: int, i: int, body: dict):
        """What send() takes: the request, encoded with --codec (outside the time measured)."""
        self._corr += 1
        if self.codec:
            return i, api_key, self._corr, frames.encode_request(api_key, VERSIONS[api_key], self._corr, body,
                                                                 f"m{i}", framed=False)
        return i, api_key, self._corr, body

    def send(self, prepared) -> None:
        i, api_key, corr, body = prepared
        if self.codec:
            body = frames.decode_request(body).body
        ctx = RequestContext(self.service, 0, f"m{i}", "/127.0.0.1", api_key, VERSIONS[api_key], corr)
        self.service.handle(ctx, body, partial(self._reply, i, api_key, corr))

    def join(self, i: int) -> tuple:
        return self.prepare(JOIN, i, {
            "group_id": GROUP, "session_timeout_ms": 45000, "rebalance_timeout_ms": 300000,
            "member_id": self.ids[i], "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": self.metadata}], "reason": None})

    def sync(self, i: int, assignments: list | None = None) -> tuple:
        return self.prepare(SYNC, i, {
            "group_id": GROUP, "generation_id": self.generation, "member_id": self.ids[i],
            "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
            "assignments": assignments or []})

    def heartbeat(self, i: int) -> tuple:
        return self.prepare(HEARTBEAT, i, {"group_id": GROUP, "generation_id": self.generation,
                                           "member_id": self.ids[i], "group_instance_id": None})

    def reply(self, i: int, api_key: int) -> dict:
        resp = self.replies.pop((i, api_key))
        if self.codec:
            resp = frames.decode_response(api_key, VERSIONS[api_key], resp)[1]
        return resp

    def assignments(self) -> list[dict]:
        """The leader's: partition p to member p mod n (range-like), as assignment bytes."""
        per: list[list[int]] = [[] for _ in range(self.n)]
        for p in range(self.partitions):
            per[p % self.n].append(p)
        return [{"member_id": self.ids[i], "assignment": cp.encode_assignment(
                 {"assigned_partitions": [{"topic": "t", "partitions": ps}] if ps else [], "user_data": None}, 3)}
                for i, ps in enumerate(per)]

    # ---- the group's life -----------------------------------------------------------------------
    def form(self) -> None:
        for i in range(self.n):                       # KIP-394: MEMBER_ID_REQUIRED, then again
            self.send(self.join(i))
            self.ids[i] = self.reply(i, JOIN)["member_id"]
        for i in range(self.n):
            self.send(self.join(i))
        group = self.service.group_coordinator.group(GROUP)
        while group.state == "PreparingRebalance":   # the initial delay (extended while members came)
            self.now += 3000
            self.service.advance(self.now)
        self._joined()
        self._sync_all()

    def _joined(self) -> None:
        for i in range(self.n):
            resp = self.reply(i, JOIN)
            assert resp["error_code"] == 0, resp
            if resp["members"]:
                self.leader_index = i
                assert len(resp["members"]) == self.n
        self.generation = resp["generation_id"]

    def _sync_all(self, followers=None, leader=None) -> None:
        followers = followers or [self.sync(i) for i in range(self.n) if i != self.leader_index]
        leader = leader or self.sync(self.leader_index, self.assignments())
        for req in followers:
            self.send(req)
        self.send(leader)
        self._synced()

    def _synced(self) -> None:
        for i in range(self.n):
            assert self.reply(i, SYNC)["error_code"] == 0

    def round(self) -> dict[str, float]:
        """One rebalance and a heartbeat round; seconds per step."""
        n, lead = self.n, self.leader_index
        rejoin = self.join(lead)
        beats = [self.heartbeat(i) for i in range(n) if i != lead]
        joins = [self.join(i) for i in range(n) if i != lead]
        t0 = time.perf_counter()
        self.send(rejoin)
        for req in beats:
            self.send(req)
        for req in joins:
            self.send(req)
        t1 = time.perf_counter()
        for i in range(n):
            if i != lead:
                assert self.reply(i, HEARTBEAT)["error_code"] == 27        # REBALANCE_IN_PROGRESS
        self._joined()
        followers = [self.sync(i) for i in range(n) if i != self.leader_index]
        leader = self.sync(self.leader_index, self.assignments())
        t2 = time.perf_counter()
        for req in followers:
            self.send(req)
        self.send(leader)
        t3 = time.perf_counter()
        self._synced()
        beats = [self.heartbeat(i) for i in range(n)]
        t4 = time.perf_counter()
        for req in beats:
            self.send(req)
        t5 = time.perf_counter()
        for i in range(n):
            assert self.reply(i, HEARTBEAT)["error_code"] == 0
        self.now += 10
        return {"join": t1 - t0, "sync": t3 - t2, "beat": t5 - t4}


def lines(n: int, partitions: int | None = None) -> int:
    """Lines of coordinator/ executed by one round of a formed group of n members."""
    group = Group(n, partitions)
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return local

    def tracer(frame, event, arg):
        if frame.f_code.co_filename.startswith(COORDINATOR_DIR):
            return local
        return None
    sys.settrace(tracer)
    try:
        group.round()
    finally:
        sys.settrace(None)
    return count
