"""Virtual-time harness: our sans-I/O Member against our coordinator's sans-I/O Service.

No sockets and no asyncio: a :class:`Sim` owns one integer clock that drives both sides. A
member's actions are executed by an in-memory transport that does what a Kafka connection
does: every request is encoded with ``frames.encode_request`` at the version the member chose,
decoded by ``frames.decode_request`` and handed to ``Service.handle``; the response goes back
through ``encode_response``/``decode_response``. Per connection, requests are handled one at
a time and answered in order, as the broker does (it mutes a channel while a request is
parked), and each response arrives ``latency`` ms after it was produced.

Faults: ``sim.fail_next(api_key, error)`` answers the next matching request with an error
instead of handing it to the service; ``sim.partition(name)`` cuts a member off (its requests
go unanswered and new connections fail) until ``sim.heal(name)``; ``sim.freeze(name)`` stops a
member's application polls (to exceed max.poll.interval.ms).

The other test modules import :class:`Sim` from here; the tests at the bottom check the
harness itself.
"""
from __future__ import annotations

import heapq
import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from groupcoord.client.assignors.base import (
    Assignment, ClusterMetadata, ConsumerPartitionAssignor, GroupAssignment, GroupSubscription, RebalanceProtocol,
    TopicPartition,
)
from groupcoord.client.member import (
    Closed, CommitCompleted, Connect, Disconnect, ErrorRaised, Member, OffsetsFetched, RebalanceCallback,
    SendRequest,
)
from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.service import Service
from groupcoord.protocol import frames
from groupcoord.protocol.errors import ErrorCode

TP = TopicPartition
GROUP = "g"


# ================================================================================ test assignors
class SimpleRange(ConsumerPartitionAssignor):
    """Eager: each topic's partitions split in ranges over the members (sorted by id)."""

    name = "simple-range"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(self, cluster: ClusterMetadata, group_subscription: GroupSubscription) -> GroupAssignment:
        subs = group_subscription.subscriptions
        out = {m: [] for m in subs}
        for topic in sorted({t for s in subs.values() for t in s.topics}):
            n = cluster.partition_count(topic)
            if not n:
                continue
            members = sorted(m for m, s in subs.items() if topic in s.topics)
            per, extra = divmod(n, len(members))
            p = 0
            for i, m in enumerate(members):
                k = per + (1 if i < extra else 0)
                out[m] += [TP(topic, q) for q in range(p, p + k)]
                p += k
        return GroupAssignment({m: Assignment(sorted(tps)) for m, tps in out.items()})


class SimpleCooperative(ConsumerPartitionAssignor):
    """Cooperative: balanced and sticky; a partition still owned by another member is
    withheld for one round (what KIP-429 asks of a cooperative assignor)."""

    name = "simple-coop"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def assign(self, cluster: ClusterMetadata, group_subscription: GroupSubscription) -> GroupAssignment:
        subs = group_subscription.subscriptions
        members = sorted(subs)
        all_tps = sorted(TP(t, p) for t in {t for s in subs.values() for t in s.topics}
                         for p in range(cluster.partition_count(t) or 0))
        quota = {m: len(all_tps) // len(members) + (1 if i < len(all_tps) % len(members) else 0)
                 for i, m in enumerate(members)}
        owner = {}
        for m in members:
            for tp in subs[m].owned_partitions:
                if tp in all_tps and tp not in owner and tp.topic in subs[m].topics:
                    owner[tp] = m
        target = {m: [] for m in members}
        free = []
        for tp in all_tps:
            m = owner.get(tp)
            if m is not None and len(target[m]) < quota[m]:
                target[m].append(tp)
            else:
                free.append(tp)
        for tp in free:
            m = min((m for m in members if len(target[m]) < quota[m]), key=lambda m: (len(target[m]), m))
            target[m].append(tp)
        # withhold partitions moving away from a current owner until it has revoked them
        final = {m: [tp for tp in tps if owner.get(tp, m) == m] for m, tps in target.items()}
        return GroupAssignment({m: Assignment(sorted(tps)) for m, tps in final.items()})


# ================================================================================ the simulation
@dataclass
class SimMember:
    name: str
    member: Member
    events: list = field(default_factory=list)          # (now, kind, sorted partitions)
    commits: list = field(default_factory=list)         # CommitCompleted
    fetched: list = field(default_factory=list)         # OffsetsFetched
    errors: list = field(default_factory=list)          # ErrorRaised
    closed: bool = False
    listener: Callable | None = None                    # listener(sim_member, action) before the ack
    ack_delay: int = 0                                  # ms between a callback and its ack
    frozen: bool = False                                # no application polls
    partitioned: bool = False
    conns: dict = field(default_factory=dict)           # conn id -> _SimConn

    @property
    def assignment(self) -> set:
        return set(self.member.assignment)

    def kinds(self) -> list[str]:
        return [k for _, k, _ in self.events]

    def callbacks(self, kind: str) -> list[list]:
        return [p for _, k, p in self.events if k == kind]


@dataclass
class _SimConn:
    conn_id: int
    node_id: int
    ready: bool = False
    queue: deque = field(default_factory=deque)          # requests waiting to be handled
    busy: bool = False
    alive: bool = True


class Sim:
    def __init__(self, topics: dict[str, int] | None = None, *, nodes: int = 1, latency: int = 1,
                 broker: dict | None = None):
        self.now = 0
        self.latency = latency
        self.group_events: list[dict] = []
        seq = itertools.count(1)
        values = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 100}
        values.update(broker or {})
        self.service = Service(BrokerConfig(values, environ={}), nodes=nodes, clock=lambda: self.now,
                               emit=self.group_events.append,
                               member_id_factory=lambda prefix: f"{prefix}-{next(seq)}")
        for i, node in enumerate(self.service.cluster.nodes.values()):
            node.port = 9092 + i
        for name, n in (topics or {"t": 6}).items():
            self.service.create_topic(name, n)
        self.members: dict[str, SimMember] = {}
        self._heap: list = []
        self._seq = itertools.count()
        self._corr = itertools.count(1)
        self._faults: list[list] = []                  # [api_key, error, member name or None, count]
        self.requests: list[tuple[int, str, int, int]] = []   # (now, member, api key, version)

    # ---- members ----------------------------------------------------------------------
    def add(self, name: str, topics=("t",), *, assignors=None, config: dict | None = None, fetch: bool = False,
            listener: Callable | None = None) -> SimMember:
        cfg = {"group.id": GROUP, "client.id": name, "session.timeout.ms": 10000,
               "heartbeat.interval.ms": 1000, "max.poll.interval.ms": 60000, "enable.auto.commit": False,
               "auto.offset.reset": "earliest"}
        cfg.update(config or {})
        member = Member(cfg, assignors if assignors is not None else [SimpleRange()], topics=topics,
                        now=self.now, fetch=fetch)
        sm = SimMember(name, member, listener=listener)
        self.members[name] = sm
        return sm

    def __getitem__(self, name: str) -> SimMember:
        return self.members[name]

    def freeze(self, name: str) -> None:
        self.members[name].frozen = True

    def thaw(self, name: str) -> None:
        self.members[name].frozen = False

    def partition(self, name: str) -> None:
        """Cut the member off: in-flight requests are lost, connections fail."""
        sm = self.members[name]
        sm.partitioned = True
        for conn in list(sm.conns.values()):
            conn.alive = False
        sm.conns.clear()

    def disconnect(self, name: str) -> None:
        """Every connection of the member breaks, and the member is told so."""
        sm = self.members[name]
        for conn in list(sm.conns.values()):
            conn.alive = False
            sm.member.on_connection_lost(conn.conn_id, self.now)
        sm.conns.clear()

    def heal(self, name: str) -> None:
        self.members[name].partitioned = False

    def crash(self, name: str) -> None:
        """The process dies: no LeaveGroup, nothing more from it."""
        self.partition(name)
        self.members[name].closed = True

    def fail_next(self, api_key: int, error: ErrorCode, *, member: str | None = None, count: int = 1) -> None:
        self._faults.append([api_key, int(error), member, count])

    # ---- time -----------------------------------------------------------------------------
    def _at(self, t: int, fn: Callable) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), fn))

    def _deadlines(self) -> list[int]:
        out = []
        if self._heap:
            out.append(self._heap[0][0])
        d = self.service.timers.next_deadline()
        if d is not None:
            out.append(d)
        for sm in self.members.values():
            if not sm.closed:
                d = sm.member.next_deadline()
                if d is not None:
                    out.append(d)
        return out

    def settle(self) -> None:
        """Do everything due at the current time until nothing changes."""
        for _ in range(100000):
            progress = False
            while self._heap and self._heap[0][0] <= self.now:
                _, _, fn = heapq.heappop(self._heap)
                fn()
                progress = True
            if self.service.timers.advance(self.now):
                progress = True
            for sm in list(self.members.values()):
                if sm.closed:
                    continue
                if not sm.frozen:
                    sm.member.application_poll(self.now)
                actions = sm.member.poll(self.now)
                if actions:
                    progress = True
                    for a in actions:
                        self._execute(sm, a)
            if not progress:
                return
        raise AssertionError("the simulation does not settle")

    def run(self, until: Callable[[], bool] | None = None, *, max_ms: int = 120_000) -> bool:
        """Advance virtual time until until() holds (True) or max_ms have passed (False)."""
        end = self.now + max_ms
        while True:
            self.settle()
            if until is not None and until():
                return True
            future = [d for d in self._deadlines() if d > self.now]
            nxt = min(future) if future else None
            if nxt is None or nxt > end:
                self.now = end
                self.settle()
                return bool(until and until())
            self.now = nxt

    def advance(self, ms: int) -> None:
        self.run(max_ms=ms)

    def run_until_stable(self, names=None, *, max_ms: int = 120_000) -> None:
        assert self.run(lambda: self.stable(names), max_ms=max_ms), self.describe()

    # ---- inspection -----------------------------------------------------------------------
    def group(self):
        return self.service.group_coordinator.group(GROUP)

    def live(self, names=None) -> list[SimMember]:
        return [sm for n, sm in self.members.items() if not sm.closed and (names is None or n in names)]

    def stable(self, names=None) -> bool:
        """Coordinator Stable with exactly these members, each member stable, nothing pending,
        and the members' assignments a partition of every subscribed partition."""
        g = self.group()
        live = self.live(names)
        if g is None or g.state != "Stable" or len(g.members) != len(live):
            return False
        owned = []
        for sm in live:
            m = sm.member
            if not m.stable or m.generation_id != g.generation_id or m.member_id not in g.members:
                return False
            owned += list(m.assignment)
        topics = {t for sm in live for t in sm.member.subscription}
        expected = {TP(t, p) for t in topics for p in range(self.service.partition_count(t) or 0)}
        return len(owned) == len(set(owned)) and set(owned) == expected

    def describe(self) -> str:
        g = self.group()
        lines = [f"t={self.now} group: {g.state if g is not None else None} gen={g.generation_id if g is not None else None} "
                 f"members={list(g.members) if g is not None else None}"]
        for sm in self.members.values():
            lines.append(f"  {sm.name}: {sm.member!r} closed={sm.closed} events={sm.events[-6:]}")
        return "\n".join(lines)

    def ownership_is_exclusive(self) -> bool:
        seen = set()
        for sm in self.live():
            if seen & sm.assignment:
                return False
            seen |= sm.assignment
        return True

    # ---- the transport ----------------------------------------------------------------------
    def _execute(self, sm: SimMember, a) -> None:
        m = sm.member
        if isinstance(a, Connect):
            node_id = a.node_id if a.node_id is not None else 0
            conn = _SimConn(a.conn_id, node_id)
            node = self.service.cluster.nodes.get(node_id)
            if sm.partitioned or node is None or not node.up:
                self._at(self.now + self.latency, lambda: m.on_connection_lost(a.conn_id, self.now))
                return
            sm.conns[a.conn_id] = conn
            versions = self.service.supported_versions()

            def up():
                if conn.alive:
                    conn.ready = True
                    m.on_connected(a.conn_id, versions, self.now)
            self._at(self.now + self.latency, up)
        elif isinstance(a, Disconnect):
            conn = sm.conns.pop(a.conn_id, None)
            if conn is not None:
                conn.alive = False
        elif isinstance(a, SendRequest):
            self.requests.append((self.now, sm.name, a.api_key, a.api_version))
            conn = sm.conns.get(a.conn_id)
            if conn is None or not conn.alive:
                return                      # lost; the member's request timeout will notice
            conn.queue.append(a)
            self._pump(sm, conn)
        elif isinstance(a, RebalanceCallback):
            sm.events.append((self.now, a.kind, sorted(a.partitions)))
            if sm.listener is not None:
                sm.listener(sm, a)
            if sm.ack_delay:
                self._at(self.now + sm.ack_delay, lambda: m.callback_done(a.token, self.now))
            else:
                m.callback_done(a.token, self.now)
        elif isinstance(a, CommitCompleted):
            sm.commits.append(a)
        elif isinstance(a, OffsetsFetched):
            sm.fetched.append(a)
        elif isinstance(a, ErrorRaised):
            sm.errors.append(a)
        elif isinstance(a, Closed):
            sm.closed = True
        else:
            raise AssertionError(f"unknown action {a!r}")

    def _pump(self, sm: SimMember, conn: _SimConn) -> None:
        if conn.busy or not conn.queue or not conn.alive:
            return
        a: SendRequest = conn.queue.popleft()
        conn.busy = True
        corr = next(self._corr)
        wire = frames.encode_request(a.api_key, a.api_version, corr, a.body, sm.member.client_id, framed=False)
        req = frames.decode_request(wire)
        m = sm.member

        def respond(body):
            out = frames.encode_response(a.api_key, a.api_version, corr, body, framed=False)
            got_corr, decoded = frames.decode_response(a.api_key, a.api_version, out)
            assert got_corr == corr

            def deliver():
                conn.busy = False
                if conn.alive:
                    m.on_response(a.request_id, decoded, self.now)
                    self._pump(sm, conn)
            self._at(self.now + self.latency, deliver)

        fault = self._fault_for(sm.name, a.api_key)
        if fault is not None:
            respond(_error_body(a.api_key, req.body, fault))
            return
        ctx = RequestContext(self.service, conn.node_id, sm.member.client_id, "/127.0.0.1", a.api_key,
                             a.api_version, corr, connection_id=conn.conn_id)
        self.service.handle(ctx, req.body, respond)

    def _fault_for(self, name: str, api_key: int) -> int | None:
        for f in self._faults:
            if f[0] == api_key and f[2] in (None, name) and f[3] > 0:
                f[3] -= 1
                return f[1]
        return None


def _error_body(api_key: int, body: dict, error: int) -> dict:
    from groupcoord.coordinator.group.runtime import join_error, sync_error
    if api_key == 11:
        return join_error("", error)
    if api_key == 14:
        return sync_error(error)
    if api_key in (12, 13):
        return {"throttle_time_ms": 0, "error_code": error, "members": []}
    if api_key == 8:
        return {"throttle_time_ms": 0, "topics": [
            {"name": t["name"], "partitions": [{"partition_index": p["partition_index"], "error_code": error}
                                               for p in t["partitions"]]} for t in body["topics"]]}
    if api_key == 9:
        return {"throttle_time_ms": 0, "error_code": error, "topics": [],
                "groups": [{"group_id": g["group_id"], "topics": [], "error_code": error}
                           for g in body.get("groups") or []]}
    if api_key == 68:
        from groupcoord.coordinator.group.consumer.requests import heartbeat_error
        return heartbeat_error(error)
    if api_key == 10:
        return {"throttle_time_ms": 0, "error_code": error, "error_message": None, "node_id": -1, "host": "",
                "port": -1, "coordinators": [{"key": k, "node_id": -1, "host": "", "port": -1, "error_code": error,
                                              "error_message": None} for k in body.get("coordinator_keys") or []]}
    if api_key == 76:
        from groupcoord.coordinator.group.share.requests import heartbeat_error as share_heartbeat_error
        return share_heartbeat_error(error)
    if api_key in (78, 79):
        from groupcoord.coordinator.share.manager import acknowledge_error, fetch_error
        return fetch_error(error) if api_key == 78 else acknowledge_error(error)
    raise AssertionError(f"no error body for API {api_key}")


def all_tps(sim: Sim, *topics: str) -> set:
    return {TP(t, p) for t in topics for p in range(sim.service.partition_count(t))}


# ================================================================================ harness self-tests
def test_one_member_joins_and_owns_everything():
    sim = Sim({"t": 4})
    a = sim.add("a")
    sim.run_until_stable()
    assert a.assignment == all_tps(sim, "t")
    assert a.member.is_leader and a.member.generation_id == 1
    # the dynamic member went through KIP-394: MEMBER_ID_REQUIRED, then a join with its id
    joins = [r for r in sim.requests if r[2] == 11]
    assert len(joins) == 2 and joins[0][3] == 9


def test_responses_on_a_connection_come_back_in_request_order():
    sim = Sim({"t": 2})
    a = sim.add("a")
    sim.run_until_stable()
    order = []
    m = a.member
    original = m.on_response

    def spy(request_id, body, now):
        order.append(request_id)
        original(request_id, body, now)
    m.on_response = spy
    tp = TP("t", 0)
    h1 = m.commit({tp: 1}, sim.now)
    h2 = m.commit({tp: 2}, sim.now, sync=False)
    sim.advance(50)
    assert order == sorted(order)
    assert [c.handle for c in a.commits] == [h1, h2]
