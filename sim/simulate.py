"""A scenario in virtual time: the coordinator core and the member cores on one simulated clock.

No sockets, threads or sleeps: one integer clock (ms), one agenda of ``(fn, arg)`` items run
in the order of their time, then of their scheduling (a timing wheel of ms slots, and a heap for
what lies beyond it), the sans-I/O :class:`~groupcoord.coordinator.service.Service` and one sans-I/O
:class:`~groupcoord.client.member.Member` per running member. A simulated network carries
requests and responses as dicts (through the codec only with ``network.codec = true``):

- each message takes a latency drawn from the scenario's distribution with a
  ``random.Random`` seeded from the seed; a connection delivers in order (TCP);
- per connection, the service handles one request at a time, as a broker does;
- ``network.loss``: a request or response is dropped; the member's request timeout notices;
- a network partition or a node going down breaks connections (the member is told at once)
  and refuses new ones.

Everything random comes from the seed, and member and topic ids are drawn from it, so one
seed gives the same event log byte for byte. :func:`run` is the entry point.
"""
from __future__ import annotations

import array
import contextlib
import gc
import heapq
import itertools
import marshal
import math
import os
import pickle
import random
import struct
import tempfile
import time
import uuid
from functools import partial
from typing import Callable

from groupcoord.client.assignors import RebalanceProtocol
from groupcoord.client.member import (
    Closed, CommitCompleted, Connect, Disconnect, ErrorRaised, Member, RebalanceCallback, SendRequest,
)
from groupcoord.client.member.actions import STABLE
from groupcoord.client.member.commits import CommitOp, offset_commit_body
from groupcoord.client.member.connections import COORDINATOR
from groupcoord.client.member.share import ShareMember
from groupcoord.client.member.share_actions import AcknowledgementsCommitted
from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.group.classic.requests import HeartbeatRequest
from groupcoord.coordinator.group.offsets import OffsetCommitRequest
from groupcoord.coordinator.handlers import heartbeat as heartbeat_api
from groupcoord.coordinator.handlers import offset_commit as offset_commit_api
from groupcoord.coordinator.service import Service
from groupcoord.protocol.records import Record, encode_batch

from .eventfile import EventWriter
from .events import stop_reason
from .model import (
    Client, Driver, consumer_config, follow, set_group_configs, share_config, summaries, summarize, write_outputs,
)
from .scenario import Scenario
from .work import Work

__all__ = ["run", "Simulator"]


def latency_sampler(spec: dict, rng: random.Random) -> Callable[[], int]:
    """A function drawing one-way latencies (whole ms, >= 0) from the scenario's distribution."""
    d = spec["dist"]
    if d == "fixed":
        ms = max(0, int(round(spec["ms"])))
        return lambda: ms
    if d == "uniform":
        lo, hi = spec["min_ms"], spec["max_ms"]
        return lambda: int(lo + (hi - lo) * rng.random() + 0.5)
    if d == "normal":
        mean, sd = spec["mean_ms"], spec["stddev_ms"]
        return lambda: max(0, int(rng.gauss(mean, sd) + 0.5))
    if d == "lognormal":
        mu, sigma = math.log(max(spec["median_ms"], 1e-9)), spec["sigma"]
        return lambda: int(rng.lognormvariate(mu, sigma) + 0.5)
    if d == "exponential":
        rate = 1.0 / max(spec["mean_ms"], 1e-9)
        return lambda: int(rng.expovariate(rate) + 0.5)
    raise ValueError(f"unknown latency distribution {d!r}")


class _Conn:
    __slots__ = ("cid", "gid", "node", "alive", "queue", "busy", "req_at", "resp_at", "heartbeat_ctx",
                 "heartbeat_req", "heartbeat_body", "coordinates")

    def __init__(self, cid: int, gid: int, node: int):
        self.cid = cid                 # the member's id of it
        self.gid = gid                 # the service's (unique in the run: members number theirs alike)
        self.node = node
        self.alive = True
        self.queue: list = []          # requests arrived, waiting for the one being handled
        self.busy = False
        self.req_at = 0                # arrival time of the last request (in-order delivery)
        self.resp_at = 0
        self.heartbeat_ctx: RequestContext | None = None   # its heartbeats' context (see _serve_one)
        self.heartbeat_req: HeartbeatRequest | None = None  # its last heartbeat (see _hb_arrive)
        self.heartbeat_body: dict | None = None             # the body heartbeat_req was last found for
        # the cluster's epoch when its node was last found its member's group's coordinator (every
        # change of the coordinators' placement bumps it: the finding holds while it is the same)
        self.coordinates = -1


class _Running:
    """One running instance of a client (a new one per start)."""
    __slots__ = ("client", "_m", "flat", "calm", "conns", "wake_at", "dead", "frozen_until", "deferred", "stall_until",
                 "next_poll", "cut_until", "closing", "start_after_close", "rng", "latency", "period", "records",
                 "work")

    def __init__(self, client: Client, member: Member, now: int, rng: random.Random, latency: Callable[[], int]):
        self.client = client
        self._m = member
        self.flat: _Flat | None = None     # the member in the steady state's flat lane (see _Flat)
        self.calm = None                   # the member's generation at its last lane's wake-up (_flatten)
        self.rng = rng                 # the client's network draws (its own stream: see Simulator)
        self.latency = latency
        self.period = client.spec.processing_ms      # the application's polls (see _app_polls)
        self.records = client.spec.records_per_poll
        self.conns: dict[int, _Conn] = {}
        self.wake_at: int | None = None
        self.dead = False
        self.frozen_until = -1
        self.deferred: list = []
        self.stall_until = -1
        self.next_poll = now
        self.cut_until = -1
        self.closing = False
        self.start_after_close = False
        self.work: Work | None = None   # a work queue's application (sim/work.py)

    @property
    def member(self) -> Member:
        """The member, for the general way: whatever the general way does with it may change what
        the flat lane took as settled, so the member leaves it (the lanes read ``_m``)."""
        self.flat = None
        return self._m

    def peek(self) -> Member:
        """The member, to be read and nothing more: it stays in the flat lane (a bench's look)."""
        return self._m


class _Flat:
    """A member in the flat lane of the steady state (Simulator._flat_wake, _flat_settle,
    _flat_commit_settle). It enters stable in a generation of the classic protocol, quiet
    (``quiet_until``), with nothing in flight but its heartbeat, no commit under way and its
    coordinator's connection ready (Simulator._flatten), and stays while only its heartbeats, its
    auto-commits and their answers happen to it. What the lanes check at every request and only an
    input or a whole poll can change is checked once and kept here, with the member's parts and its
    heartbeats' request body. The member leaves the lane (``_Running.flat`` None) when the general
    way reads it, through ``_Running.member``, and when a flat handler finds its case does not hold
    (an answer with an error, a poll due, the connection gone...): the lanes and the general way
    take over. The member's state stays the truth: the lane changes it as the lanes do, field by
    field."""
    __slots__ = ("m", "hb", "net", "commits", "cid", "version", "commit_version", "body", "ctx", "handler",
                 "empty", "sent", "passes", "request", "hb_req")

    def __init__(self, m: Member, conn, version: int) -> None:
        self.m = m
        self.hb = m.heartbeat
        self.net = m.net
        self.commits = m.commits
        self.cid = conn.conn_id            # the member's connection to its coordinator
        self.version = version             # its heartbeats'
        self.commit_version = conn.picked.get(_OFFSET_COMMIT)   # (None: the first commit picks it)
        gen = m.membership.generation
        gid, mid = gen.generation_id, gen.member_id
        # (one body for the generation's heartbeats: nothing changes a request's body once sent)
        self.body = {"group_id": m.group_id, "generation_id": gid, "member_id": mid,
                     "group_instance_id": m.group_instance_id}
        self.ctx = (gid, mid)
        self.handler = self.hb.on_heartbeat
        self.empty = not m.assignment      # (an auto-commit of nothing: no partition to commit)
        # its OffsetCommits at the coordinator (Simulator._commit_arrive): the last one sent, the
        # cluster's epoch when its commits were found to pass the API layer whole (every change
        # of partition counts or leaders bumps it), and the coordinator's request of them but
        # for their topics
        self.sent: SendRequest | None = None
        self.passes = -1
        self.request: OffsetCommitRequest | None = None
        self.hb_req: SendRequest | None = None


class _Stored:
    """The answer to an OffsetCommit the coordinator stored whole (every partition without an
    error: OffsetManager.commit_offsets), as the flat lane's settle takes it; answer() makes the
    dict offset_commit would have answered, for the general way."""
    __slots__ = ("body",)

    def __init__(self, body: dict) -> None:
        self.body = body                   # the request's

    def answer(self) -> dict:
        return {"throttle_time_ms": 0, "topics": [
            {"name": t["name"], "partitions": [{"partition_index": p["partition_index"], "error_code": 0}
                                               for p in t["partitions"]]}
            for t in self.body["topics"]]}


#: The agenda's timing wheel: one slot per ms of the next 8.2 s (latencies, heartbeats and
#: auto-commits fall within it); an item due later waits in a heap until the wheel reaches it.
_WHEEL = 1 << 13
_MASK = _WHEEL - 1
_HEARTBEAT = 12                        # its API key
_OFFSET_COMMIT = 8
_NEVER = 1 << 62                       # an ms after every run (an int: compares faster than inf)
#: Below this many items in the wheel the agenda jumps to its next item (_next_slot, about as
#: dear as stepping over 6 empty ms) instead of stepping ms by ms: a few hundred members' items,
#: spread over a heartbeat interval, leave gaps of several ms.
_SPARSE = 512


class Simulator(Driver):
    mode = "simulate"
    # No instance __dict__ (nor the Driver's): CPython 3.11 specializes attribute and method access
    # on slots, while an instance dict of more than 30 keys is not shared, and every method call on
    # it (self._drive, self._push) then takes the slow generic lookup. A new attribute goes here.
    __slots__ = ("realtime", "max_lag_ms", "progress", "codec", "connect_ms", "end", "loss", "versions",
                 "service", "now", "wall_s", "_corr", "_cursor", "_far", "_far_enters", "_id_rngs", "_net_rngs",
                 "_queued", "_seq", "_service_wake", "_timers_seen", "_uniform", "_wheel",
                 "_n_items", "_n_lost", "_n_polls", "_n_polls_skipped", "_n_requests",
                 "_arrive_cb", "_respond_cb", "_deliver_cb", "_wake_cb", "_hb_arrive_cb", "_hb_deliver_cb", "_commit_arrive_cb", "_commit_deliver_cb",
                 "_producer_conn", "_conn_ids")
    #: the steady state's lanes (_wake): off, every request takes the general way (what a lane must
    #: equal: tests/sim/test_lanes.py)
    lanes = True
    #: the lanes' flat lane (_Flat; off, the lanes check everything at every request)
    flat_lane = True

    def __init__(self, scenario: Scenario, seed: int, *, progress: bool | Callable[[int], None] = False,
                 realtime: bool = False, groups=None):
        super().__init__(scenario, seed)
        if groups is not None:
            self.only = set(groups)         # a shard: these groups' members only (see simulate())
        self.realtime = realtime            # pace virtual time by the wall clock (bench/fleet.py)
        self.max_lag_ms = 0
        self.now = 0
        self.end = scenario.duration_ms
        # the agenda (see _push and _loop): slot ms & _MASK holds what is due at ms, for the
        # _WHEEL ms from _cursor (the ms being run) on, in the order it was scheduled
        self._wheel: list[list] = [[] for _ in range(_WHEEL)]
        self._far: list = []               # (ms, seq, fn, arg): due beyond the wheel when scheduled
        self._far_enters = _NEVER          # the ms the first of them enters the wheel
        self._seq = itertools.count()
        self._cursor = 0
        self._queued = 0                   # items in the wheel (none: _loop skips ahead)
        # every random stream belongs to one client, group or topic, so that what happens to a
        # group depends only on the seed and on the group itself (and the cluster-wide events):
        # a shard of the groups (see simulate()) replays exactly its part of the whole run
        self._net_rngs: dict[str, random.Random] = {}
        self._id_rngs: dict[str, random.Random] = {}
        self.loss = scenario.network.loss
        self.codec = scenario.network.codec
        self.connect_ms = scenario.network.connect_ms
        lat = scenario.network.latency
        # the default distribution, drawn inline on the hot path (as latency_sampler draws it)
        self._uniform = (lat["min_ms"], lat["max_ms"] - lat["min_ms"]) if lat["dist"] == "uniform" else None
        cfg = BrokerConfig(dict(scenario.coordinator.config), profile=scenario.coordinator.profile, environ={})
        self.service = Service(cfg, nodes=scenario.coordinator.nodes, clock=self.now_ms, emit=self.events.append,
                               member_id_factory=self._member_id,
                               topic_id_factory=lambda name: uuid.UUID(
                                   int=random.Random(f"{seed}/topic/{name}").getrandbits(128), version=4))
        for node in self.service.cluster.nodes.values():
            self.service.set_node_address(node.node_id, f"node{node.node_id}.sim", 9092)
        for name, n in scenario.topics.items():
            self.service.create_topic(name, n)
        set_group_configs(self.service, scenario)
        self.versions = self.service.supported_versions()
        self._service_wake = _NEVER          # when the coordinator's next timer is due (_arm_service)
        self._timers_seen = -1                 # Timers.changes when _arm_service last asked
        self._corr = itertools.count(1)
        self.progress = progress
        # what every request schedules, its methods bound once (a method read from the instance
        # is a new bound-method object each time, and CPython 3.11 does not specialize that load)
        self._arrive_cb, self._respond_cb, self._deliver_cb, self._wake_cb = (
            self._arrive, self._respond, self._deliver, self._wake)
        self._hb_arrive_cb, self._hb_deliver_cb, self._commit_arrive_cb, self._commit_deliver_cb = (
            self._hb_arrive, self._hb_deliver, self._commit_arrive, self._commit_deliver)
        # run statistics (see stats): plain counters on the hot path
        self._n_requests = self._n_lost = self._n_polls = self._n_polls_skipped = self._n_items = 0
        self._conn_ids = itertools.count(1)                # the service's connection ids
        self._producer_conn = itertools.count(1 << 40)    # the producers' (none of a member's)

    @property
    def stats(self) -> dict:
        return {"requests": self._n_requests, "lost": self._n_lost, "member_polls": self._n_polls,
                "polls_skipped": self._n_polls_skipped, "heap_events": self._n_items}

    def _member_id(self, prefix: str) -> str:
        rng = self._id_rngs.get(prefix)
        if rng is None:
            rng = self._id_rngs[prefix] = random.Random(f"{self.seed}/ids/{prefix}")
        return f"{prefix}-{uuid.UUID(int=rng.getrandbits(128), version=4)}"

    # ---- Driver primitives --------------------------------------------------------------------
    def now_ms(self) -> int:
        return self.now

    def ts_ms(self) -> int:            # the events' clock is the scenario's (one call, not two)
        return self.now

    def at(self, ms: int, fn: Callable[[], None]) -> None:
        self._push(ms, _call, fn)

    def _push(self, ms: int, fn, arg) -> None:
        """Schedule fn(arg) at ms (a time already past: now, after what is due now)."""
        ahead = ms - self._cursor
        if ahead < _WHEEL:
            self._wheel[(ms if ahead >= 0 else self._cursor) & _MASK].append((fn, arg))
            self._queued += 1
        else:
            heapq.heappush(self._far, (ms, next(self._seq), fn, arg))
            if ms - _MASK < self._far_enters:
                self._far_enters = ms - _MASK

    def start_member(self, c: Client) -> None:
        prev: _Running | None = c.handle
        if prev is not None and not prev.dead:
            prev.start_after_close = True           # starts once the old process has closed
            return
        spec = c.spec
        if spec.share:
            # (a new member id per process, as Kafka's client makes one)
            member = ShareMember(share_config(c), topics=c.topics, now=self.now,
                                 rng=random.Random(f"{self.seed}/{c.name}/{c.generation}"))
        else:
            member = Member(consumer_config(c), topics=c.topics, now=self.now,
                            rng=random.Random(f"{self.seed}/{c.name}"), fetch=spec.work_queue)
        consumer = spec.consumer
        if spec.protocol == "eager" and not consumer and not spec.share:
            member.protocol = RebalanceProtocol.EAGER
        rng = self._net_rngs.get(c.name)
        if rng is None:
            rng = self._net_rngs[c.name] = random.Random(f"{self.seed}/net/{c.name}")
        r = _Running(c, member, self.now + rng.randrange(max(1, spec.processing_ms)), rng,
                     latency_sampler(self.scenario.network.latency, rng))
        if spec.work_queue:
            # its own stream of job times: a run of the group does not depend on the others
            r.work = Work(spec, random.Random(f"{self.seed}/jobs/{c.name}/{c.generation}"), self.now)
            r.next_poll = _NEVER               # the application polls as sim/work.py says
        c.handle = r
        c.recorder.member = member
        c.recorder.started()
        if consumer:
            follow(member, c.recorder)
        self._drive(r)

    def stop_member(self, c: Client, crash: bool) -> None:
        r: _Running | None = c.handle
        if r is None or r.dead:
            return
        if crash:
            self._kill(r, "crash")
            return
        if r.closing:
            return
        r.closing = True
        r.member.close(self.now)
        if r.frozen_until <= self.now:
            self._drive(r)

    def _kill(self, r: _Running, reason: str) -> None:
        r.dead = True
        share = reason == "crash" and r.client.spec.share
        for conn in r.conns.values():
            conn.alive = False
            if share:
                # the process's sockets close with it: the broker hears of it a latency later (Kafka
                # 4.3 releases the records a share session held at once)
                self._push(self.now + r.latency(), self._conn_closed, (conn.node, conn.gid))
        r.conns.clear()
        r.client.recorder.stopped(reason)
        if r.client.handle is r and reason != "close":
            r.client.alive = False
        if r.start_after_close and r.client.alive:
            r.client.handle = None
            self.start_member(r.client)

    def _conn_closed(self, arg) -> None:
        self.service.connection_closed(*arg)
        self._arm_service()

    def freeze(self, c: Client, ms: int) -> None:
        r: _Running | None = c.handle
        if r is None or r.dead:
            return
        r.frozen_until = max(r.frozen_until, self.now + ms)
        self._push(r.frozen_until, self._thaw, r)

    def _thaw(self, r: _Running) -> None:
        if r.dead or self.now < r.frozen_until:
            return
        deferred, r.deferred = r.deferred, []
        for fn, arg in deferred:
            fn(arg)
        self._drive(r)

    def stall(self, c: Client, ms: int) -> None:
        r: _Running | None = c.handle
        if r is None or r.dead:
            return
        w = r.work
        if w is not None:
            # the application hangs: the batch under way ends ms later, or the next poll comes ms later
            w.hang_until = max(w.hang_until, self.now + ms)
            if w.busy_until is not None:
                w.busy_until += ms
                w.token += 1
                self._push(w.busy_until, self._batch_done, (r, w.token))
            else:
                self._push(w.hang_until, self._unhang, r)
            return
        self._app_polls(r)
        r.stall_until = max(r.stall_until, self.now + ms)
        self._push(r.stall_until, self._unstall, r)

    def _unstall(self, r: _Running) -> None:
        if r.dead or self.now < r.stall_until:
            return
        r.next_poll = self.now
        self._wake_or_defer(r)

    def set_subscription(self, c: Client, topics: list[str]) -> None:
        r: _Running | None = c.handle
        if r is None or r.dead:
            return
        r.member.subscribe(topics, self.now)
        self._wake_or_defer(r)

    def add_partitions(self, topic: str, n: int) -> None:
        self.service.cluster.add_partitions(topic, n)

    def produce(self, producer: str, topic: str, partition: int, count: int) -> None:
        """A Produce request handled by the partition's leader at once (the producers are beside the
        cluster: no network), as a client's goes through the service."""
        service = self.service
        leader = service.cluster.leader_for(topic, partition)
        now = self.now
        data = encode_batch([Record(i, 0, None, b"", []) for i in range(count)], base_timestamp=now)
        body = {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": data}]}]}
        ctx = RequestContext(service, leader, producer, "/127.0.0.1", 0, 8,
                             next(self._corr), next(self._producer_conn))
        got: list = []
        service.handle(ctx, body, got.append)
        self._arm_service()
        if not got:
            self.notes.append(f"t={now}: produce to {topic}-{partition}: not answered")
            return
        [part] = got[0]["responses"][0]["partition_responses"]
        if part["error_code"]:
            self.notes.append(f"t={now}: produce to {topic}-{partition}: error {part['error_code']}")
            return
        self.produced(producer, topic, partition, part["base_offset"], part["base_offset"] + count - 1)

    def move_coordinator(self, group: str, node: int | None) -> None:
        from groupcoord.coordinator.faults import FaultError
        try:
            self.service.faults.move_group(group, node)
        except FaultError as e:
            self.notes.append(f"t={self.now}: move_coordinator {group}: {e}")

    def node_down(self, node: int) -> None:
        """The node stops: leaders of what it led are re-elected (cluster.node_down) and every
        connection to it breaks."""
        from groupcoord.coordinator.faults import FaultError
        try:
            self.service.faults.node_down(node)
        except FaultError as e:
            self.notes.append(f"t={self.now}: node_down {node}: {e}")
            return
        for c in self.clients.values():
            r = c.handle
            if r is None or r.dead:
                continue
            broken = [conn for conn in r.conns.values() if conn.node == node]
            for conn in broken:
                self._break(r, conn)
            if broken:
                self._wake_or_defer(r)

    def node_up(self, node: int) -> None:
        if self.service.cluster.nodes[node].up:
            self.notes.append(f"t={self.now}: node_up {node}: it is up already")
            return
        self.service.cluster.node_up(node)

    def net_partition(self, c: Client, ms: int) -> None:
        r: _Running | None = c.handle
        if r is None or r.dead:
            return
        r.cut_until = max(r.cut_until, self.now + ms)
        for conn in list(r.conns.values()):
            self._break(r, conn)
        self._wake_or_defer(r)

    def _break(self, r: _Running, conn: _Conn) -> None:
        conn.alive = False
        r.conns.pop(conn.cid, None)
        self._input(r, self._lost, (r, conn.cid))

    # ---- driving a member ----------------------------------------------------------------------
    def _input(self, r: _Running, fn, arg) -> None:
        """Feed an input to a member now, or when it thaws."""
        if r.frozen_until > self.now:
            r.deferred.append((fn, arg))
        else:
            fn(arg)

    def _lost(self, arg) -> None:
        r, cid = arg
        r.member.on_connection_lost(cid, self.now)

    def _wake_or_defer(self, r: _Running) -> None:
        if r.frozen_until <= self.now and not r.dead:
            self._drive(r)

    def _app_polls(self, r: _Running) -> bool:
        """The application's polls since the last look: positions advance, the poll timer resets.
        True if that asked the member to rejoin (the first poll after a poll timeout)."""
        if r.next_poll > self.now or r.stall_until > self.now:
            return False
        return self._app_polls_due(r)

    def _app_polls_due(self, r: _Running) -> bool:
        """_app_polls once a poll is known to be due (not stalled, r.next_poll come)."""
        now = self.now
        period = r.period
        k = (now - r.next_poll) // period + 1
        last = r.next_poll + (k - 1) * period
        r.next_poll = last + period
        m = r.member
        rejoin = m.application_poll(last)
        step = k * r.records
        if step and m.positions:
            pos = m.positions
            for tp in pos:
                pos[tp] += step
        return rejoin

    def _unhang(self, r: _Running) -> None:
        if not r.dead and r.work is not None and r.work.hang_until <= self.now:
            self._wake_or_defer(r)

    def _batch_done(self, arg) -> None:
        """A work-queue member's application processed the records of its last poll."""
        r, token = arg
        w = r.work
        if r.dead or w is None or w.token != token or w.busy_until is None:
            return
        if r.frozen_until > self.now:
            r.deferred.append((self._batch_done, arg))
            return
        batch = w.batch
        r.client.recorder.batch_processed(batch, w.started, w.busy_ms)
        if r.closing:
            w.batch, w.busy_until = [], None            # closing: nothing more to acknowledge or commit
        else:
            w.end_batch(r.member, self.now)
        self._drive(r)

    def _work(self, r: _Running) -> bool:
        """A work-queue member's application, when it is in a poll: the poll's records, if the
        member has some, and their processing begins (True)."""
        w = r.work
        now = self.now
        if not w.waiting or w.hang_until > now or r.closing:
            return False
        m = r.member
        w.polled(m, now)
        records = w.take(m, now)
        if not records:
            return False
        r.client.recorder.polled(records)
        self._push(w.start_batch(records, now), self._batch_done, (r, w.token))
        return True

    def _drive(self, r: _Running, app: bool = True, idle: bool = False) -> None:
        """Poll the member until it has nothing more to do now, carrying out its actions; then
        wake it at its next deadline. (``app`` False: its application's polls were looked at.
        ``idle``: the rebalance's lane, each poll Member.idle_poll where it may be.)"""
        if r.dead:
            return
        m = r.member
        now = self.now
        if app:
            if r.work is not None:
                self._work(r)
            elif r.next_poll <= now and r.stall_until <= now and (
                    now >= m.quiet_until or now >= m.commits.next_auto_commit):
                # (a quiet member's poll that may only heartbeat reads neither the positions nor
                # the poll timer: the application's polls are counted at the next look, as many)
                self._app_polls_due(r)
        for _ in range(1000):
            # (the rebalance's lane: the poll after its answer, and after the listener's callback)
            actions = m.idle_poll(now) if idle else None
            if actions is None:
                actions = m.poll(now)
            self._n_polls += 1
            if not actions:
                break
            again = False
            for a in actions:
                if type(a) is SendRequest:           # the common action, without the dispatch
                    if self._send(r, a):
                        again = True
                elif self._execute(r, a):
                    again = True
                if r.dead:
                    return
            if not again:
                break
        w = r.work
        if w is not None and w.waiting and self._work(r):
            self._drive(r)                      # records came: the application's poll took them
            return
        d = m.next_deadline()
        if d is not None and (r.wake_at is None or d < r.wake_at or r.wake_at <= now):
            r.wake_at = d
            self._push(d, self._wake_cb, r)

    def _wake(self, r: _Running) -> None:
        now = self.now
        if r.dead or r.wake_at != now:
            return
        r.wake_at = None
        if r.frozen_until > now:
            return                               # _thaw drives it
        f = r.flat
        if f is not None:
            if self._flat_wake(r, f, now):
                return
            r.flat = None                        # (not the flat lane's: the lanes' or the general way's)
        m = r._m
        if r.work is None and now < m.quiet_until and self.lanes:
            # the lanes of the steady state: _drive when its poll is a quick one that only sends
            # the heartbeat or only commits, without the poll's general machinery
            if r.next_poll <= now and r.stall_until <= now and now >= m.commits.next_auto_commit \
                    and self._app_polls_due(r):       # (_drive's look at the application's polls)
                self._drive(r, False)
                return
            commits = m.commits
            # (each lane's poll needs the other's timer not due: only one of them may take it)
            a = None if commits.auto_commit and now >= commits.next_auto_commit else m.quick_heartbeat(now)
            if a is not None:                                 # the heartbeat's lane
                self._n_polls += 1
                # _send, written out for the heartbeat (a call less a heartbeat)
                conn = r.conns.get(a.conn_id)
                if conn is None or not conn.alive:
                    m.on_connection_lost(a.conn_id, now)
                    self._drive(r, False)            # the connection was gone: polled again
                    return
                self._n_requests += 1
                if self.loss and r.rng.random() < self.loss:
                    self._n_lost += 1
                else:
                    u = self._uniform
                    t = now + (r.latency() if u is None else int(u[0] + u[1] * r.rng.random() + 0.5))
                    if t < conn.req_at:
                        t = conn.req_at
                    conn.req_at = t
                    if t - self._cursor < _WHEEL:
                        self._wheel[t & _MASK].append((self._hb_arrive_cb, (r, conn, a)))
                        self._queued += 1
                    else:
                        self._push(t, self._hb_arrive_cb, (r, conn, a))
            else:
                # the auto-commit's lane: the quick poll that only commits, its actions carried out
                # as _drive's first pass carries them out
                actions = m.quick_auto_commit(now)
                if actions is None:
                    self._drive(r, False)
                    return
                self._n_polls += 1
                again = False
                for a in actions:
                    if self._send(r, a) if type(a) is SendRequest else self._execute(r, a):
                        again = True
                    if r.dead:
                        return
                if again:
                    self._drive(r, False)
                    return
            d = m.next_deadline()
            if d is not None:
                r.wake_at = d
                if d - self._cursor < _WHEEL:           # (_push, d being later than now)
                    self._wheel[d & _MASK].append((self._wake_cb, r))
                    self._queued += 1
                else:
                    self._push(d, self._wake_cb, r)
            if self.flat_lane and not r.dead:
                self._flatten(r, now)
            return
        self._drive(r)

    # ---- the flat lane of the steady state (_Flat) ----------------------------------------------
    def _flatten(self, r: _Running, now: int) -> None:
        """The member into the flat lane, if it is in the steady state the lane keeps (see _Flat):
        what the lanes' quick polls check, and only an input or a whole poll can change, holds."""
        m = r._m
        if (r.work is not None or r.closing or type(m) is not Member or now >= m.quiet_until
                or m.consumer_protocol or m.fatal_error is not None or m.closed or m.closing is not None):
            return
        gen = m.membership.generation
        if r.calm is not gen:
            # its first lane's wake-up in this generation: the next one, if the generation lasts
            # (in a rolling restart's rebalances the lane would be left again at once)
            r.calm = gen
            return
        net = m.net
        commits = m.commits
        group = m.membership
        for op in commits.ops:
            if not op.done:
                return
        if (net.actions or group.state is not STABLE or group.completion is not None
                or group.prepare is not None or group.left_on_poll_timeout or group.callbacks_pending
                or m.discovery.coordinator is None or not m.subscription or group.generation.generation_id < 0
                or commits.api_timeout_ms <= 0):
            return
        for q in net.inflight.values():
            if q.api_key != _HEARTBEAT:
                return
        cid = net.by_key.get(COORDINATOR)
        if cid is None:
            return
        conn = net.conns[cid]
        version = conn.picked.get(_HEARTBEAT)
        if version is None or conn.versions is None:
            return
        r.flat = _Flat(m, conn, version)

    def _flat_wake(self, r: _Running, f: _Flat, now: int) -> bool:
        """_wake of a member in the flat lane when the lanes would take it: its heartbeat due (the
        heartbeat's lane: Member.quick_heartbeat, then the request sent as _wake sends it), or its
        auto-commit due (the auto-commit's lane: Member.quick_auto_commit, its OffsetCommit sent as
        _send sends it, or nothing when there is nothing to commit), the application's polls
        counted first; then its next wake-up (Member.next_deadline). The same changes in the same
        order, without the checks _Flat keeps. False: neither; then only
        the application's polls may have been counted, as _wake's lanes count them first (the lanes
        go on as after their own count)."""
        m = f.m
        if now >= m.quiet_until:
            return False
        hb = f.hb
        commits = f.commits
        if r.next_poll <= now and r.stall_until <= now and now >= commits.next_auto_commit:
            # _wake's look at the application's polls, _app_polls_due written out
            # (Member.application_poll: no poll timeout can have left the group meanwhile)
            period = r.period
            k = (now - r.next_poll) // period + 1
            last = r.next_poll + (k - 1) * period
            r.next_poll = last + period
            hb.last_app_poll = last
            step = k * r.records
            if step and m.positions:
                pos = m.positions
                for tp in pos:
                    pos[tp] += step
        ops = commits.ops
        if commits.auto_commit and now >= commits.next_auto_commit:
            # the auto-commit's lane (Member.quick_auto_commit, then _send)
            if not hb.in_flight and now >= hb.next:
                return False                     # the heartbeat due as well
            for op in ops:
                if not op.done:
                    return False                 # a commit under way
            offsets = None if f.empty else m.all_consumed()
            if offsets:
                conn = r.conns.get(f.cid)
                if f.commit_version is None or conn is None or not conn.alive:
                    return False                 # (the general way's first commit picks the version)
            m._now = now
            ops.clear()
            commits.next_auto_commit = now + commits.auto_commit_interval_ms
            self._n_polls += 1
            if offsets:
                # Commits.start, Commits.send and Connections.send, without their checks (_Flat
                # keeps them) and the action's round trip: all_consumed's dict is the op's own and
                # in the partitions' order already
                net = f.net
                op = CommitOp(next(net.ids), "auto", offsets, now + commits.api_timeout_ms, False)
                ops.append(op)
                gid, mid = f.ctx
                body = offset_commit_body(m.group_id, gid, mid, m.group_instance_id, offsets.items())
                rid = next(net.ids)
                timeout = net.request_timeout_ms
                a = net.inflight[rid] = SendRequest(rid, f.cid, _OFFSET_COMMIT, f.commit_version, body, timeout,
                                                    commits.on_commit, now + timeout, (op, gid, mid, STABLE))
                op.in_flight = True
                f.sent = a
                if a.deadline < m.quiet_until:
                    m.quiet_until = a.deadline
                self._send(r, a)                 # (its connection is alive: it goes to _commit_arrive)
        elif not hb.in_flight and now >= hb.next:
            # the heartbeat's lane (Member.quick_heartbeat, then the request sent as _wake sends it)
            for op in ops:
                if not op.done:
                    return False                 # a commit under way
            conn = r.conns.get(f.cid)
            if conn is None or not conn.alive:
                return False
            net = f.net
            m._now = now
            if ops:
                ops.clear()                      # done ones, as Commits.step drops them
            rid = next(net.ids)
            timeout = net.request_timeout_ms
            deadline = now + timeout
            # one request object for the lane's heartbeats (-1.8% instructions a request): the last one
            # was answered, or the member left the lane, before the next one goes (hb.in_flight)
            a = f.hb_req
            if a is None or a.timeout_ms != timeout:
                a = f.hb_req = SendRequest(rid, f.cid, _HEARTBEAT, f.version, f.body, timeout, f.handler, deadline,
                                           f.ctx)
            else:
                a.request_id = rid
                a.deadline = deadline
            net.inflight[rid] = a
            hb.in_flight = True
            hb.next = now + hb.interval_ms
            if deadline < m.quiet_until:
                m.quiet_until = deadline
            self._n_polls += 1
            self._n_requests += 1
            if self.loss and r.rng.random() < self.loss:
                self._n_lost += 1
            else:
                u = self._uniform
                t = now + (r.latency() if u is None else int(u[0] + u[1] * r.rng.random() + 0.5))
                if t < conn.req_at:
                    t = conn.req_at
                conn.req_at = t
                if t - self._cursor < _WHEEL:
                    self._wheel[t & _MASK].append((self._hb_arrive_cb, (r, conn, a)))
                    self._queued += 1
                else:
                    self._push(t, self._hb_arrive_cb, (r, conn, a))
        else:
            return False
        # Member.next_deadline, of a member stable, neither failed nor closing
        static = m._static
        if now >= static[0]:
            static = m._static = m._static_deadline(now)
        rare = static[0]
        for q in f.net.inflight.values():
            d = q.deadline
            if now < d < rare:
                rare = d
        d = hb.session_deadline
        if d is not None and now < d < rare:
            rare = d
        d = hb.last_app_poll + hb.max_poll_interval_ms
        if now < d < rare:
            rare = d
        if m.quiet_until:
            retry = static[1]
            m.quiet_until = retry if now < retry < rare else rare
        best = rare
        if not hb.in_flight:
            d = hb.next
            if now < d < best:
                best = d
        if commits.auto_commit:
            d = commits.next_auto_commit
            if now < d < best:
                best = d
        for op in ops:
            if op.done:
                continue
            if not op.in_flight:
                d = op.next_try
                if now < d < best:
                    best = d
            d = op.deadline
            if now < d < best:
                best = d
        if best != _NEVER:
            r.wake_at = best
            if best - self._cursor < _WHEEL:
                self._wheel[best & _MASK].append((self._wake_cb, r))
                self._queued += 1
            else:
                self._push(best, self._wake_cb, r)
        return True

    def _flat_settle(self, r: _Running, f: _Flat, rid: int, resp: dict, now: int) -> bool:
        """_hb_deliver of a member in the flat lane when the heartbeat's lane would settle it
        (Member.heartbeat_settled, without the checks _Flat keeps). False: it would not (the
        member has not been changed)."""
        w = r.wake_at
        m = f.m
        hb = f.hb
        if (r.frozen_until > now or w is None or w <= now or resp["error_code"] or now >= hb.next
                or (r.next_poll <= now and r.stall_until <= now and now >= m.quiet_until)):
            return False
        inflight = f.net.inflight
        req = inflight.get(rid)
        if req is None or req.api_key != _HEARTBEAT:
            return False
        del inflight[rid]
        m._now = now
        hb.in_flight = False
        hb.session_deadline = now + hb.session_timeout_ms
        d = m.settled_deadline = hb.next
        self._n_polls_skipped += 1
        if d < w:
            r.wake_at = d
            if d - self._cursor < _WHEEL:           # (_push, d being later than now)
                self._wheel[d & _MASK].append((self._wake_cb, r))
                self._queued += 1
            else:
                self._push(d, self._wake_cb, r)
        return True

    def _execute(self, r: _Running, a) -> bool:
        """Carry out one action; True if the member got an input (poll it again)."""
        m = r.member
        c = r.client
        if isinstance(a, SendRequest):
            return self._send(r, a)
        if isinstance(a, RebalanceCallback):
            c.recorder.callback(a.kind, a.partitions)
            if c.spec.callback_ms:
                self._push(self.now + c.spec.callback_ms, self._callback_done, (r, a.token))
                return False
            m.callback_done(a.token, self.now)
            return True
        if isinstance(a, CommitCompleted):
            if a.error is None:
                c.recorder.committed(a.offsets)
            return False
        if isinstance(a, AcknowledgementsCommitted):
            c.recorder.acknowledged(a.results, a.types)
            return False
        if isinstance(a, Connect):
            self._connect(r, a)
            return False
        if isinstance(a, Disconnect):
            conn = r.conns.pop(a.conn_id, None)
            if conn is not None:
                conn.alive = False
            return False
        if isinstance(a, ErrorRaised):
            if a.fatal:
                self._kill(r, stop_reason(a.error))
            return False
        if isinstance(a, Closed):
            self._kill(r, "close")
            return False
        return False                             # OffsetsFetched: nothing to do

    def _send(self, r: _Running, a: SendRequest) -> bool:
        """A SendRequest: on its way to the service (True if the member got an input instead)."""
        conn = r.conns.get(a.conn_id)
        if conn is None or not conn.alive:
            r.member.on_connection_lost(a.conn_id, self.now)
            return True
        self._n_requests += 1
        if self.loss and r.rng.random() < self.loss:
            self._n_lost += 1
            return False
        u = self._uniform
        t = self.now + (r.latency() if u is None else int(u[0] + u[1] * r.rng.random() + 0.5))
        if t < conn.req_at:
            t = conn.req_at
        conn.req_at = t
        # (a heartbeat and an OffsetCommit go to their lanes, which fall back on _arrive)
        key = a.api_key
        cb = self._arrive_cb if not self.lanes else self._hb_arrive_cb if key == _HEARTBEAT \
            else self._commit_arrive_cb if key == _OFFSET_COMMIT else self._arrive_cb
        if t - self._cursor < _WHEEL:              # (t is not before now: the wheel's slot)
            self._wheel[t & _MASK].append((cb, (r, conn, a)))
            self._queued += 1
        else:
            self._push(t, cb, (r, conn, a))
        return False

    def _callback_done(self, arg) -> None:
        r, token = arg
        if r.dead:
            return
        if r.frozen_until > self.now:
            r.deferred.append((self._callback_done, arg))
            return
        r.member.callback_done(token, self.now)
        self._drive(r)

    def _connect(self, r: _Running, a: Connect) -> None:
        cluster = self.service.cluster
        node = a.node_id
        if node is None:
            node = next((n for n in cluster.node_ids() if cluster.nodes[n].up), None)
        if r.cut_until > self.now or node is None or node not in cluster.nodes or not cluster.nodes[node].up:
            delay = r.member.config["socket.connection.setup.timeout.ms"] if r.cut_until > self.now \
                else 2 * r.latency() + self.connect_ms
            self._push(self.now + delay, self._connect_failed, (r, a.conn_id))
            return
        conn = _Conn(a.conn_id, next(self._conn_ids), node)
        r.conns[a.conn_id] = conn
        t = self.now + 2 * r.latency() + self.connect_ms    # TCP, then ApiVersions
        conn.req_at = conn.resp_at = t
        self._push(t, self._connected, (r, conn))

    def _connected(self, arg) -> None:
        r, conn = arg
        if r.dead or not conn.alive:
            return
        if r.frozen_until > self.now:
            r.deferred.append((self._connected, arg))
            return
        r.member.on_connected(conn.cid, self.versions, self.now)
        self._drive(r)

    def _connect_failed(self, arg) -> None:
        r, cid = arg
        if r.dead:
            return
        if r.frozen_until > self.now:
            r.deferred.append((self._connect_failed, arg))
            return
        r.member.on_connection_lost(cid, self.now)
        self._drive(r)

    # ---- the service side ---------------------------------------------------------------------
    def _arrive(self, arg) -> None:
        r, conn, a = arg
        if not conn.alive:
            return
        if conn.busy:
            conn.queue.append(a)
        elif conn.queue:                          # the next is waiting for _serve_next
            conn.queue.append(a)
            self._serve(r, conn)
        else:
            self._serve_one(r, conn, a)

    def _hb_arrive(self, arg) -> None:
        """_arrive of a heartbeat the lane sent (_wake): answered as _serve_one answers it, without
        its context (no authorizer to ask), when nothing waits on the connection; _respond written
        out (a call less a heartbeat)."""
        r, conn, a = arg
        if not conn.alive:
            return
        service = self.service
        body = a.body
        group_id = body["group_id"]
        if (conn.busy or conn.queue or self.codec or service.before_request or service.after_request
                or service.security.authorizer is not None or not group_id
                or (conn.coordinates != service.cluster.epoch and not self._coordinates(conn, group_id))):
            self._arrive(arg)
            return
        next(self._corr)                  # (drawn, as _serve_one draws it)
        # the connection's last heartbeat request again while it says the same (the coordinator
        # keeps none: a heartbeat is answered at once)
        req = conn.heartbeat_req
        if body is not conn.heartbeat_body:     # (the flat lane sends one body a generation: _Flat)
            generation_id, member_id = body["generation_id"], body["member_id"]
            instance_id = body["group_instance_id"] if a.api_version >= 3 else None
            if (req is None or req.generation_id != generation_id or req.member_id != member_id
                    or req.group_id != group_id or req.group_instance_id != instance_id):
                req = conn.heartbeat_req = HeartbeatRequest(group_id, generation_id, member_id, instance_id)
            conn.heartbeat_body = body
        code = service.group_coordinator.heartbeat_error(req)
        resp = heartbeat_api.ANSWERS.get(code) or heartbeat_api.answer_of(code)
        if not self.loss or r.rng.random() >= self.loss:
            u = self._uniform
            t = self.now + (r.latency() if u is None else int(u[0] + u[1] * r.rng.random() + 0.5))
            if t < conn.resp_at:
                t = conn.resp_at
            conn.resp_at = t
            if t - self._cursor < _WHEEL:
                self._wheel[t & _MASK].append((self._hb_deliver_cb, (r, conn, a.request_id, resp)))
                self._queued += 1
            else:
                self._push(t, self._hb_deliver_cb, (r, conn, a.request_id, resp))
        else:
            self._n_lost += 1
        if service.timers.changes != self._timers_seen or self._service_wake < self.now:
            self._arm_service()           # (its early return, written out)

    def _coordinates(self, conn: _Conn, group_id: str) -> bool:
        """Whether conn's node is the coordinator of group_id (kept for the cluster's epoch)."""
        cluster = self.service.cluster
        if cluster.coordinator_for(group_id) != conn.node:
            return False
        conn.coordinates = cluster.epoch
        return True

    def _commit_arrive(self, arg) -> None:
        """_arrive of an OffsetCommit when nothing waits on the connection and the API layer passes
        it to the coordinator whole: answered as _serve_one answers it, without its context (a
        flat member's without the API layer's checks either, see _flat_commits_pass)."""
        r, conn, a = arg
        if not conn.alive:
            return
        service = self.service
        if conn.busy or conn.queue or self.codec or service.before_request or service.after_request:
            self._arrive(arg)
            return
        f = r.flat
        if (f is not None and f.sent is a and service.security.authorizer is None
                and (f.passes == service.cluster.epoch or self._flat_commits_pass(f, conn, a.body))):
            # a commit of the flat lane's, its topics the member's own: commit_whole without what
            # _flat_commits_pass found for every commit of the member's assignment
            corr = next(self._corr)
            req = f.request
            gc = service.group_coordinator
            if req.retention_time_ms == -1 and gc.commit_offsets(
                    req.group_id, req.generation_id, req.member_id, req.group_instance_id,
                    [(tp.topic, tp.partition, om.offset, -1 if om.leader_epoch is None else om.leader_epoch,
                      om.metadata) for tp, om in a.ctx[0].offsets.items()]):
                # stored whole: its answer (every partition without an error) made only if the general
                # way takes it (_Stored)
                self._respond(r, conn, a, corr, _Stored(a.body))
            else:
                conn.busy = True
                gc.offset_commit(partial(self._respond_cb, r, conn, a, corr), req.with_topics(a.body["topics"]))
            self._arm_service()
            return
        if not offset_commit_api.passes_whole(service, a.api_version, a.body):
            self._arrive(arg)
            return
        conn.busy = True                  # (as _serve_one: until _respond)
        corr = next(self._corr)
        offset_commit_api.commit_whole(service, conn.node, a.api_version, a.body,
                                       partial(self._respond_cb, r, conn, a, corr))
        self._arm_service()

    def _flat_commits_pass(self, f: _Flat, conn: _Conn, body: dict) -> bool:
        """Whether the API layer passes every commit the flat member f may send (its assigned
        partitions, in any part: offset_commit_api.passes_whole of them all) to the coordinator
        on conn's node whole, at the cluster's epoch now; then kept in f, with the coordinator's
        request of body but for its topics (offset_commit_api.request_of: the same for each)."""
        service = self.service
        topics: dict[str, list] = {}
        for tp in f.m.assignment:
            topics.setdefault(tp.topic, []).append({"partition_index": tp.partition})
        whole = {"topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
        if (not offset_commit_api.passes_whole(service, f.commit_version, whole)
                or not self._coordinates(conn, body["group_id"])):
            return False
        request = offset_commit_api.request_of(f.commit_version, body, [])
        if request.error() is not None:
            return False
        f.request = request
        f.passes = service.cluster.epoch
        return True

    def _hb_deliver(self, arg) -> None:
        """_deliver of a heartbeat's answer (_hb_arrive) when it settles and no poll is due."""
        r, conn, rid, resp = arg
        now = self.now
        if r.dead or not conn.alive:
            return
        f = r.flat
        if f is not None:
            if self._flat_settle(r, f, rid, resp, now):
                return
            r.flat = None
        m = r._m
        w = r.wake_at
        if (r.frozen_until > now or w is None or w <= now
                or (r.next_poll <= now and r.stall_until <= now and now >= m.quiet_until)):
            self._deliver(arg)
            return
        d = m.heartbeat_settled(rid, resp, now)
        if d is None:
            self._deliver(arg)
            return
        self._n_polls_skipped += 1
        if m.net.actions:
            again = False
            for a in m.take_actions():
                if self._execute(r, a):
                    again = True
                if r.dead:
                    return
            if again:
                self._drive(r)
                return
        if d < w:
            r.wake_at = d
            self._push(d, self._wake_cb, r)

    def _flat_commit_settle(self, r: _Running, f: _Flat, rid: int, resp: dict, now: int) -> bool:
        """_commit_deliver of a member in the flat lane when the auto-commit's lane would settle it
        (Member.commit_settled, without the checks _Flat keeps). False: it would not (the member
        has not been changed)."""
        w = r.wake_at
        m = f.m
        if (r.frozen_until > now or w is None or w <= now
                or (r.next_poll <= now and r.stall_until <= now and now >= m.quiet_until)):
            return False
        inflight = f.net.inflight
        req = inflight.get(rid)
        if req is None or req.api_key != _OFFSET_COMMIT:
            return False
        op = req.ctx[0]
        if op.done:
            return False
        if type(resp) is not _Stored:
            for t in resp["topics"]:
                for p in t["partitions"]:
                    if p["error_code"]:
                        return False
        m.settled_deadline = None
        del inflight[rid]
        m._now = now
        op.in_flight = False
        op.done = True                                  # Commits.complete, without its action
        op.error = None
        committed = f.commits.committed_offsets
        for tp, om in op.offsets.items():
            committed[tp] = om.offset
        self._n_polls_skipped += 1
        r.client.recorder.committed(op.offsets)
        return True

    def _commit_deliver(self, arg) -> None:
        """_deliver of an OffsetCommit's answer when it settles, the member has no action to hand
        out and no poll is due: the commit completed and recorded without the member's general
        on_response and its CommitCompleted action."""
        r, conn, rid, resp = arg
        now = self.now
        if r.dead or not conn.alive:
            return
        f = r.flat
        if f is not None:
            if self._flat_commit_settle(r, f, rid, resp, now):
                return
            r.flat = None
        if type(resp) is _Stored:
            resp = resp.answer()
            arg = r, conn, rid, resp
        m = r._m
        w = r.wake_at
        if (r.frozen_until > now or w is None or w <= now
                or (r.next_poll <= now and r.stall_until <= now and now >= m.quiet_until)):
            self._deliver(arg)
            return
        offsets = m.commit_settled(rid, resp, now)
        if offsets is None:
            self._deliver(arg)
            return
        self._n_polls_skipped += 1
        r.client.recorder.committed(offsets)

    def _serve(self, r: _Running, conn: _Conn) -> None:
        if conn.busy or not conn.queue or not conn.alive:
            return
        self._serve_one(r, conn, conn.queue.pop(0))

    def _serve_one(self, r: _Running, conn: _Conn, a: SendRequest) -> None:
        conn.busy = True
        corr = next(self._corr)
        body = a.body
        client_id = r.client.name
        if self.codec:
            from groupcoord.protocol import frames
            wire = frames.encode_request(a.api_key, a.api_version, corr, body, client_id, framed=False)
            body = frames.decode_request(wire).body
        service = self.service
        if a.api_key == _HEARTBEAT and not service.before_request and not service.after_request:
            # a heartbeat is answered at once (heartbeat.answer), its context the connection's last
            # one's but for the correlation id, as the server's lane of repeated heartbeats does:
            # no context, no callback a heartbeat
            ctx = conn.heartbeat_ctx
            if ctx is None or ctx.api_version != a.api_version:
                ctx = conn.heartbeat_ctx = RequestContext(service, conn.node, client_id, "/127.0.0.1", _HEARTBEAT,
                                                          a.api_version, corr, conn.gid)
            ctx.correlation_id = corr
            self._respond(r, conn, a, corr, heartbeat_api.answer(ctx, a.api_version, body))
            self._arm_service()
            return
        ctx = RequestContext(service, conn.node, client_id, "/127.0.0.1", a.api_key, a.api_version, corr,
                             conn.gid)
        if not service.before_request and not service.after_request:
            # the pipeline without hooks is the handler: one call less per request (bench/fleet.py instructions)
            service.handle(ctx, body, partial(self._respond_cb, r, conn, a, corr))
            self._arm_service()
            return
        verdict = service.admit(ctx, body)                    # faults (SASL: not in our client)
        if verdict is not None and verdict.delay_ms > 0:      # held, the connection behind it too
            self._push(self.now + verdict.delay_ms, self._dispatch_held, (r, conn, a, corr, ctx, body, verdict))
            return
        self._dispatch(r, conn, a, corr, ctx, body, verdict)

    def _dispatch_held(self, arg) -> None:
        r, conn, a, corr, ctx, body, verdict = arg
        if conn.alive:
            self._dispatch(r, conn, a, corr, ctx, body, verdict)

    def _dispatch(self, r: _Running, conn: _Conn, a: SendRequest, corr: int, ctx, body, verdict) -> None:
        if not self.service.dispatch(ctx, body, partial(self._respond_cb, r, conn, a, corr), verdict):
            self._break(r, conn)          # the verdict closes the connection
            self._wake_or_defer(r)
        self._arm_service()

    def _respond(self, r: _Running, conn: _Conn, a: SendRequest, corr: int, resp: dict | None) -> None:
        if not conn.alive:
            return
        conn.busy = False
        if conn.queue:
            self._push(self.now, self._serve_next, (r, conn))
        if resp is None:
            return
        if self.codec:
            from groupcoord.protocol import frames
            out = frames.encode_response(a.api_key, a.api_version, corr, resp, framed=False)
            resp = frames.decode_response(a.api_key, a.api_version, out)[1]
        if self.loss and r.rng.random() < self.loss:
            self._n_lost += 1
            return
        u = self._uniform
        t = self.now + (r.latency() if u is None else int(u[0] + u[1] * r.rng.random() + 0.5))
        if t < conn.resp_at:
            t = conn.resp_at
        conn.resp_at = t
        # (a heartbeat's and an OffsetCommit's answers go to their lanes, which fall back on _deliver)
        key = a.api_key
        cb = self._deliver_cb if not self.lanes else self._hb_deliver_cb if key == _HEARTBEAT \
            else self._commit_deliver_cb if key == _OFFSET_COMMIT else self._deliver_cb
        if t - self._cursor < _WHEEL:
            self._wheel[t & _MASK].append((cb, (r, conn, a.request_id, resp)))
            self._queued += 1
        else:
            self._push(t, cb, (r, conn, a.request_id, resp))

    def _serve_next(self, arg) -> None:
        r, conn = arg
        self._serve(r, conn)

    def _deliver(self, arg) -> None:
        r, conn, rid, resp = arg
        if r.dead or not conn.alive:
            return
        if r.frozen_until > self.now:
            r.deferred.append((self._deliver_cb, arg))
            return
        m = r.member
        now = self.now
        w = r.wake_at
        if m.on_response(rid, resp, now):
            # an answer that left work: the rebalance's lane may take the poll (Member.idle_poll)
            self._drive(r, True, self.lanes and type(m) is Member)
            return
        if (w is None or w <= now
                or (r.next_poll <= now and r.stall_until <= now and now >= m.quiet_until
                    and self._app_polls_due(r))):
            # poll: the response left work, or no wake-up of the member's last next_deadline()
            # stands (one due now waits in this ms: it must not be taken for the next), or the
            # application's polls since (_app_polls) asked for a rejoin
            self._drive(r)
            return
        # a response that settled all it touched (most heartbeats and auto-commits): no poll, only
        # its actions (a CommitCompleted) carried out; the wake-up standing comes first but for the
        # deadline the response added
        self._n_polls_skipped += 1
        again = False
        for a in m.take_actions():
            if self._execute(r, a):                    # an input after all (none so far)
                again = True
            if r.dead:
                return
        if again:
            self._drive(r)
            return
        d = m.settled_deadline
        if d is not None and d < w:
            r.wake_at = d
            self._push(d, self._wake_cb, r)

    def _arm_service(self) -> None:
        timers = self.service.timers
        if timers.changes == self._timers_seen and self._service_wake >= self.now:
            return                            # the same next deadline, and its wake-up stands
        self._timers_seen = timers.changes
        d = timers.next_deadline()
        if d is not None and (d < self._service_wake or self._service_wake < self.now):
            # _loop runs it before anything else due at that ms: when the coordinator's timers
            # fire must not depend on when another group's request happened to re-arm this wake-up
            self._service_wake = d

    def _service_timers(self, now: int) -> int:
        """Run the coordinator's timers due by now (those they arm for now too); how many runs."""
        n = 0
        while self._service_wake <= now:
            n += 1
            self._service_wake = _NEVER
            self.service.advance(now)
            self._arm_service()
        return n

    # ---- running ------------------------------------------------------------------------------------
    def run(self, until: Callable[[], bool] | None = None, *,
            spill: Callable[[list[dict]], None] | None = None) -> list[dict]:
        """Run to the scenario's end (or until ``until()`` holds, checked about every 1024 items);
        returns the events sorted. With ``spill``, the events are handed to it instead, in the
        log's order, as the run goes (a chunk of at least _SPILL at the end of a ms, the rest at
        the end), and none are returned.

        Python's cyclic garbage collector is off meanwhile: a run makes few cycles (some
        thousand objects an hour) but keeps millions of objects alive (the log above all),
        which every full collection walks again: 14% of a 10-minute run's time."""
        with _no_cyclic_gc():
            if spill is None:
                return self._run(until)
            key = _log_key(self.scenario.group_ids())
            events = self.events
            last = [-1]

            def hand_on() -> None:
                # events are made in the order of their ts_ms: at the end of a ms, those so far
                # sorted come before any later one
                chunk = sorted(events, key=key)
                events.clear()      # (in place: the service and the members append to this list)
                if chunk:
                    if key(chunk[0]) < last[0]:
                        raise RuntimeError(f"an event of ts_ms {chunk[0]['ts_ms']} made after a later one")
                    last[0] = key(chunk[-1])
                    spill(chunk)

            def until_or_spill() -> bool:
                if len(events) >= _SPILL:
                    hand_on()
                return until is not None and until()

            self._run(until_or_spill)
            hand_on()
            return []

    def _run(self, until: Callable[[], bool] | None) -> list[dict]:
        self.plan()
        wall0 = time.perf_counter()
        with contextlib.ExitStack() as stack:
            # progress: a bar of its own, or a function told how far the run is
            report = self.progress if callable(self.progress) else \
                stack.enter_context(progress_bar(self.scenario.name, self.end)) if self.progress else None
            self._n_items = self._loop(until, report, wall0)
            if report is not None:
                report(self.end)
        self.now = self.end
        self.wall_s = time.perf_counter() - wall0
        return canonical_order(self.events, self.scenario.group_ids())

    def _loop(self, until, report, wall0: float) -> int:
        """Run the agenda ms by ms up to self.end; returns how many items ran. At each ms the
        coordinator's timer wake-up (_service_wake) goes first, then the slot's items in the
        order they were scheduled, those scheduled meanwhile for this ms included. At the end of
        a ms in which another 1024 items ran, ``until()`` may end the run there; every 16384
        items ``report(now)`` is told the virtual time."""
        wheel, far = self._wheel, self._far
        pop = heapq.heappop
        end = self.end
        realtime = self.realtime
        checks = until is not None or report is not None
        now = self._cursor
        n = 0
        while now <= end:
            if now >= self._far_enters:
                while far and far[0][0] - now < _WHEEL:       # it enters the wheel: its slot
                    ms, _, fn, arg = pop(far)                  # has nothing scheduled later yet
                    wheel[ms & _MASK].append((fn, arg))
                    self._queued += 1
                self._far_enters = far[0][0] - _MASK if far else _NEVER
            slot = wheel[now & _MASK]
            if slot or self._service_wake <= now:
                if realtime:
                    self._pace(now, wall0)
                self.now = now
                before = n
                if self._service_wake <= now:
                    n += self._service_timers(now)
                for fn, arg in slot:        # (what runs schedules for now too: the list grows meanwhile)
                    fn(arg)
                    if self._service_wake <= now:       # a timer armed for now goes before the next item
                        n += self._service_timers(now)
                n += len(slot)
                self._queued -= len(slot)
                slot.clear()
                if checks and n >> 10 != before >> 10:
                    if until is not None and until():
                        self.end = now
                        return n
                    if report is not None and n >> 14 != before >> 14:
                        report(now)
            now += 1
            if self._queued < _SPARSE and not wheel[now & _MASK]:
                # a sparse wheel (a quiet run) and nothing due next ms: on to what comes next, its
                # next item found in C rather than ms by ms
                nxt = self._far_enters
                if self._service_wake < nxt:
                    nxt = self._service_wake
                if self._queued:
                    ahead = _next_slot(wheel, now & _MASK)
                    if now + ahead < nxt:
                        nxt = now + ahead
                if nxt > now:
                    now = end + 1 if nxt > end else nxt
            self._cursor = now
        return n

    def _pace(self, t: int, wall0: float) -> None:
        """Real-time mode: wait until wall time catches up with t; note how far behind we run."""
        ahead = t / 1000 - (time.perf_counter() - wall0)
        if ahead > 0:
            time.sleep(ahead)
        else:
            self.max_lag_ms = max(self.max_lag_ms, int(-ahead * 1000))

    def summary(self, events: list[dict] | int, groups: dict | None = None) -> dict:
        """The run's summary, of its events (or of how many they are and their summary, ``groups``:
        see simulate_to)."""
        if groups is None:
            groups = summarize(events)
        checks = {}
        for gid in self.scenario.group_ids():
            if self.only is not None and gid not in self.only:
                continue
            g = find_group(self.service, gid)
            live = [c.handle for c in self.by_group.get(gid, []) if c.handle is not None and not c.handle.dead]
            entry = groups.setdefault(gid, {})
            entry["final"] = {"state": g.state if g is not None else None,
                              "generation": g.generation_id if g is not None else -1,
                              "members": len(g.members) if g is not None else 0,
                              "running_clients": len(live)}
            checks[gid] = ownership_check(self.service, g, [r.member for r in live])
            entry["final"]["check"] = checks[gid]
            if self.scenario.spec_of(gid).share:
                entry["share_partitions"] = share_counts(self.service, gid)
        groups = dict(sorted(groups.items()))       # (a group without events among the others)
        return {"scenario": self.scenario.name, "seed": self.seed, "mode": self.mode,
                "virtual_s": self.end / 1000, "wall_s": round(self.wall_s, 3),
                "virtual_s_per_wall_s": round(self.end / 1000 / self.wall_s, 1) if self.wall_s else None,
                "events": events if isinstance(events, int) else len(events), "clients": len(self.clients),
                "stats": dict(self.stats),
                "notes": list(self.notes), "groups": groups}


def share_counts(service: Service, group_id: str) -> dict:
    """A share group's record counts at its leaders (their share-partitions' counters, summed): what
    the log's analysis must agree with."""
    total: dict = {}
    for (g, _, _), sp in sorted(service.share_partitions.share_partitions().items(), key=lambda kv: str(kv[0])):
        if g == group_id:
            for k, v in vars(sp.counters).items():
                total[k] = total.get(k, 0) + v
    return dict(sorted(total.items()))


def find_group(service: Service, group_id: str):
    """The group of that id, of any type, or None."""
    return service.group_coordinator.get(group_id)


def ownership_check(service: Service, group, members: list[Member]) -> str:
    """"ok" when the group is Stable with every running member stable in its generation, owning
    disjoint partitions that cover the subscribed topics; "unsettled..." when the group is not
    (yet) stable or partitions are still unowned; "violated: ..." when a partition is owned twice.
    A share group's members share partitions: "ok" when it is Stable with every running member
    stable and every subscribed partition assigned to one of them at least."""
    if group is None or group.state != "Stable" or len(group.members) != len(members):
        return "unsettled"
    if any(isinstance(m, ShareMember) for m in members):
        if not all(m.stable for m in members):
            return "unsettled"
        topics = {t for m in members for t in m.subscription}
        expected = {(t, p) for t in topics for p in range(service.partition_count(t) or 0)}
        assigned = {tuple(tp) for m in members for tp in m.assignment}
        return "ok" if assigned == expected else f"unsettled: {len(expected - assigned)} partitions unassigned"
    seen: set = set()
    topics: set = set()
    for m in members:
        if not m.stable or m.generation_id != group.generation_id:
            return "unsettled"
        if seen & m.assignment:
            return f"violated: {sorted(seen & m.assignment)[:3]} owned twice"
        seen |= m.assignment
        topics |= m.subscription
    expected = {(t, p) for t in topics for p in range(service.partition_count(t) or 0)}
    if seen - expected:
        return f"violated: {sorted(seen - expected)[:3]} owned but not subscribed"
    if seen != expected:
        # e.g. partitions added since the leader's last metadata refresh (metadata.max.age.ms)
        return f"unsettled: {len(expected - seen)} partitions unowned"
    return "ok"


@contextlib.contextmanager
def progress_bar(name: str, end: int):
    """A progress bar of a run of ``end`` virtual ms on the terminal: a function that moves it to
    a virtual ms."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[vt]}"),
                   TimeElapsedColumn(), transient=False)
    task = bar.add_task(f"simulate {name}", total=end, vt="")

    def update(now: int) -> None:
        bar.update(task, completed=now, vt=f"{now / 1000:.0f}/{end / 1000:.0f} virtual s")
    bar.start()
    try:
        yield update
    finally:
        bar.stop()


def _call(fn) -> None:
    fn()


def _next_slot(wheel: list[list], i: int) -> int:
    """How many slots after slot i (0: i itself) the first non-empty one of the wheel comes,
    around its end (the wheel holds at least one item). Looked for in C: first in the next 256
    slots (where a sparse run's next item usually is), then in the rest; each slice copies
    only what it looks at."""
    compress = itertools.compress
    j = i + 256
    if j < _WHEEL:
        hit = next(compress(range(i, j), wheel[i:j]), None)
        if hit is not None:
            return hit - i
    else:
        j = i
    hit = next(compress(range(j, _WHEEL), wheel[j:]), None)
    if hit is None:
        hit = next(compress(range(i), wheel[:i]), 0) + _WHEEL     # (0: none, a whole turn)
    return hit - i


@contextlib.contextmanager
def _no_cyclic_gc():
    """Python's cyclic garbage collector off for a while (as it was before, after). What was made
    meanwhile goes to the oldest generation before the collector is on again (gc.freeze and
    unfreeze move it there without a walk): the young generations' next collections would walk
    the millions of objects a run keeps (0.3 s each after 10 virtual minutes of hour-1000). A full
    collection still looks at them, and frees a finished run's cycles (the simulator's bound
    methods refer to it)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def _log_key(group_ids: list[str]) -> Callable[[dict], int]:
    """(ts_ms, rank of the group, -1 for none) as one int: ints compare faster than tuples."""
    rank = {g: i + 1 for i, g in enumerate(group_ids)}
    n = len(group_ids) + 1
    return lambda e: e["ts_ms"] * n + rank.get(e.get("group"), 0)


def canonical_order(events: list[dict], group_ids: list[str]) -> list[dict]:
    """The log's order: by ts_ms, then by group (in the scenario's order), then by occurrence.
    Within one group that is the order things happened; between groups at one ms it is fixed,
    so a run split into shards (simulate(workers=)) merges into the same log byte for byte."""
    return sorted(events, key=_log_key(group_ids))


def shards(sc: Scenario, workers: int) -> list[list[str]]:
    """The groups split into at most ``workers`` shards of about equal members (largest first)."""
    sizes = sorted(((spec.members, gid) for spec in sc.groups for gid in spec.group_ids()),
                   key=lambda x: -x[0])
    bins: list[tuple[int, int, list[str]]] = [(0, i, []) for i in range(max(1, min(workers, len(sizes))))]
    for n, gid in sizes:
        load, i, groups = min(bins)
        groups.append(gid)
        bins[i] = (load + max(n, 1), i, groups)
    return [b[2] for b in sorted(bins, key=lambda b: b[1]) if b[2]]


#: A shard's groups run in batches of at most this many members (a larger group alone), one batch
#: after another, each a simulation of its own: a request costs more the more members a simulation
#: holds, as their state no longer fits the processor's caches (bench/README.md: 10 us a request
#: with 200 members, 24 us with 5,000; same instructions)
_BATCH_MEMBERS = 128
#: batches a shard has at most (larger ones beyond about _BATCH_MEMBERS * this many / 2 members): the
#: merge of a JSON-lines log opens a file a batch at once
_MAX_BATCHES = 256


def batches(sc: Scenario, groups: list[str] | None) -> list[list[str] | None]:
    """A shard's groups (None: all the scenario's) in the batches it runs one after another:
    consecutive groups of at most _BATCH_MEMBERS members in all (more when a shard would have more
    than _MAX_BATCHES batches), a larger group alone; ``[groups]``
    when one batch holds them all, and when the scenario has producers (each batch would produce
    their records again: 0.5 ms a produce request of ten records). Each batch is a shard of its own
    to the simulation (its groups share nothing with the others' but the cluster-wide timeline,
    which each replays)."""
    if sc.produce:
        return [groups]
    members = _group_members(sc)
    ids = list(members) if groups is None else groups
    # (consecutive batches hold more than ``most`` together: at most 2 * members / most + 1 of them)
    most = max(_BATCH_MEMBERS, -(-2 * sum(members[gid] for gid in ids) // (_MAX_BATCHES - 1)))
    out: list[list[str]] = []
    n = 0
    for gid in ids:
        m = members[gid]
        if not out or n + m > most:
            out.append([])
            n = 0
        out[-1].append(gid)
        n += m
    return [groups] if len(out) <= 1 else out


def _group_members(sc: Scenario) -> dict[str, int]:
    """Each group's members at the start (at least 1), by group id, in the scenario's order."""
    return {gid: max(spec.members, 1) for spec in sc.groups for gid in spec.group_ids()}


def _batch_progress(progress, i: int, n: int, end: int):
    """A batch's progress report (batch i of n) to a shard's: how far the shard has come, in virtual ms."""
    if progress is None:
        return None
    return lambda now: progress((i * end + now) // n)


@contextlib.contextmanager
def _shard_progress(sc: Scenario, progress, n: int):
    """A shard's progress report for its n batches: progress as it is but for True (a bar of the
    shard's own, which the batches' reports move on, when there are several)."""
    if progress is True and n > 1:
        with progress_bar(sc.name, sc.duration_ms) as bar:
            yield bar
    else:
        yield progress or None


def _batch_runs(sc: Scenario, parts: list, progress, run: Callable) -> tuple[list, float]:
    """``run(i, batch, its progress report)`` of each of a shard's batches, one after another, the
    shard's progress moved on by them: their results, and the wall time they took."""
    wall0 = time.perf_counter()
    results = []
    with _shard_progress(sc, progress, len(parts)) as report:
        for i, batch in enumerate(parts):
            results.append(run(i, batch, _batch_progress(report, i, len(parts), sc.duration_ms)))
    return results, time.perf_counter() - wall0


def _run_shard(args) -> tuple[list[dict], dict]:
    """A shard's run, its batches one after another: its events (each batch's in the log's order,
    one batch after another) and its summary."""
    sc, seed, groups, progress = args
    parts = batches(sc, groups)
    if len(parts) == 1:
        sim = Simulator(sc, seed, groups=groups, progress=progress)
        events = sim.run()
        return events, sim.summary(events)

    def one(i: int, batch: list[str], report) -> tuple[list[dict], dict]:
        sim = Simulator(sc, seed, groups=batch, progress=report)
        events = sim.run()
        return events, sim.summary(events)
    results, wall = _batch_runs(sc, parts, progress, one)
    events = list(itertools.chain.from_iterable(events for events, _ in results))
    return events, _merged_summary(sc, [summary for _, summary in results], wall)


def _run_shard_elsewhere(args) -> tuple[bytes | list[dict] | None, dict]:
    """_run_shard in a worker process. The log goes back marshalled when it can be (plain data, as
    the JSON log is: it loads in about two thirds of pickle's time), written to the file at
    ``path`` (the caller made it and removes it; 80 MB of an hour-1000 shard come through a file
    in 0.1 to 0.35 s, through its pipe in 0.45 s): then None comes back for the log. When
    the file cannot be written (no space left), the log comes through the pipe."""
    sc, seed, groups, path, index = args
    events, summary = _run_shard((sc, seed, groups, _clock_of(index)))
    try:
        data = marshal.dumps(events)
    except ValueError:
        return events, summary
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError:
        return data, summary
    return None, summary


def _shard_log(log: bytes | list[dict] | None, path: str) -> list[dict]:
    if log is None:
        with open(path, "rb") as f:
            log = f.read()
    return marshal.loads(log) if isinstance(log, bytes) else log


def simulate(sc: Scenario, seed: int | None = None, *, workers: int = 1,
             progress: bool = False) -> tuple[list[dict], dict, dict]:
    """Run a scenario in virtual time: (events, summary, resolved scenario).

    ``workers`` > 1 runs shards of the groups in that many processes, and each shard (the only
    one, with one worker) runs its groups in batches of a few members, one after another (see
    batches). Groups share nothing but the cluster-wide timeline (node failures, coordinator moves,
    new partitions), which every shard and batch replays, and every random stream is a client's, a
    group's or a topic's own, so the merged log is the one a single simulation of every group writes
    (the summary's run statistics aside)."""
    seed = sc.seed if seed is None else seed
    parts = shards(sc, workers) if workers > 1 else []
    if len(parts) < 2:
        if len(batches(sc, None)) == 1:
            sim = Simulator(sc, seed, progress=progress)
            events = sim.run()
            return events, sim.summary(events), sim.resolved()
        with _no_cyclic_gc():
            events, summary = _run_shard((sc, seed, None, progress))
            events.sort(key=_log_key(sc.group_ids()))      # (the batches' logs merged: see below)
        return events, summary, _resolved(sc, seed)
    wall0 = time.perf_counter()
    with _no_cyclic_gc():       # the shards' logs arrive as millions of new objects
        # this process runs the first shard itself: one process fewer to start, one log fewer
        # to carry over
        paths = []
        try:
            for _ in parts[1:]:
                fd, path = tempfile.mkstemp(prefix="groupcoord-shard-", suffix=".marshal")
                os.close(fd)
                paths.append(path)
            jobs = [(sc, seed, groups, path, i) for i, (groups, path) in enumerate(zip(parts[1:], paths), 1)]
            # (the workers fork before the bar starts)
            with _shard_processes(_run_shard_elsewhere, jobs, len(parts) if progress else 0) as (running, clock):
                with progress_bar(sc.name, sc.duration_ms) if progress else contextlib.nullcontext() as bar:
                    mine, tick = bar, None
                    if clock is not None:       # the bar shows how far the slowest shard has come
                        def tick() -> None:
                            bar(min(clock))

                        def mine(now: int) -> None:
                            clock[0] = now
                            tick()
                    results = [_run_shard((sc, seed, parts[0], mine))]      # (a worker's death is seen after it)
                    results += [(_shard_log(log, path), part)
                                for (log, part), path in zip(running.results(tick), paths)]
                    if bar is not None:
                        bar(sc.duration_ms)
        finally:
            # (after the workers' end: none writes any more) no shard's file left behind
            for path in paths:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        # each shard's log is in the log's order, and a group's events are all in one shard: a
        # stable sort of the shards one after the other merges them (in about two thirds of
        # heapq.merge's time: Timsort finds the runs)
        events = results[0][0]
        for r in results[1:]:
            events += r[0]
        events.sort(key=_log_key(sc.group_ids()))
    wall = time.perf_counter() - wall0
    summary = _merged_summary(sc, [part for _, part in results], wall, len(results))
    return events, summary, _resolved(sc, seed)


def _resolved(sc: Scenario, seed: int) -> dict:
    """The scenario as a run resolved it (Simulator.resolved), without running it."""
    resolved = Driver(sc, seed).resolved()
    resolved["mode"] = Simulator.mode
    return resolved


class WorkerDied(RuntimeError):
    """A process running a shard of the simulation ended without its result (killed: the
    out-of-memory killer, a signal; or its result could not be read back): the run is lost."""


#: in a worker process: the virtual ms of the shards (simulate) or of the batches (simulate_to), an
#: array shared with the process that shows their progress (None: none shows it; see _shard_processes)
_shard_clocks = None
#: in a worker of a run whose workers take its batches as they come (_shard_processes' ``queue``):
#: how many batches the workers have taken, a counter they share (else None)
_batches_taken = None


def _clock_of(index: int) -> Callable[[int], None] | None:
    """In a worker process: the progress report of the shard or batch at ``index``, into its place of
    _shard_clocks (None: none)."""
    return None if _shard_clocks is None else partial(_shard_clocks.__setitem__, index)


class _RemoteTraceback(Exception):
    """The traceback of an error raised in a shard's process (the error's __cause__)."""

    def __str__(self) -> str:
        return f'\n"""\n{self.args[0]}"""'


def _next_batch(count: int) -> int | None:
    """In a worker taking a run's ``count`` batches as they come: the index of the next batch no
    worker has taken, now this one's (None: every batch is taken)."""
    with _batches_taken.get_lock():
        k = _batches_taken.value
        if k >= count:
            return None
        _batches_taken.value = k + 1
    return k


def _shard_worker(fn, job, conn, clocks, taken) -> None:
    """A worker's process: fn(job), its result or its error sent back on conn. Ctrl-C, which a
    terminal sends to every process of the group, is the parent's to act on (it ends the workers)."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):     # (blocked by the parent while it forked: see _Shards)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    global _shard_clocks, _batches_taken
    _shard_clocks, _batches_taken = clocks, taken
    try:
        answer = ("result", fn(job))
    except BaseException as e:
        import traceback
        text = "".join(traceback.format_exception(e))
        try:        # (pickled here: an error that will not pickle still sends its traceback)
            answer = ("error", (text, pickle.dumps(e)))
        except Exception:
            answer = ("error", (text, None))
    try:
        conn.send(answer)
    except Exception as e:          # the result would not pickle
        conn.send(("unsendable", repr(e)))
    conn.close()


class _Shards:
    """One process a job, each running fn(job) (see _shard_processes)."""

    def __init__(self, ctx, fn, jobs, clocks, taken) -> None:
        # (held here: a process started lets go of its arguments, and a spawned one opens the
        # counter's semaphore after the start, by its name, which its last reference unlinks)
        self.taken = taken
        self.conns: list = []
        self.processes: list = []
        try:
            for job in jobs:
                # each pipe made just before its process forks, and the writing end closed here at
                # once: no other process holds it, so a worker's death is an end of file
                reader, writer = ctx.Pipe(duplex=False)
                self.conns.append(reader)
                try:
                    p = ctx.Process(target=_shard_worker, args=(fn, job, writer, clocks, taken), daemon=True)
                    # Ctrl-C held back while the process forks: a child it reached before
                    # _shard_worker ignores it would print a KeyboardInterrupt's traceback from
                    # its start-up (the child starts with it blocked and ignores it; here it
                    # comes once unblocked)
                    with _sigint_blocked():
                        p.start()
                    self.processes.append(p)
                finally:
                    writer.close()
        except BaseException:           # (a fork refused, an interrupt): the others started end
            self.end(at_once=True)
            raise

    def results(self, tick: Callable[[], None] | None = None, idle: Callable[[], None] | None = None):
        """The jobs' results in order (WorkerDied: see _died; an error raised by fn: raised
        here, the worker's traceback its __cause__). With ``tick``, tick() is called every
        0.25 s while they are waited for (a progress bar's redraw); ``idle()`` is called once,
        when a result has come and another is still waited for (a processor is free then)."""
        from multiprocessing.connection import wait
        got: dict[int, object] = {}
        pending = dict(enumerate(self.conns))
        while pending:
            ready = wait(list(pending.values()), 0.25 if tick is not None else None)
            for i, conn in list(pending.items()):
                if conn in ready:
                    got[i] = self._answer(conn)
                    del pending[i]
            if idle is not None and got and pending:
                idle()
                idle = None
            if tick is not None:
                tick()
        return [got[i] for i in range(len(self.conns))]

    @staticmethod
    def _answer(conn):
        try:
            kind, value = conn.recv()
        except (EOFError, OSError) as e:
            raise _died(None) from e
        except Exception as e:      # a result that would not unpickle here
            raise _died(repr(e)) from e
        if kind == "error":
            text, pickled = value
            try:
                error = pickle.loads(pickled) if pickled is not None else None
            except Exception as e:
                error = _died(repr(e))
            raise (error or _died("an error that would not pickle")) from _RemoteTraceback(text)
        if kind == "unsendable":
            raise _died(value)
        return value

    def end(self, at_once: bool) -> None:
        """Every worker ended and waited for (at_once: ended by a signal first; else given 10 s
        to exit once its result is sent)."""
        for p in self.processes:
            if at_once and p.is_alive():
                p.terminate()
        for p in self.processes:
            p.join(None if at_once else 10)
            if p.is_alive():
                p.terminate()
                p.join()
            p.close()
        for conn in self.conns:
            conn.close()


@contextlib.contextmanager
def _sigint_blocked():
    import signal
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextlib.contextmanager
def _shard_processes(fn, jobs: list, clocks: int = 0, queue: bool = False):
    """(shards, clock): a process for each job running fn(job), forked where the platform can;
    ``shards.results(tick)`` waits for their results. With ``clocks``, ``clock`` is an array of
    that many virtual ms shared with the workers, a shard's or a batch's place in it kept up to
    date by its simulation (see _clock_of); else None. With ``queue``, the workers share a counter
    of the batches taken (see _next_batch). Leaving on an exception (the caller's own shard failed,
    an interrupt) ends the other shards at once rather than waiting for them. (No thread is left
    running here: a process forked later, by this run or another, inherits no lock a thread held;
    concurrent.futures' pool leaves its manager thread behind, and a worker forked beside it once
    hung on its lock.)"""
    import multiprocessing
    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    clock = ctx.Array("q", clocks, lock=False) if clocks else None
    shards = _Shards(ctx, fn, jobs, clock, ctx.Value("q", 0) if queue else None)
    try:
        yield shards, clock
    except BaseException:
        shards.end(at_once=True)
        raise
    else:
        shards.end(at_once=False)


def _died(detail: str | None) -> WorkerDied:
    if detail is not None:          # a result or an error that could not be read back
        return WorkerDied(f"a shard of the simulation ended with what this process could not read back: {detail}")
    return WorkerDied("a process running a shard of the simulation died before its end (killed: out of "
                      "memory? try fewer --workers); nothing was written")


#: events a simulation holds at most (about: a chunk ends at the end of a ms) when it hands them on
_SPILL = 1 << 14


_FRAME = struct.Struct(">Q")


#: events of a frame of a spilled file at most: what its reader holds (a merge reads every batch's
#: file at once)
_FRAME_EVENTS = 1 << 10


def _spill_into(f) -> Callable[[list[dict]], None]:
    """Chunks of events written one after another to the file f, in frames of at most
    _FRAME_EVENTS events, each its size then its marshal (plain data, as the log is; pickled when a
    value is not). (marshal.load from the file itself reads it in pieces: 6 times slower than
    marshal.loads of a frame's bytes.)"""
    def spill(chunk: list[dict]) -> None:
        for i in range(0, len(chunk), _FRAME_EVENTS):
            frame = chunk[i:i + _FRAME_EVENTS]
            try:
                data = marshal.dumps(frame)
            except ValueError:
                data = marshal.dumps(pickle.dumps(frame))
            f.write(_FRAME.pack(len(data)))
            f.write(data)
    return spill


def _spilled(path: str):
    """The events of a file written by _spill_into, in order."""
    with open(path, "rb") as f:
        while head := f.read(_FRAME.size):
            chunk = marshal.loads(f.read(_FRAME.unpack(head)[0]))
            yield from (pickle.loads(chunk) if isinstance(chunk, bytes) else chunk)


def _run_shard_to(args) -> dict:
    """A shard run, its batches (see batches) one after another, each batch's events into its file
    of ``paths`` (None: none), summarized as they come: its summary (progress: Simulator's)."""
    sc, seed, parts, paths, columns, progress = args
    if len(parts) == 1:
        return _run_batch_to(sc, seed, parts[0], paths[0], columns, progress)

    def one(i: int, batch: list[str], report) -> dict:
        summary = _run_batch_to(sc, seed, batch, paths[i], columns, report)
        gc.collect()            # the batch's simulation (cycles: its bound methods refer to it)
        return summary
    summaries, wall = _batch_runs(sc, parts, progress, one)
    return _merged_summary(sc, summaries, wall)


def _run_batch_to(sc: Scenario, seed: int, groups: list[str] | None, path: str | None, columns: bool,
                  progress) -> dict:
    """A batch's run (a shard's, see batches), its events into the file at path (None: none),
    summarized as they come: its summary. With ``columns``, the file holds the events' columns
    instead (an EventWriter's part, and the events' log keys: see write_parts), made here."""
    sim = Simulator(sc, seed, groups=groups, progress=progress)
    summary = summaries()
    next(summary)
    count = 0
    with open(path, "wb") if path is not None else contextlib.nullcontext() as f:
        if f is None:
            write = None
        elif columns:
            # the shards turn their events into columns (the parent then merges columns, in C)
            writer, keys, key = EventWriter(os.path.dirname(path)), array.array("q"), _log_key(sc.group_ids())
            add = writer.add

            def write(chunk: list[dict]) -> None:
                for e in chunk:
                    add(e)
                keys.extend(map(key, chunk))
        else:
            write = _spill_into(f)

        def spill(chunk: list[dict]) -> None:
            nonlocal count
            count += len(chunk)
            summary.send(chunk)
            if write is not None:
                write(chunk)
        sim.run(spill=spill)
        if f is not None and columns:
            pickle.dump((writer.part(), keys), f, protocol=pickle.HIGHEST_PROTOCOL)
    return sim.summary(count, summary.send(None))


def _run_batches_to_elsewhere(args) -> list[tuple[int, dict]]:
    """A worker of a sharded run (simulate_to): of the run's batches ``jobs`` ((groups, path) each),
    the next one no other worker has taken, run as _run_batch_to runs it, until none is left (a
    worker done early takes on what another would have run: no core idles while batches wait):
    (index, summary) of each batch it ran. Its progress goes to the batch's place (see _clock_of)."""
    sc, seed, jobs, columns = args
    done = []
    while (k := _next_batch(len(jobs))) is not None:
        groups, path = jobs[k]
        done.append((k, _run_batch_to(sc, seed, groups, path, columns, _clock_of(k))))
        gc.collect()            # the batch's simulation (cycles: its bound methods refer to it)
    return done


def _merge_ready() -> None:
    """What the writing of a Parquet log (merged, or of ``both``) imports, imported when a worker is
    done before the others (its processor free): pyarrow, and pandas, which pyarrow's first
    array() imports when it is installed (0.3 s in all, else at the merge's start, once every
    worker is done)."""
    import pyarrow as pa
    import pyarrow.parquet  # noqa: F401
    pa.array([0], pa.int64())


def simulate_to(sc: Scenario, seed: int | None = None, out_dir=None, *, workers: int = 1,
                event_format: str = "jsonl", progress: bool = False) -> tuple[dict, dict]:
    """:func:`simulate`, the events written to out_dir's files (as ``write_outputs`` writes them, when
    out_dir is given) and summarized as they come, never all held: with ``workers`` > 1 the
    workers take the shards' batches as they come (see _run_batches_to_elsewhere). For the Parquet
    log alone each batch turns its events into columns as it goes (kept compressed) and the parent
    merges the batches' columns (eventfile.write_parts); for JSON lines (``jsonl``, ``both``) each
    batch hands its events on to a file as it goes, and these files are merged into the log's
    order. Memory: the simulation's state and, for Parquet, the log's columns. Returns (summary,
    resolved scenario)."""
    from .model import RunOutput
    seed = sc.seed if seed is None else seed
    parts = shards(sc, workers) if workers > 1 else []
    parts = parts if len(parts) > 1 else [None]
    runs = [batches(sc, part) for part in parts]       # each shard's batches
    columns = event_format == "parquet"           # (the JSON lines are merged as events)
    wall0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="groupcoord-run-") as tmp:
        # a file a batch
        paths = [[os.path.join(tmp, f"shard-{i}-{j}") if out_dir is not None else None for j in range(len(run))]
                 for i, run in enumerate(runs)]
        if len(parts) == 1:
            results = [_run_shard_to((sc, seed, runs[0], paths[0], columns, progress))]
        else:
            # every shard's batches, the largest first, taken by the workers as each is free (with
            # a shard's batches a worker's own, the worker done first idled while the other ran
            # on: 3.9 s of the 10,000-member hour in one run); the workers in a process each,
            # whose memory is given back when it ends, before the merge (Python keeps what a
            # process freed)
            size = _group_members(sc)
            order = sorted(((i, j) for i, run in enumerate(runs) for j in range(len(run))),
                           key=lambda ij: -sum(size[gid] for gid in runs[ij[0]][ij[1]]))
            jobs = [(runs[i][j], paths[i][j]) for i, j in order]
            # (the workers fork before the bar starts)
            with _shard_processes(_run_batches_to_elsewhere, [(sc, seed, jobs, columns)] * len(parts),
                                  len(jobs) if progress else 0, queue=True) as (running, clock):
                with progress_bar(sc.name, sc.duration_ms) if progress else contextlib.nullcontext() as bar:
                    # the bar shows how far the batches have come, on average
                    done = running.results((lambda: bar(sum(clock) // len(clock))) if progress else None,
                                           _merge_ready if event_format != "jsonl" and out_dir is not None else None)
                    if bar is not None:
                        bar(sc.duration_ms)
            # each shard's summary as its batches' (run one after another) made it
            ran = dict(itertools.chain.from_iterable(done))
            at = {ij: k for k, ij in enumerate(order)}
            results = []
            for i, run in enumerate(runs):
                mine = [ran[at[i, j]] for j in range(len(run))]
                results.append(mine[0] if len(mine) == 1 else _merged_summary(sc, mine, 0.0))
        wall = time.perf_counter() - wall0
        resolved = _resolved(sc, seed)
        output = RunOutput(out_dir, event_format) if out_dir is not None else None
        if output is not None and columns:
            held = []
            for path in itertools.chain.from_iterable(paths):
                with open(path, "rb") as f:
                    held.append(pickle.load(f))
            output.add_parts([part for part, _ in held], [keys for _, keys in held])
            del held
        elif output is not None:
            add = output.add
            merged = heapq.merge(*map(_spilled, itertools.chain.from_iterable(paths)), key=_log_key(sc.group_ids()))
            try:
                with _no_cyclic_gc():
                    for e in merged:
                        add(e)
            except BaseException:
                output.abort()
                raise
            finally:
                merged.close()          # (its files closed before their directory goes)
    summary = results[0] if len(results) == 1 else _merged_summary(sc, results, wall, len(results))
    if output is not None:
        output.close(resolved, summary)
    return summary, resolved


def _merged_summary(sc: Scenario, results: list[dict], wall: float, workers: int | None = None) -> dict:
    """One summary of the shards' summaries (of a shard's batches: ``workers`` None, none said)."""
    summary = dict(results[0])
    groups: dict = {}
    for gid in sorted(sc.group_ids()):        # (by name, as Simulator.summary's)
        for part in results:
            if gid in part["groups"]:
                groups[gid] = part["groups"][gid]
    notes: list[str] = []
    for part in results:
        notes += [n for n in part["notes"] if n not in notes]
    stats: dict = {}
    for part in results:
        for k, v in part["stats"].items():
            stats[k] = stats.get(k, 0) + v
    summary.update(groups=groups, notes=notes, stats=stats, events=sum(part["events"] for part in results),
                   clients=sum(part["clients"] for part in results), wall_s=round(wall, 3),
                   virtual_s_per_wall_s=round(sc.duration_s / wall, 1) if wall else None)
    if workers is not None:
        summary["workers"] = workers
    return summary


def run(sc: Scenario, seed: int | None = None, out_dir=None, *, progress: bool = False,
        workers: int = 1) -> list[dict]:
    """Run a scenario in virtual time; returns the events (coordinator's and members', in the
    log's order), also written with scenario.json and summary.json to out_dir when given."""
    events, summary, resolved = simulate(sc, seed, workers=workers, progress=progress)
    if out_dir is not None:
        write_outputs(out_dir, events, resolved, summary)
    return events
