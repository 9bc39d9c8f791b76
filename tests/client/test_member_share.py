"""The share consumer (KIP-932) as a sans-I/O :class:`ShareMember` against our coordinator, in virtual time.

Kafka 4.3's client is the reference: ShareConsumerImpl, ShareMembershipManager, ShareHeartbeatRequestManager,
ShareConsumeRequestManager, ShareSessionHandler. Each test names the Kafka test it mirrors where there is one
(SCRMT = ShareConsumeRequestManagerTest, SMMT = ShareMembershipManagerTest, SHRMT =
ShareHeartbeatRequestManagerTest, SSHT = ShareSessionHandlerTest, SCIT = ShareConsumerImplTest, SCT = the
integration ShareConsumerTest, KSCT = KafkaShareConsumerTest).

:class:`ShareSim` is the harness's :class:`Sim` with share members: every request through the codec to the
service, the application's side (``application_poll`` then ``take_records``) run by the simulation in a tight
poll loop (``app=True``, implicit mode) or by the test itself (``app=False``: :meth:`ShareSim.app_poll`,
:meth:`ShareSim.poll_records`). Records are produced with Produce requests at the partition's leader.
"""
from __future__ import annotations

import heapq
import itertools
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import pytest

from groupcoord.client.consumer_config import ConfigError, ConsumerConfig, ShareConsumerConfig
from groupcoord.client.member import Closed, SendRequest
from groupcoord.client.member.actions import IllegalStateError
from groupcoord.client.member.share import ShareMember, ShareState
from groupcoord.client.member.share_actions import (
    ACCEPT, REJECT, RELEASE, AcknowledgementsCommitted, ShareCommitCompleted, ShareRecord,
)
from groupcoord.client.member.share_fetching import ack_batches
from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.share.partition import RecordState
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.records import Record, encode_batch

from test_member_harness import GROUP, TP, Sim, SimMember

PRODUCE, SGH, SHARE_FETCH, SHARE_ACK = 0, 76, 78, 79
HB_MS = 1000                    # the brokers' group.share.heartbeat.interval.ms here
_E = ErrorCode


# ================================================================================ the simulation
@dataclass
class ShareSimMember(SimMember):
    records: list = field(default_factory=list)          # every record the application took, in order
    polls: list = field(default_factory=list)            # the records of each poll that returned some
    acks: list = field(default_factory=list)             # AcknowledgementsCommitted
    share_commits: list = field(default_factory=list)    # ShareCommitCompleted
    on_records: Callable | None = None                   # on_records(sim member, records) after a poll

    def held(self) -> set:
        """(partition, offset) of the records the member holds: its last poll's and those buffered."""
        m = self.member
        out = {(tp.partition, offset) for tp, offset in m.batch}
        for tp, q in m.fetcher.buffer.items():
            out |= {(tp.partition, rec.offset) for rec, _ in q}
        return out


class ShareSim(Sim):
    """The harness with share members (:meth:`add_share`) and every request body kept (``bodies``: (now,
    member name, api key, body); ``nodes``: the node each went to). The share group ``g`` reads from the
    earliest offset; the brokers' share heartbeat interval is HB_MS, and a target assignment is computed at
    once."""

    BROKER = {"group.share.heartbeat.interval.ms": HB_MS, "group.share.min.heartbeat.interval.ms": 100,
              "group.share.assignment.interval.ms": 0}

    def __init__(self, topics: dict[str, int] | None = None, *, broker: dict | None = None,
                 group_configs: dict | None = None, **kwargs):
        super().__init__(topics or {"t": 1}, broker={**self.BROKER, **(broker or {})}, **kwargs)
        self.bodies: list = []
        self.nodes: list = []                            # the node each of bodies went to
        self._producer_conn = itertools.count(1_000_000)
        self.service.alter_group_configs(GROUP, {"share.auto.offset.reset": "earliest", **(group_configs or {})})

    # ---- members -------------------------------------------------------------------------------
    def add_share(self, name: str, topics=("t",), *, config: dict | None = None, app: bool = True,
                  on_records: Callable | None = None) -> ShareSimMember:
        """A share member; ``app``: the simulation polls for it (implicit mode's tight poll loop)."""
        cfg = {"group.id": GROUP, "client.id": name}
        cfg.update(config or {})
        m = ShareMember(cfg, topics=topics, now=self.now, rng=random.Random(name))
        # connection ids unique over the members: the service knows share sessions by (node, connection id)
        m.net.ids = itertools.count(1000 * (len(self.members) + 1))
        sm = ShareSimMember(name, m, frozen=not app, on_records=on_records)
        self.members[name] = sm
        return sm

    # ---- the application -------------------------------------------------------------------------
    def app_poll(self, name: str, max_records: int | None = None) -> list[ShareRecord]:
        """One application poll of the member: application_poll, then take_records."""
        sm = self.members[name]
        sm.member.application_poll(self.now)
        return self._took(sm, sm.member.take_records(self.now, max_records))

    def poll_records(self, name: str, *, max_ms: int = 10_000, max_records: int | None = None) -> list[ShareRecord]:
        """Application polls until a poll returns records (the simulation runs in between); [] after max_ms."""
        m = self.members[name].member
        end = self.now + max_ms
        while True:
            got = self.app_poll(name, max_records)
            if got or self.now >= end:
                return got
            self.run(lambda: m.fetcher.buffered() > 0, max_ms=end - self.now)

    def _took(self, sm: ShareSimMember, records: list) -> list:
        if records:
            sm.records += records
            sm.polls.append(list(records))
            if sm.on_records is not None:
                sm.on_records(sm, records)
        return records

    def settle(self) -> None:
        """Sim.settle, the application's poll of an unfrozen share member being application_poll then
        take_records (records taken count as progress: the loop polls again at once); an application
        whose member failed (ErrorRaised, fatal) polls no more."""
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
                m = sm.member
                if not sm.frozen:
                    if isinstance(m, ShareMember):
                        if not m.closing and not m.closed and m.subscription and m.fatal_error is None:
                            m.application_poll(self.now)
                            if self._took(sm, m.take_records(self.now)):
                                progress = True
                    else:
                        m.application_poll(self.now)
                actions = m.poll(self.now)
                if actions:
                    progress = True
                    for a in actions:
                        self._execute(sm, a)
            if not progress:
                return
        raise AssertionError("the simulation does not settle")

    def _execute(self, sm, a) -> None:
        if isinstance(a, SendRequest):
            conn = sm.conns.get(a.conn_id)
            self.bodies.append((self.now, sm.name, a.api_key, a.body))
            self.nodes.append(conn.node_id if conn is not None else None)
        if isinstance(a, AcknowledgementsCommitted):
            sm.acks.append(a)
        elif isinstance(a, ShareCommitCompleted):
            sm.share_commits.append(a)
        else:
            super()._execute(sm, a)

    def break_connection(self, name: str, key) -> None:
        """One connection of the member breaks (its ``key``: "coordinator", ("broker", node id)): both
        ends see it, the broker closing the share sessions opened on it."""
        sm = self.members[name]
        for cid, conn in list(sm.conns.items()):
            c = sm.member.net.conns.get(cid)
            if c is None or c.key != key:
                continue
            conn.alive = False
            del sm.conns[cid]
            self.service.connection_closed(conn.node_id, cid)
            sm.member.on_connection_lost(cid, self.now)

    # ---- the log and the share-partitions --------------------------------------------------------
    def produce(self, count: int, partition: int = 0, topic: str = "t", *, batches: int = 1) -> int:
        """``count`` records in ``batches`` batches at the partition's leader; the first offset."""
        first = None
        node = self.service.cluster.leader_for(topic, partition)
        for b in range(batches):
            n = count // batches + (1 if b < count % batches else 0)
            data = encode_batch([Record(i, 0, None, b"v%d" % i, []) for i in range(n)], base_timestamp=1)
            ctx = RequestContext(self.service, node, "producer", "/127.0.0.1", PRODUCE, 8, 1,
                                 connection_id=next(self._producer_conn))
            got = []
            self.service.handle(ctx, {"transactional_id": None, "acks": -1, "timeout_ms": 1000, "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": data}]}]}, got.append)
            [part] = got[0]["responses"][0]["partition_responses"]
            assert part["error_code"] == 0, part
            first = part["base_offset"] if first is None else first
        return first

    def end_offset(self, partition: int = 0, topic: str = "t") -> int:
        return self.service.cluster.log(topic, partition).log_end_offset

    def share_partition(self, partition: int = 0, topic: str = "t"):
        return self.service.share_partitions.share_partitions()[(GROUP, self.service.topic_id(topic), partition)]

    def record_states(self, partition: int = 0, topic: str = "t") -> dict[int, tuple]:
        """offset -> (state, delivery count, member id) of the share-partition's in-flight records (from its start
        offset: those before it are done)."""
        sp = self.share_partition(partition, topic)
        out = {}
        for b in sp.cached_state():
            for first, last, st in b.states():
                for o in range(max(first, sp.start_offset), last + 1):
                    out[o] = (st.state, st.delivery_count, st.member_id)
        return out

    # ---- the requests and the group ----------------------------------------------------------------
    def sent(self, name: str, api_key: int, since: int = 0, node: int | None = None) -> list[dict]:
        return [b for (t, n, k, b), to in zip(self.bodies, self.nodes)
                if n == name and k == api_key and t >= since and (node is None or to == node)]

    def heartbeats(self, name: str) -> list[tuple[int, dict]]:
        return [(t, b) for t, n, k, b in self.bodies if n == name and k == SGH]

    def share_group(self):
        return self.service.group_coordinator.get(GROUP)

    def joined(self, *names: str) -> bool:
        """Each member STABLE with partitions, in the group at the epoch it has."""
        g = self.share_group()
        if g is None:
            return False
        for name in names:
            m = self.members[name].member
            gm = g.members.get(m.member_id)
            if gm is None or m.state is not ShareState.STABLE or not m.assignment or gm.member_epoch != m.member_epoch:
                return False
        return True

    def run_until_joined(self, *names: str, max_ms: int = 20_000) -> None:
        assert self.run(lambda: self.joined(*names), max_ms=max_ms), self.describe()

    def describe(self) -> str:
        return "\n".join(f"t={self.now} {sm.name}: {sm.member!r} closed={sm.closed}" for sm in self.members.values())


def acked_offsets(body: dict, ack_type: int | None = None) -> dict[int, set]:
    """partition -> offsets a ShareFetch / ShareAcknowledge body acknowledges (of one type, or any)."""
    out: dict[int, set] = {}
    for t in body["topics"]:
        for p in t["partitions"]:
            for b in p["acknowledgement_batches"]:
                if ack_type is None or b["acknowledge_types"] == [ack_type]:
                    out.setdefault(p["partition_index"], set()).update(range(b["first_offset"], b["last_offset"] + 1))
    return out


def partitions_of(body: dict) -> list[int]:
    return sorted(p["partition_index"] for t in body["topics"] for p in t["partitions"])


def keys(records) -> list[tuple[int, int]]:
    return [(r.partition, r.offset) for r in records]


# ================================================================================ 1. joining
def test_first_heartbeat_joins_with_epoch_zero_the_sorted_subscription_and_the_rack():
    # SHRMT testFirstHeartbeatIncludesRequiredInfoToJoinGroupAndGetAssignments, testHeartbeatState: epoch 0, the
    # member's own id, the subscription (sorted) and the rack; then only what changed (nothing: null fields)
    sim = ShareSim({"t": 2, "u": 1})
    a = sim.add_share("a", topics=("u", "t"), config={"client.rack": "r1"})
    sim.run_until_joined("a")
    m = a.member
    hbs = [b for _, b in sim.heartbeats("a")]
    first = hbs[0]
    assert (first["member_epoch"], first["member_id"], first["subscribed_topic_names"], first["rack_id"]) == (
        0, m.member_id, ["t", "u"], "r1")
    assert len(m.member_id) == 22 and m.member_id in sim.share_group().members
    assert all(b["member_id"] == m.member_id for b in hbs)
    assert len(hbs) >= 2
    assert all(b["subscribed_topic_names"] is None and b["rack_id"] is None and b["member_epoch"] > 0 for b in hbs[1:])
    assert m.assignment == {TP("t", 0), TP("t", 1), TP("u", 0)}
    assert sim.share_group().members[m.member_id].rack_id == "r1"


def test_heartbeats_at_the_interval_the_coordinator_answers():
    # SHRMT testSuccessfulHeartbeatTiming, testHeartbeatOutsideInterval: the next heartbeat is due the
    # response's HeartbeatIntervalMs after the last one went out; a new interval of the group is taken up
    sim = ShareSim()
    sim.add_share("a")
    sim.run_until_joined("a")
    sim.advance(4 * HB_MS + 10)
    times = [t for t, _ in sim.heartbeats("a")][-4:]
    assert [b - a for a, b in zip(times, times[1:])] == [HB_MS] * 3
    sim.service.alter_group_configs(GROUP, {"share.heartbeat.interval.ms": 2500})
    sim.advance(HB_MS + 4 * 2500 + 10)          # one more at the old interval, answered with the new one
    times = [t for t, _ in sim.heartbeats("a")][-4:]
    assert [b - a for a, b in zip(times, times[1:])] == [2500] * 3
    assert sim.members["a"].member.membership.interval_ms == 2500


def test_a_new_subscription_goes_out_at_once_and_only_once():
    # SMMT testOnSubscriptionUpdatedDoesNotTransitionToJoiningIfInGroup; SHRMT testHeartbeatState: the changed
    # subscription is sent with the next heartbeat (at once), then null again; the assignment follows it
    sim = ShareSim({"t": 1, "u": 2})
    a = sim.add_share("a", topics=("t",))
    sim.run_until_joined("a")
    sim.advance(HB_MS // 2)
    before = len(sim.heartbeats("a"))
    at = sim.now
    a.member.subscribe(["u", "t"], sim.now)
    assert sim.run(lambda: a.member.assignment == {TP("t", 0), TP("u", 0), TP("u", 1)}, max_ms=5000), sim.describe()
    later = sim.heartbeats("a")[before:]
    t0, change = later[0]
    assert t0 - at <= 2 and change["subscribed_topic_names"] == ["t", "u"] and change["member_epoch"] > 0
    assert all(b["subscribed_topic_names"] is None for _, b in later[1:])
    assert sim.share_group().members[a.member.member_id].subscribed_topic_names == ("t", "u")


def test_after_a_heartbeat_error_the_next_heartbeat_carries_everything():
    # SHRMT testNoCoordinator, testHeartbeatState (sentFields reset on a failure): COORDINATOR_NOT_AVAILABLE:
    # the coordinator is looked up again, and the next heartbeat (same epoch) carries the subscription and rack
    sim = ShareSim()
    a = sim.add_share("a", config={"client.rack": "r1"})
    sim.run_until_joined("a")
    epoch = a.member.member_epoch
    n = len(sim.heartbeats("a"))
    lookups = len([1 for _, name, k, _ in sim.bodies if name == "a" and k == 10])
    sim.fail_next(SGH, _E.COORDINATOR_NOT_AVAILABLE, member="a")
    sim.advance(HB_MS + 500)
    failed, again, *_ = [b for _, b in sim.heartbeats("a")[n:]]
    assert failed["subscribed_topic_names"] is None and failed["member_epoch"] == epoch
    assert (again["member_epoch"], again["subscribed_topic_names"], again["rack_id"]) == (epoch, ["t"], "r1")
    assert len([1 for _, name, k, _ in sim.bodies if name == "a" and k == 10]) == lookups + 1
    assert sim.joined("a") and a.member.member_epoch == epoch


def test_unsubscribing_leaves_the_group():
    # SCT testSubscribePollUnsubscribe; SMMT testLeaveGroupWhenStateIsStable: an empty subscription leaves
    # (epoch -1, no rack, no topics), and polling then fails
    sim = ShareSim()
    a = sim.add_share("a")
    sim.run_until_joined("a")
    a.member.subscribe([], sim.now)
    sim.advance(3 * HB_MS)
    _, leave = sim.heartbeats("a")[-1]
    assert (leave["member_epoch"], leave["rack_id"], leave["subscribed_topic_names"]) == (-1, None, None)
    assert a.member.member_id not in sim.share_group().members and a.member.assignment == frozenset()
    with pytest.raises(IllegalStateError, match="Consumer is not subscribed to any topics."):
        a.member.application_poll(sim.now)


def test_a_poll_after_unsubscribing_settles_the_last_poll_before_it_fails():
    # SCT testSubscribeUnsubscribePollFails; ShareConsumerImpl.poll's order: the implicit acceptance of the last
    # poll's records (and explicit mode's check) come before "Consumer is not subscribed to any topics.", so
    # the records are accepted (their acknowledgements go out, at the latest with the close), not released
    sim = ShareSim()
    sim.produce(2)
    a = sim.add_share("a", app=False)
    sim.run_until_joined("a")
    m = a.member
    assert len(sim.poll_records("a")) == 2
    m.subscribe([], sim.now)
    with pytest.raises(IllegalStateError, match=r"^Consumer is not subscribed to any topics\.$"):
        m.application_poll(sim.now)
    m.close(sim.now)
    assert sim.run(lambda: a.closed, max_ms=5000)
    assert sim.share_partition().start_offset == 2
    assert [r for act in a.acks for r in act.results.items()] == [(TP("t", 0), (frozenset({0, 1}), None))]
    # explicit mode: the unacknowledged records are what the poll complains of
    sim.produce(1)
    b = sim.add_share("b", config={"share.acknowledgement.mode": "explicit"}, app=False)
    sim.run_until_joined("b")
    assert len(sim.poll_records("b")) == 1
    b.member.subscribe([], sim.now)
    with pytest.raises(IllegalStateError, match="All records must be acknowledged"):
        b.member.application_poll(sim.now)


# ================================================================================ 2. share sessions
def test_share_session_opens_at_epoch_zero_with_every_partition_then_counts_up():
    # SSHT testShareSession; SCRMT testFetchNormal, testMultipleFetches, testPiggybackAcknowledgementsInFlight:
    # the first ShareFetch to the leader opens the session (epoch 0) with every assigned partition and no
    # acknowledgements; the session's next requests carry epochs 1, 2, ... with the acknowledgements
    # (piggy-backed on a ShareFetch when one is due, else a ShareAcknowledge); partitions already in the
    # session are named again only to carry acknowledgements
    sim = ShareSim({"t": 3})
    for p in range(3):
        sim.produce(4, p)
    a = sim.add_share("a", config={"max.poll.records": 5})
    assert sim.run(lambda: len(a.records) == 12, max_ms=20_000), sim.describe()
    sim.advance(2000)
    session = [b for _, n, k, b in sim.bodies if n == "a" and k in (SHARE_FETCH, SHARE_ACK)]
    opening = session[0]
    assert opening is sim.sent("a", SHARE_FETCH)[0]
    assert opening["share_session_epoch"] == 0 and opening["member_id"] == a.member.member_id
    assert partitions_of(opening) == [0, 1, 2]
    assert [p["acknowledgement_batches"] for t in opening["topics"] for p in t["partitions"]] == [[]] * 3
    assert opening["forgotten_topics_data"] == [] and opening["max_records"] == opening["batch_size"] == 5
    assert [b["share_session_epoch"] for b in session] == list(range(len(session)))
    assert all(set(partitions_of(b)) == set(acked_offsets(b)) for b in session[1:])
    assert any(acked_offsets(f) for f in sim.sent("a", SHARE_FETCH))          # some piggy-backed
    # every record accepted exactly once
    acked = Counter((p, o) for b in session for p, offsets in acked_offsets(b, ACCEPT).items() for o in offsets)
    assert acked == Counter(keys(a.records)) and set(acked.values()) == {1}
    assert [s.member_id for s in sim.service.share_partitions.sessions()] == [a.member.member_id]


def test_acknowledgement_batches_are_runs_of_consecutive_offsets_of_one_type():
    # SCRMT testBatchingAcknowledgeRequestStates; the wire's AcknowledgementBatches as Kafka's clients build
    # them: one type per batch, a new batch where the type changes or an offset is missing
    sim = ShareSim()
    sim.produce(10)
    kinds = {0: ACCEPT, 1: ACCEPT, 2: ACCEPT, 3: RELEASE, 4: ACCEPT, 5: ACCEPT, 6: REJECT, 7: REJECT, 8: REJECT,
             9: REJECT}

    def acknowledge(sm, records):
        for r in records:
            sm.member.acknowledge(r, kinds[r.offset])
    sim.add_share("a", config={"share.acknowledgement.mode": "explicit"}, app=False, on_records=acknowledge)
    sim.run_until_joined("a")
    assert keys(sim.poll_records("a")) == [(0, o) for o in range(10)]
    since = sim.now
    again = sim.poll_records("a")                       # the acknowledgements go with the next ShareFetch
    [carrier] = [f for f in sim.sent("a", SHARE_FETCH, since) if f["topics"]]
    [[p]] = [t["partitions"] for t in carrier["topics"]]
    assert p["acknowledgement_batches"] == [
        {"first_offset": 0, "last_offset": 2, "acknowledge_types": [ACCEPT]},
        {"first_offset": 3, "last_offset": 3, "acknowledge_types": [RELEASE]},
        {"first_offset": 4, "last_offset": 5, "acknowledge_types": [ACCEPT]},
        {"first_offset": 6, "last_offset": 9, "acknowledge_types": [REJECT]}]
    assert [(r.offset, r.delivery_count) for r in again] == [(3, 2)]
    assert ack_batches([(5, ACCEPT), (7, ACCEPT), (6, ACCEPT), (8, RELEASE)]) == [
        {"first_offset": 5, "last_offset": 7, "acknowledge_types": [ACCEPT]},
        {"first_offset": 8, "last_offset": 8, "acknowledge_types": [RELEASE]}]


def test_a_share_session_error_starts_the_session_over():
    # SSHT / ShareSessionHandler.handleResponse (SHARE_SESSION_NOT_FOUND: nextCloseExistingAttemptNew); SCRMT
    # testFetchError: the next ShareFetch opens a new session at epoch 0 with every partition
    sim = ShareSim({"t": 2})
    a = sim.add_share("a")
    sim.run_until_joined("a")
    sim.produce(3, 0)
    assert sim.run(lambda: len(a.records) == 3, max_ms=5000)
    sim.advance(2000)
    assert sim.sent("a", SHARE_FETCH)[-1]["share_session_epoch"] >= 2
    n = len(sim.sent("a", SHARE_FETCH))
    sim.fail_next(SHARE_FETCH, _E.SHARE_SESSION_NOT_FOUND, member="a")
    sim.advance(2000)
    failed, reopened, *rest = sim.sent("a", SHARE_FETCH)[n:]
    assert failed["share_session_epoch"] > 0
    assert reopened["share_session_epoch"] == 0 and partitions_of(reopened) == [0, 1]
    assert [f["share_session_epoch"] for f in rest] == list(range(1, len(rest) + 1))
    sim.produce(2, 1)
    assert sim.run(lambda: len(a.records) == 5, max_ms=5000)


def test_one_share_session_per_leader_and_a_commit_waits_for_every_leader():
    # SCRMT testShareFetchAndCloseMultipleNodes, testMultipleTopicsFetch, testCommitSync: each leader's session
    # opens with the partitions it leads; a commit is complete once every leader answered; close ends each
    # session (ShareAcknowledge epoch -1 on both leaders) before the leave heartbeat goes to the coordinator
    sim = ShareSim({"t": 4}, nodes=2)
    leaders = {p: sim.service.cluster.leader_for("t", p) for p in range(4)}
    assert set(leaders.values()) == {0, 1}
    for p in range(4):
        sim.produce(2, p)
    a = sim.add_share("a", app=False)
    sim.run_until_joined("a")
    m = a.member
    while len(a.records) < 8:
        assert sim.poll_records("a", max_ms=3000)
    for node in (0, 1):
        opening = sim.sent("a", SHARE_FETCH, node=node)[0]
        assert opening["share_session_epoch"] == 0
        assert partitions_of(opening) == [p for p, n in leaders.items() if n == node]
    last = {(r.partition, r.offset) for r in a.polls[-1]}
    assert {leaders[p] for p, _ in last} == {0, 1}                 # the last poll had records of both
    since = sim.now
    handle = m.commit(sim.now)
    assert sim.run(lambda: a.share_commits, max_ms=3000)
    [done] = a.share_commits
    expected = {}
    for p, o in last:
        expected.setdefault(TP("t", p), set()).add(o)
    assert done.handle == handle and done.results == {tp: (frozenset(o), None) for tp, o in expected.items()}
    assert {n for n in (0, 1) if sim.sent("a", SHARE_ACK, since, node=n)} == {0, 1}
    at = sim.now
    m.close(sim.now)
    assert sim.run(lambda: a.closed, max_ms=5000)
    after = [(k, to, b) for (t, n, k, b), to in zip(sim.bodies, sim.nodes) if n == "a" and t >= at]
    assert sorted((k, to, b.get("share_session_epoch")) for k, to, b in after[:2]) == [(SHARE_ACK, 0, -1),
                                                                                         (SHARE_ACK, 1, -1)]
    assert [(k, to, b["member_epoch"]) for k, to, b in after[2:]] == [
        (SGH, sim.service.cluster.coordinator_for(GROUP), -1)]
    assert sim.service.share_partitions.sessions() == []


def test_the_session_adds_and_forgets_partitions_as_the_assignment_changes():
    # SSHT testForgottenPartitions, testPartitionRemoval; SCRMT testShareFetchWithSubscriptionChange: newly
    # assigned partitions join the session in the next ShareFetch (without acknowledgements), partitions no
    # longer assigned go in ForgottenTopicsData
    sim = ShareSim({"t": 1, "u": 2})
    a = sim.add_share("a", topics=("t",))
    sim.run_until_joined("a")
    m = a.member
    t_id, u_id = sim.service.topic_id("t"), sim.service.topic_id("u")
    sim.advance(700)
    assert sim.sent("a", SHARE_FETCH)[0]["topics"] == [{"topic_id": t_id, "partitions": [
        {"partition_index": 0, "acknowledgement_batches": []}]}]
    n = len(sim.sent("a", SHARE_FETCH))
    m.subscribe(["t", "u"], sim.now)
    assert sim.run(lambda: len(m.assignment) == 3, max_ms=5000)
    sim.advance(1200)
    adding = [f for f in sim.sent("a", SHARE_FETCH)[n:] if f["topics"]]
    assert adding[0]["share_session_epoch"] > 0 and adding[0]["forgotten_topics_data"] == []
    assert adding[0]["topics"] == [{"topic_id": u_id, "partitions": [
        {"partition_index": 0, "acknowledgement_batches": []}, {"partition_index": 1, "acknowledgement_batches": []}]}]
    n = len(sim.sent("a", SHARE_FETCH))
    m.subscribe(["u"], sim.now)
    assert sim.run(lambda: m.assignment == {TP("u", 0), TP("u", 1)}, max_ms=5000)
    sim.advance(1200)
    forgetting = [f for f in sim.sent("a", SHARE_FETCH)[n:] if f["forgotten_topics_data"]]
    assert forgetting[0]["forgotten_topics_data"] == [{"topic_id": t_id, "partitions": [0]}]
    assert forgetting[0]["topics"] == []
    assert all(f["forgotten_topics_data"] == [] for f in sim.sent("a", SHARE_FETCH)[n:][1:])
    [session] = sim.service.share_partitions.sessions()
    assert len(session.partitions) == 2
    sim.produce(2, 0, "t")
    sim.produce(3, 1, "u")
    assert sim.run(lambda: len(a.records) == 3, max_ms=5000)
    sim.advance(2000)
    assert keys(a.records) == [(1, 0), (1, 1), (1, 2)] and {r.topic for r in a.records} == {"u"}


def test_acknowledgements_of_a_partition_no_longer_assigned_are_still_sent():
    # SCT testAcknowledgementSentOnSubscriptionChange; SSHT testPartitionForgottenOnAcknowledgeOnly: the record
    # of the old subscription is accepted at the next poll (the leader still has it acquired by the member),
    # the new subscription's records come, and both acknowledgements succeed
    sim = ShareSim({"t": 1, "u": 1})
    sim.produce(1, 0, "t")
    sim.produce(1, 0, "u")
    a = sim.add_share("a", topics=("t",), app=False)
    sim.run_until_joined("a")
    m = a.member
    assert [(r.topic, r.offset) for r in sim.poll_records("a")] == [("t", 0)]
    m.subscribe(["u"], sim.now)
    assert sim.run(lambda: m.assignment == {TP("u", 0)}, max_ms=5000)
    assert [(r.topic, r.offset) for r in sim.poll_records("a")] == [("u", 0)]
    sim.app_poll("a")
    sim.advance(1000)
    results = {tp: err for act in a.acks for tp, (_, err) in act.results.items()}
    assert results == {TP("t", 0): None, TP("u", 0): None}
    assert sim.share_partition(0, "t").start_offset == 1 and sim.share_partition(0, "u").start_offset == 1


# ================================================================================ 3. implicit mode
def test_implicit_mode_accepts_every_record_once_and_the_start_offset_reaches_the_log_end():
    # SCT testImplicitAcknowledgeCommitSync, testSubscriptionAndPollMultiple, testMaxPollRecords; KSCT
    # testVerifyFetchAndCommitSyncImplicit: each poll's records are accepted at the next poll; every record
    # delivered once (delivery count 1); the share-partitions' start offsets reach the log end
    sim = ShareSim({"t": 2})
    sim.produce(13, 0, batches=4)
    sim.produce(7, 1, batches=2)
    a = sim.add_share("a", config={"max.poll.records": 4})
    assert sim.run(lambda: len(a.records) == 20, max_ms=20_000), sim.describe()
    sim.produce(5, 1)                                  # while the member long-polls
    assert sim.run(lambda: len(a.records) == 25, max_ms=5000), sim.describe()
    assert sim.run(lambda: all(sim.share_partition(p).start_offset == sim.end_offset(p) for p in (0, 1)),
                   max_ms=5000)
    assert Counter(keys(a.records)) == Counter([(0, o) for o in range(13)] + [(1, o) for o in range(12)])
    assert {r.delivery_count for r in a.records} == {1}
    assert max(len(p) for p in a.polls) <= 4
    assert [r.value for r in a.records if r.partition == 0][:4] == [b"v0", b"v1", b"v2", b"v3"]
    for p in (0, 1):
        assert all(st is RecordState.ACKNOWLEDGED for st, _, _ in sim.record_states(p).values())
    assert all(err is None for act in a.acks for _, err in act.results.values())


# ================================================================================ 4. explicit mode
def test_explicit_mode_polling_with_unacknowledged_records_raises():
    # SCIT testExplicitModeUnacknowledgedRecords; SCT testExplicitAcknowledgeThrowsNotInBatch
    sim = ShareSim()
    sim.produce(3)
    a = sim.add_share("a", config={"share.acknowledgement.mode": "explicit"}, app=False)
    sim.run_until_joined("a")
    m = a.member
    got = sim.poll_records("a")
    assert len(got) == 3
    with pytest.raises(IllegalStateError, match=r"^All records must be acknowledged in explicit acknowledgement mode\.$"):
        m.application_poll(sim.now)
    m.acknowledge(got[0], ACCEPT)
    m.acknowledge((got[1].topic, got[1].partition, got[1].offset), ACCEPT)
    with pytest.raises(IllegalStateError, match="All records must be acknowledged"):
        m.application_poll(sim.now)
    with pytest.raises(IllegalStateError):
        m.acknowledge(("t", 0, 99), ACCEPT)              # not of this poll
    m.acknowledge(got[2], ACCEPT)
    m.application_poll(sim.now)
    with pytest.raises(IllegalStateError):
        m.acknowledge(got[0], ACCEPT)                    # the poll is over
    assert sim.run(lambda: sim.share_partition().start_offset == 3, max_ms=3000)


def test_acknowledge_in_implicit_mode_raises():
    # SCT testImplicitAcknowledgeFailsExplicit, testConfiguredImplicitAcknowledgeExplicitAcknowledgeFails
    sim = ShareSim()
    sim.produce(2)
    a = sim.add_share("a", app=False)
    sim.run_until_joined("a")
    got = sim.poll_records("a")
    assert got
    with pytest.raises(IllegalStateError, match=r"^Implicit acknowledgement of delivery is being used\.$"):
        a.member.acknowledge(got[0], ACCEPT)


def test_explicit_release_brings_the_record_back_with_delivery_count_2():
    # SCT testExplicitAcknowledgeReleasePollAccept, testExplicitAcknowledgeReleaseAccept
    sim = ShareSim()
    sim.produce(3)
    a = sim.add_share("a", config={"share.acknowledgement.mode": "explicit"}, app=False)
    sim.run_until_joined("a")
    m = a.member
    first = sim.poll_records("a")
    assert [(r.offset, r.delivery_count) for r in first] == [(0, 1), (1, 1), (2, 1)]
    for r in first:
        m.acknowledge(r, RELEASE if r.offset == 1 else ACCEPT)
    second = sim.poll_records("a")
    assert [(r.offset, r.delivery_count, r.value) for r in second] == [(1, 2, b"v1")]
    m.acknowledge(second[0], ACCEPT)
    m.application_poll(sim.now)
    m.take_records(sim.now)
    assert sim.run(lambda: sim.share_partition().start_offset == 3, max_ms=3000)
    assert keys(a.records) == [(0, 0), (0, 1), (0, 2), (0, 1)]


def test_explicit_reject_archives_the_record_and_commit_reports_success():
    # SCT testExplicitAcknowledgeCommitSuccess, testExplicitAcknowledgementCommitAsync (REJECT: the leader
    # archives the record, it is never delivered again); SCRMT testCommitSync (results per partition)
    sim = ShareSim()
    sim.produce(3)
    a = sim.add_share("a", config={"share.acknowledgement.mode": "explicit"}, app=False)
    sim.run_until_joined("a")
    m = a.member
    got = sim.poll_records("a")
    m.acknowledge(got[0], RELEASE)
    m.acknowledge(got[1], REJECT)
    m.acknowledge(got[2], ACCEPT)
    handle = m.commit(sim.now)
    assert sim.run(lambda: a.share_commits, max_ms=3000)
    [done] = a.share_commits
    assert (done.handle, done.results, done.error) == (handle, {TP("t", 0): (frozenset({0, 1, 2}), None)}, None)
    [ack] = sim.sent("a", SHARE_ACK)                  # no fetch wanted: a ShareAcknowledge
    assert ack["share_session_epoch"] > 0 and acked_offsets(ack) == {0: {0, 1, 2}}
    states = sim.record_states()
    assert {o: (st, n) for o, (st, n, _) in states.items()} == {
        0: (RecordState.AVAILABLE, 1), 1: (RecordState.ARCHIVED, 1), 2: (RecordState.ACKNOWLEDGED, 1)}
    again = sim.poll_records("a")
    assert [(r.offset, r.delivery_count) for r in again] == [(0, 2)]
    m.acknowledge(again[0], ACCEPT)
    m.commit(sim.now)
    assert sim.run(lambda: len(a.share_commits) == 2, max_ms=3000)
    assert sim.poll_records("a", max_ms=2000) == []
    assert sim.share_partition().start_offset == 3 and [r.offset for r in a.records].count(1) == 1


def test_an_explicit_commit_sends_only_what_was_acknowledged():
    # SCT testExplicitAcknowledgementCommitAsyncPartialBatch: the acknowledged records go with the commit,
    # the others stay in the poll (still to acknowledge before the next poll), then go with the next poll
    sim = ShareSim()
    sim.produce(3)
    a = sim.add_share("a", config={"share.acknowledgement.mode": "explicit"}, app=False)
    sim.run_until_joined("a")
    m = a.member
    got = sim.poll_records("a")
    m.acknowledge(got[1], ACCEPT)
    m.commit(sim.now)
    assert sim.run(lambda: a.share_commits, max_ms=3000)
    assert a.share_commits[0].results == {TP("t", 0): (frozenset({1}), None)}
    assert [acked_offsets(b) for b in sim.sent("a", SHARE_ACK)] == [{0: {1}}]
    with pytest.raises(IllegalStateError, match="All records must be acknowledged"):
        m.application_poll(sim.now)
    with pytest.raises(IllegalStateError):
        m.acknowledge(got[1], REJECT)                    # already sent
    m.acknowledge(got[0], ACCEPT)
    m.acknowledge(got[2], ACCEPT)
    assert sim.app_poll("a") == []
    assert sim.run(lambda: sim.share_partition().start_offset == 3, max_ms=3000)
    assert {o: st for o, (st, _, _) in sim.record_states().items()} == {}


# ================================================================================ 5. commit
def test_commit_reports_each_partition_and_the_callback_sees_the_same():
    # SCRMT testCommitSync, testResultHandlerOnCommitSync; SCT testAcknowledgementCommitCallbackSuccessfulAcknowledgementOnCommitSync
    sim = ShareSim({"t": 2})
    sim.produce(3, 0)
    sim.produce(2, 1)
    a = sim.add_share("a", app=False)
    sim.run_until_joined("a")
    m = a.member
    while len(a.records) < 5:
        assert sim.poll_records("a", max_ms=3000)
    sim.advance(1000)
    last = set(keys(a.polls[-1]))
    sent = {(p, o) for k in (SHARE_FETCH, SHARE_ACK) for body in sim.sent("a", k)
            for p, offsets in acked_offsets(body).items() for o in offsets}
    assert sent == set(keys(a.records)) - last           # each poll's records accepted at the next poll only
    handle = m.commit(sim.now)                          # implicit: the last poll's records accepted first
    assert sim.run(lambda: a.share_commits, max_ms=3000)
    [done] = a.share_commits
    by_partition = {}
    for p, o in keys(a.records[-len(a.polls[-1]):]):
        by_partition.setdefault(TP("t", p), set()).add(o)
    assert done.handle == handle and done.error is None
    assert done.results == {tp: (frozenset(offsets), None) for tp, offsets in by_partition.items()}
    assert a.acks[-1].results == done.results
    sim.advance(500)
    assert all(sim.share_partition(p).start_offset == sim.end_offset(p) for p in (0, 1))


def test_commit_with_nothing_to_acknowledge_completes_at_once():
    # SCRMT testResultHandlerCompleteIfEmpty
    sim = ShareSim()
    a = sim.add_share("a", app=False)
    sim.run_until_joined("a")
    m = a.member
    before = len(sim.bodies)
    handle = m.commit(sim.now)
    actions = m.poll(sim.now)
    assert [a for a in actions if isinstance(a, ShareCommitCompleted)] == [ShareCommitCompleted(handle, {}, None)]
    assert len(sim.bodies) == before and not any(isinstance(a, SendRequest) for a in actions)


# ================================================================================ 6. acquisition locks
LOCK = {"broker": {"group.share.min.record.lock.duration.ms": 1000},
        "group_configs": {"share.record.lock.duration.ms": 1000}}


def test_an_acknowledgement_after_the_lock_expired_is_not_sent_and_fails():
    # SCT testAcquisitionLockTimeoutOnConsumer, testAcknowledgementCommitCallbackInvalidRecordStateException:
    # the lock is over (the leader gave the records back), so the acknowledgement cannot count: it is not
    # sent, and fails with INVALID_RECORD_STATE; the records come back with delivery count 2
    sim = ShareSim(**LOCK)
    sim.produce(3)
    a = sim.add_share("a", config={"share.acknowledgement.mode": "explicit"}, app=False)
    sim.run_until_joined("a")
    m = a.member
    got = sim.poll_records("a")
    assert len(got) == 3 and m.acquisition_lock_timeout_ms == 1000
    taken = sim.now
    sim.advance(1200)
    assert {st for st, _, _ in sim.record_states().values()} == {RecordState.AVAILABLE}
    for r in got:
        m.acknowledge(r, ACCEPT)
    handle = m.commit(sim.now)
    assert sim.run(lambda: a.share_commits, max_ms=3000)
    [done] = a.share_commits
    assert done.handle == handle
    [(tp, (offsets, error))] = done.results.items()
    assert (tp, offsets, error.code) == (TP("t", 0), frozenset({0, 1, 2}), _E.INVALID_RECORD_STATE)
    assert all(not acked_offsets(b) for k in (SHARE_FETCH, SHARE_ACK) for b in sim.sent("a", k, taken))
    again = sim.poll_records("a")
    assert [(r.offset, r.delivery_count) for r in again] == [(0, 2), (1, 2), (2, 2)]


def test_buffered_records_whose_lock_expired_are_not_handed_out():
    # ShareFetchBuffer / ShareCompletedFetch: records whose acquisition lock is over are not given to the
    # application (another member may hold them now); the leader gives them out again
    sim = ShareSim(**LOCK)
    sim.produce(6)
    a = sim.add_share("a", app=False)
    sim.run_until_joined("a")
    m = a.member
    first = sim.poll_records("a", max_records=2)
    assert [r.offset for r in first] == [0, 1] and m.fetcher.buffered() == 4
    sim.advance(1200)
    assert sim.app_poll("a") == []                     # the four buffered are expired: not handed out
    assert m.fetcher.buffered() == 0
    again = sim.poll_records("a")
    assert [(r.offset, r.delivery_count) for r in again] == [(o, 2) for o in range(6)]
    # the two taken were accepted (implicit) after their lock: not sent, failed
    failed = {tp: (offsets, err.code) for act in a.acks for tp, (offsets, err) in act.results.items() if err}
    assert failed == {TP("t", 0): (frozenset({0, 1}), _E.INVALID_RECORD_STATE)}


# ================================================================================ 7. members share partitions
def test_two_members_share_one_partition_without_holding_a_record_at_once():
    # SCT testMultipleConsumersInGroupConcurrentConsumption, testMultipleConsumersInGroupSequentialConsumption:
    # both members are assigned the one partition; a record is held by one member at a time (the leader says
    # ACQUIRED by the member that has it); every record is delivered, once
    sim = ShareSim({"t": 1})
    overlaps, wrong_holder = [], []

    def check(sm, records):
        mine = {(r.partition, r.offset) for r in records}
        for other in sim.live():
            if other is not sm and mine & other.held():
                overlaps.append((sim.now, sm.name, other.name, sorted(mine & other.held())))
        states = sim.record_states()
        for r in records:
            st, _, holder = states[r.offset]
            if st is not RecordState.ACQUIRED or holder != sm.member.member_id:
                wrong_holder.append((sim.now, sm.name, r.offset, st, holder))
    a = sim.add_share("a", config={"max.poll.records": 3}, on_records=check)
    b = sim.add_share("b", config={"max.poll.records": 3}, on_records=check)
    sim.run_until_joined("a", "b")
    assert a.member.assignment == b.member.assignment == {TP("t", 0)}
    sim.produce(30, batches=10)
    sim.advance(300)
    sim.produce(30, batches=10)
    assert sim.run(lambda: len(a.records) + len(b.records) >= 60, max_ms=30_000), sim.describe()
    sim.advance(1000)
    assert overlaps == [] and wrong_holder == []
    delivered = Counter(keys(a.records) + keys(b.records))
    assert delivered == Counter((0, o) for o in range(60))
    assert a.records and b.records
    assert {r.delivery_count for r in a.records + b.records} == {1}
    assert sim.share_partition().start_offset == 60


# ================================================================================ 8. close
def test_close_acknowledges_on_the_final_epoch_then_leaves_and_the_rest_is_released():
    # SCRMT testAcknowledgeOnClose; SCT testExplicitAcknowledgeReleaseClose,
    # testDeliveryCountDifferentBehaviorWhenClosingSessionWithExplicitAcknowledgement, testConsumerCloseInGroupSequential:
    # ShareAcknowledge epoch -1 with the acknowledgements made, then ShareGroupHeartbeat epoch -1, then Closed;
    # what the member held unacknowledged is AVAILABLE again and another member gets it (delivery count 2)
    sim = ShareSim()
    sim.produce(5)
    a = sim.add_share("a", config={"share.acknowledgement.mode": "explicit"}, app=False)
    sim.run_until_joined("a")
    m = a.member
    got = sim.poll_records("a")
    assert [r.offset for r in got] == [0, 1, 2, 3, 4]
    m.acknowledge(got[0], ACCEPT)
    m.acknowledge(got[1], ACCEPT)
    at = sim.now
    m.close(sim.now)
    m.close(sim.now)                                   # SCRMT testCloseShouldBeIdempotent
    with pytest.raises(IllegalStateError, match="This consumer has already been closed."):
        m.application_poll(sim.now)
    assert sim.run(lambda: a.closed, max_ms=5000), sim.describe()
    after = [(k, b) for t, n, k, b in sim.bodies if n == "a" and t >= at]
    assert [k for k, _ in after] == [SHARE_ACK, SGH]
    (_, close), (_, leave) = after
    assert close["share_session_epoch"] == -1 and close["member_id"] == m.member_id
    assert [p["acknowledgement_batches"] for t in close["topics"] for p in t["partitions"]] == [
        [{"first_offset": 0, "last_offset": 1, "acknowledge_types": [ACCEPT]}]]
    assert (leave["member_epoch"], leave["member_id"], leave["subscribed_topic_names"]) == (-1, m.member_id, None)
    assert a.acks[-1].results == {TP("t", 0): (frozenset({0, 1}), None)}
    assert m.member_id not in sim.share_group().members and sim.service.share_partitions.sessions() == []
    assert {o: (st, n) for o, (st, n, _) in sim.record_states().items()} == {
        o: (RecordState.AVAILABLE, 1) for o in (2, 3, 4)}
    assert sim.share_partition().start_offset == 2
    sim.add_share("b")
    assert sim.run(lambda: len(sim["b"].records) == 3, max_ms=10_000), sim.describe()
    assert [(r.offset, r.delivery_count) for r in sim["b"].records] == [(2, 2), (3, 2), (4, 2)]


def test_close_in_implicit_mode_releases_the_last_poll_and_the_buffer():
    # KSCT testVerifyFetchAndCloseImplicit; ShareConsumerImpl.close: the acknowledgements to send go with the
    # session's close (the last poll's records are not accepted by close), the rest is released
    sim = ShareSim()
    sim.produce(6)
    a = sim.add_share("a", app=False)
    sim.run_until_joined("a")
    m = a.member
    assert len(sim.poll_records("a", max_records=2)) == 2
    assert len(sim.app_poll("a", max_records=2)) == 2   # the first two accepted; 2 and 3 in the poll, 4, 5 buffered
    at = sim.now
    m.close(sim.now)
    assert sim.run(lambda: a.closed, max_ms=5000)
    [close] = sim.sent("a", SHARE_ACK, at)
    assert close["share_session_epoch"] == -1 and acked_offsets(close, ACCEPT) == {0: {0, 1}}
    assert {o: st for o, (st, _, _) in sim.record_states().items()} == {o: RecordState.AVAILABLE for o in (2, 3, 4, 5)}


def test_records_that_arrive_while_closing_are_released_with_the_session():
    # ShareConsumeRequestManager.acknowledgeOnClose: a ShareFetch in flight at close is answered first; what it
    # acquired is not handed out, and goes back with the session's close (ShareAcknowledge epoch -1 releases
    # what the member holds): another member gets it (delivery count 2)
    sim = ShareSim()
    a = sim.add_share("a")
    sim.run_until_joined("a")
    sim.advance(HB_MS // 2)
    assert a.member.fetcher.sessions[0].in_flight is not None        # long-polling
    at = sim.now
    a.member.close(sim.now)
    sim.produce(3)                                                   # answers the waiting ShareFetch
    assert sim.run(lambda: a.closed, max_ms=5000)
    assert a.records == [] and a.member.fetcher.buffered() == 0
    [fetch] = sim.sent("a", SHARE_FETCH, at - HB_MS)
    [close] = sim.sent("a", SHARE_ACK, at)
    assert fetch["share_session_epoch"] == 0 and close["share_session_epoch"] == -1
    assert {o: (st, n) for o, (st, n, _) in sim.record_states().items()} == {
        o: (RecordState.AVAILABLE, 1) for o in range(3)}
    b = sim.add_share("b")
    assert sim.run(lambda: len(b.records) == 3, max_ms=10_000)
    assert [(r.offset, r.delivery_count) for r in b.records] == [(0, 2), (1, 2), (2, 2)]


# ================================================================================ 9. fencing
@pytest.mark.parametrize("error", [_E.FENCED_MEMBER_EPOCH, _E.UNKNOWN_MEMBER_ID])
def test_a_fenced_member_rejoins_with_epoch_zero_and_the_same_member_id(error):
    # SMMT testFencingWhenStateIsStable, testFencedMemberReleasesAssignmentAndTransitionsToJoining,
    # testMemberIdAndEpochResetOnFencedMembers (Kafka 4: the member id is kept); SHRMT
    # testHeartbeatResponseOnErrorHandling
    sim = ShareSim()
    a = sim.add_share("a")
    sim.run_until_joined("a")
    m = a.member
    member_id, epoch = m.member_id, m.member_epoch
    states = []
    m.membership.state_listener = lambda state, e: states.append((state, e))
    n = len(sim.heartbeats("a"))
    sim.fail_next(SGH, error, member="a")
    sim.advance(HB_MS + 10)
    assert sim.run(lambda: sim.joined("a") and len(sim.heartbeats("a")) > n + 1, max_ms=10_000), sim.describe()
    (t_fenced, fenced), (t_join, rejoin) = sim.heartbeats("a")[n:n + 2]
    assert fenced["member_epoch"] == epoch and t_join - t_fenced <= 2 * sim.latency   # at once, once answered
    assert (rejoin["member_epoch"], rejoin["member_id"], rejoin["subscribed_topic_names"]) == (0, member_id, ["t"])
    assert ("FENCED", 0) in states and states.index(("FENCED", 0)) < states.index(("JOINING", 0))
    assert m.member_id == member_id and m.member_epoch > 0 and m.assignment == {TP("t", 0)}
    sim.produce(2)
    assert sim.run(lambda: len(a.records) == 2, max_ms=5000)


def test_records_taken_before_a_fencing_are_still_acknowledged():
    # ShareMembershipManager has no revocation: a share-partition leader does not check membership, so the
    # acknowledgements of records taken before the member was fenced count (the session is the same)
    sim = ShareSim()
    sim.produce(3)
    a = sim.add_share("a", app=False)
    sim.run_until_joined("a")
    got = sim.poll_records("a")
    assert len(got) == 3
    n = len(sim.heartbeats("a"))
    sim.fail_next(SGH, _E.FENCED_MEMBER_EPOCH, member="a")
    sim.advance(HB_MS + 10)
    assert [b["member_epoch"] for _, b in sim.heartbeats("a")[n + 1:n + 2]] == [0]   # fenced, rejoined
    a.member.commit(sim.now)                            # implicit: the poll's records accepted
    assert sim.run(lambda: a.share_commits, max_ms=3000)
    assert a.share_commits[0].results == {TP("t", 0): (frozenset({0, 1, 2}), None)}
    assert sim.run(lambda: sim.joined("a"), max_ms=5000)
    assert sim.share_partition().start_offset == 3


@pytest.mark.parametrize("error", [_E.GROUP_AUTHORIZATION_FAILED, _E.GROUP_MAX_SIZE_REACHED, _E.INVALID_REQUEST])
def test_a_fatal_heartbeat_error_ends_the_member(error):
    # SHRMT testFailureOnFatalException; SMMT testFatalFailureWhenStateIsStable: the error reaches the
    # application (ErrorRaised, fatal), which gets it from its next call; nothing more is sent
    sim = ShareSim()
    a = sim.add_share("a")
    sim.run_until_joined("a")
    sim.fail_next(SGH, error, member="a")
    sim.advance(HB_MS + 10)
    [raised] = a.errors
    assert raised.fatal and raised.error.code == error
    m = a.member
    with pytest.raises(type(raised.error)):
        m.application_poll(sim.now)
    before = len(sim.bodies)
    sim.advance(5 * HB_MS)
    assert len(sim.bodies) == before


def test_topic_authorization_failed_is_reported_and_the_member_carries_on():
    # SHRMT testHeartbeatResponseOnErrorHandling (TOPIC_AUTHORIZATION_FAILED: an error event, not fatal)
    sim = ShareSim()
    a = sim.add_share("a")
    sim.run_until_joined("a")
    sim.fail_next(SGH, _E.TOPIC_AUTHORIZATION_FAILED, member="a")
    sim.advance(HB_MS + 10)
    [raised] = a.errors
    assert not raised.fatal and raised.error.code == _E.TOPIC_AUTHORIZATION_FAILED
    sim.produce(2)
    assert sim.run(lambda: len(a.records) == 2, max_ms=5000) and sim.joined("a")


# ================================================================================ 10. lost connections
def test_a_lost_connection_starts_the_share_session_over():
    # SCRMT testFetchDisconnected; ShareSessionHandler.handleError (nextCloseExistingAttemptNew): every
    # connection breaks (the harness's disconnect); the next ShareFetch opens a session at epoch 0 with every
    # partition and nothing to acknowledge, the epochs count up again, records keep coming
    sim = ShareSim({"t": 2})
    a = sim.add_share("a")
    sim.run_until_joined("a")
    sim.produce(2, 0)
    assert sim.run(lambda: len(a.records) == 2, max_ms=5000)
    sim.advance(1500)
    n = len(sim.sent("a", SHARE_FETCH))
    assert sim.sent("a", SHARE_FETCH)[-1]["share_session_epoch"] >= 2
    sim.disconnect("a")
    sim.advance(2000)
    reopened, *rest = sim.sent("a", SHARE_FETCH)[n:]
    assert reopened["share_session_epoch"] == 0 and partitions_of(reopened) == [0, 1]
    assert acked_offsets(reopened) == {}
    assert [f["share_session_epoch"] for f in rest] == list(range(1, len(rest) + 1))
    sim.produce(3, 1)
    assert sim.run(lambda: len(a.records) == 5, max_ms=5000)
    assert sim.joined("a")


def test_a_broken_leader_connection_fails_the_acknowledgements_of_the_old_session():
    # SCRMT testPiggybackAcknowledgementsOnInitialShareSessionError, testWhenLeadershipChangedAfterDisconnected;
    # SCT testLeaderRestartWithoutLeadershipChangeExplicitAcknowledgementSync: the leader's connection breaks
    # (the broker closes the session and releases the records); the acknowledgements of the old session
    # cannot go on the new one (epoch 0 carries none): they fail; the records come back, delivery count 2
    sim = ShareSim()
    sim.produce(3)
    a = sim.add_share("a", config={"share.acknowledgement.mode": "explicit"}, app=False)
    sim.run_until_joined("a")
    m = a.member
    got = sim.poll_records("a")
    at = sim.now
    sim.break_connection("a", ("broker", 0))
    assert {st for st, _, _ in sim.record_states().values()} == {RecordState.AVAILABLE}
    for r in got:
        m.acknowledge(r, ACCEPT)
    again = sim.poll_records("a")
    assert [(r.offset, r.delivery_count) for r in again] == [(0, 2), (1, 2), (2, 2)]
    assert sim.sent("a", SHARE_FETCH, at)[0]["share_session_epoch"] == 0
    assert all(not acked_offsets(b) for k in (SHARE_FETCH, SHARE_ACK) for b in sim.sent("a", k, at))
    [(tp, (offsets, error))] = [item for act in a.acks for item in act.results.items()]
    assert (tp, offsets) == (TP("t", 0), frozenset({0, 1, 2})) and error is not None
    assert sim.joined("a")                              # the coordinator's connection was not touched


def test_a_lost_connection_to_one_leader_restarts_only_that_leaders_session():
    # SCRMT testFetchDisconnected (one node), testShareFetchAndCloseMultipleNodes: sessions are per leader
    sim = ShareSim({"t": 2}, nodes=2)
    leader = {p: sim.service.cluster.leader_for("t", p) for p in range(2)}
    assert sorted(leader.values()) == [0, 1]
    a = sim.add_share("a")
    sim.run_until_joined("a")
    sim.advance(1500)
    counts = {n: len(sim.sent("a", SHARE_FETCH, node=n)) for n in (0, 1)}
    assert all(sim.sent("a", SHARE_FETCH, node=n)[-1]["share_session_epoch"] >= 2 for n in (0, 1))
    sim.break_connection("a", ("broker", leader[0]))
    sim.advance(1500)
    lost = sim.sent("a", SHARE_FETCH, node=leader[0])[counts[leader[0]]:]
    kept = sim.sent("a", SHARE_FETCH, node=leader[1])[counts[leader[1]]:]
    assert lost[0]["share_session_epoch"] == 0 and partitions_of(lost[0]) == [0]
    assert [f["share_session_epoch"] for f in lost] == list(range(len(lost)))
    assert 0 not in [f["share_session_epoch"] for f in kept] and partitions_of(kept[0]) == []
    sim.produce(2, 0)
    sim.produce(2, 1)
    assert sim.run(lambda: len(a.records) == 4, max_ms=5000)


# ================================================================================ 11. configuration
SHARE_UNSUPPORTED = {"auto.offset.reset": "earliest", "enable.auto.commit": False, "group.instance.id": "i",
                     "isolation.level": "read_committed", "partition.assignment.strategy": ["range"],
                     "session.timeout.ms": 45000, "heartbeat.interval.ms": 3000, "group.protocol": "consumer",
                     "group.remote.assignor": "uniform"}


@pytest.mark.parametrize("key", list(SHARE_UNSUPPORTED))
def test_a_share_consumer_refuses_the_configs_a_share_group_has_no_use_for(key):
    # ShareConsumerConfigTest testUnsupportedShareConsumerConfigs (ShareConsumerConfig.SHARE_GROUP_UNSUPPORTED_CONFIGS)
    with pytest.raises(ConfigError) as e:
        ShareConsumerConfig({"group.id": GROUP, key: SHARE_UNSUPPORTED[key]})
    assert e.value.reason == f"{key} cannot be set when using a share group."
    with pytest.raises(ConfigError):
        ShareMember({"group.id": GROUP, key: SHARE_UNSUPPORTED[key]})


def test_a_share_consumer_names_every_refused_config_in_kafkas_order():
    with pytest.raises(ConfigError) as e:
        ShareConsumerConfig({"group.id": GROUP, "group.protocol": "consumer", "auto.offset.reset": "latest",
                             "session.timeout.ms": 10000})
    assert e.value.reason == ("auto.offset.reset, session.timeout.ms, group.protocol cannot be set when using a "
                              "share group.")
    assert ShareConsumerConfig({"group.id": GROUP, "share.acknowledgement.mode": "explicit"})[
        "share.acknowledgement.mode"] == "explicit"
    with pytest.raises(ConfigError):
        ShareConsumerConfig({"client.id": "x"})            # group.id is required


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_consumer_refuses_the_share_acknowledgement_mode(protocol):
    # ConsumerConfig.CLASSIC_PROTOCOL_UNSUPPORTED_CONFIGS / CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS
    with pytest.raises(ConfigError) as e:
        ConsumerConfig({"group.id": GROUP, "group.protocol": protocol, "share.acknowledgement.mode": "explicit"})
    assert e.value.reason == f"share.acknowledgement.mode cannot be set when group.protocol={protocol.upper()}"


# ================================================================================ 12. the poll timer
def test_no_poll_within_max_poll_interval_leaves_and_the_next_poll_rejoins():
    # SHRMT testPollTimerExpiration; SMMT testStaleMemberDoesNotSendHeartbeatAndAllowsTransitionToJoiningToRecover,
    # testStaleMemberRejoinsWhenTimerResetsNoCallbacks: max.poll.interval.ms without a poll: a leave heartbeat
    # (epoch -1), nothing more while the application does not poll; its next poll rejoins (epoch 0, same id)
    sim = ShareSim()
    a = sim.add_share("a", config={"max.poll.interval.ms": 3000})
    sim.run_until_joined("a")
    m = a.member
    member_id = m.member_id
    sim.freeze("a")
    last_poll = m.membership.last_app_poll
    n = len(sim.heartbeats("a"))
    sim.advance(10_000)
    hbs = sim.heartbeats("a")[n:]
    t_leave, leave = hbs[-1]
    assert (t_leave, leave["member_epoch"], leave["member_id"]) == (last_poll + 3000, -1, member_id)
    assert all(b["member_epoch"] > 0 for _, b in hbs[:-1])
    assert member_id not in sim.share_group().members and m.assignment == frozenset()
    sim.thaw("a")
    at = sim.now
    sim.run_until_joined("a")
    t_join, rejoin = sim.heartbeats("a")[n + len(hbs)]
    assert (t_join, rejoin["member_epoch"], rejoin["member_id"], rejoin["subscribed_topic_names"]) == (
        at, 0, member_id, ["t"])
    sim.produce(2)
    assert sim.run(lambda: len(a.records) == 2, max_ms=5000)


# ================================================================================ the harness itself
def test_the_simulation_closes_a_member_with_a_closed_action():
    sim = ShareSim()
    a = sim.add_share("a")
    sim.run_until_joined("a")
    closed = []
    original = sim._execute

    def spy(sm, action):
        if isinstance(action, Closed):
            closed.append(sim.now)
        original(sm, action)
    sim._execute = spy
    a.member.close(sim.now)
    assert sim.run(lambda: a.closed, max_ms=5000)
    assert len(closed) == 1 and a.member.closed
    before = len(sim.bodies)
    sim.advance(5000)
    assert len(sim.bodies) == before


# ================================================================================ commits across requests
def test_a_commit_waits_for_every_acknowledgement_it_covers_even_when_they_go_in_two_requests():
    # acks of a partition no longer assigned go in a ShareAcknowledge, those of an assigned one with the
    # next ShareFetch: the commit's result names both (before: it completed on the first answer)
    sim = ShareSim({"t": 1, "u": 1})
    sim.produce(1, 0, "t")
    sim.produce(1, 0, "u")
    a = sim.add_share("a", topics=("t", "u"), app=False)
    sim.run_until_joined("a")
    m = a.member
    got = []
    while len(got) < 2:
        got += sim.poll_records("a")
    m.subscribe(["u"], sim.now)
    assert sim.run(lambda: m.assignment == {TP("u", 0)}, max_ms=5000)
    m.application_poll(sim.now)             # the batch settled: acks of t-0 and u-0 pending
    m.take_records(sim.now)                 # nothing buffered: a fetch is wanted
    m.commit(sim.now)
    assert sim.run(lambda: a.share_commits, max_ms=5000)
    assert a.share_commits[0].results == {TP("t", 0): (frozenset({0}), None), TP("u", 0): (frozenset({0}), None)}


def test_a_commit_completes_when_the_leader_moves_before_its_acknowledgements_go_out():
    sim = ShareSim({"t": 2}, nodes=2)
    old = sim.service.cluster.leader_for("t", 0)
    sim.produce(1, 0)
    a = sim.add_share("a", app=False)
    sim.run_until_joined("a")
    m = a.member
    assert [r.partition for r in sim.poll_records("a")] == [0]
    m.application_poll(sim.now)
    m.take_records(sim.now)
    m.commit(sim.now)
    m.metadata.leaders["t"][0] = 1 - old    # metadata says the partition moved before the acks went out
    assert sim.run(lambda: a.share_commits, max_ms=60_000)
    [(offsets, _)] = a.share_commits[0].results.values()
    assert offsets == frozenset({0})
