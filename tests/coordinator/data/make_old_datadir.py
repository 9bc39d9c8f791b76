"""Writes tests/coordinator/data/old-datadir/: a data dir written by the group coordinator of commit
755066c (before the coordinator/group/ refactor), and expected.json, what that code's live state
was right before it closed the store. A test of later code loads the dir and compares its own dump.

    python tests/coordinator/data/make_old_datadir.py [DIR]          # write DIR (then --check it)
    python tests/coordinator/data/make_old_datadir.py --check [DIR]  # load DIR, compare with expected.json

Run it with a venv whose ``groupcoord`` is the old code (it drives the in-process coordinator the
way tests/coordinator/test_consumer_group_durability.py does: a GroupCoordinator on a LogStore, the
metadata image a Cluster whose topics go to the same store). Everything is deterministic (virtual
clock, member ids from a counter, topic ids uuid5 of the name), so a rerun writes the same bytes.

Load-time dependent state is left out of the dump: members' ``joined_ms``, a consumer group's
``state_timestamp``, a simple group's ``current_state_timestamp`` (no group record: "now" at load)
and a resolved regex's ``version`` (the metadata version at resolution; -1 after a load).
"""
from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import sys
import uuid

from groupcoord.coordinator import storage as st
from groupcoord.coordinator.cluster import Cluster, Node
from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.group import consumer_classic
from groupcoord.coordinator.group.classic import ClassicGroup
from groupcoord.coordinator.group.consumer import ConsumerGroup, MemberState
from groupcoord.coordinator.group.consumer_manager import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.group.manager import (GroupCoordinator, HeartbeatRequest, JoinGroupRequest,
                                                  LeaveGroupRequest, SyncGroupRequest)
from groupcoord.coordinator.group.offsets import OffsetCommitRequest, OffsetDeleteRequest
from groupcoord.coordinator.timer import Timers
from groupcoord.protocol import consumer as cp

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DIR = os.path.join(HERE, "old-datadir")
# what the durability tests' Harness uses (offsets.topic.num.partitions: the default, 50)
CONFIG = {"group.initial.rebalance.delay.ms": 0, "group.consumer.heartbeat.interval.ms": 5000}
T0 = 1_750_000_000_000          # the virtual clock's start (ms)
TOPICS = {"foo": 6, "bar": 3, "orders": 4}
ABSENT = ["classic-deleted", "cg-deleted", "simple-expired"]   # deleted while writing: tombstones only
README = """# old-datadir: a data dir written by the old group coordinator

Written by commit 755066c (before the coordinator/group/ refactor) with
`python tests/coordinator/data/make_old_datadir.py` run in a venv whose groupcoord is that commit
(config: `group.initial.rebalance.delay.ms=0`, `group.consumer.heartbeat.interval.ms=5000`,
default `offsets.topic.num.partitions` 50; virtual clock from 1750000000000 ms; deterministic bytes).
Holds `__consumer_offsets-<p>.log` files, `__cluster_metadata.log` (topics foo:6, bar:3, orders:4,
ids uuid5(NAMESPACE_OID, name)) and `expected.json`: the old code's live state before it closed the store.
Groups: classic-stable (2 members, one static), classic-empty (offsets: metadata, leader epoch, expire
timestamp), simple-offsets (offsets only), cg-stable, cg-reconciling (UNREVOKED + UNRELEASED members),
cg-regex (resolved `fo.*`), cg-static (a member at epoch -2), cg-mixed (a classic-protocol member);
tombstones only: classic-deleted, cg-deleted, simple-expired, and a deleted and an expired offset.
`--check` loads a copy with the old code and compares; load-time dependent fields are left out (see expected.json).
"""


def topic_id(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_OID, name)


# ============================================================================ the dump
def _b(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(bytes(data)).decode()


def _epoched(parts: dict) -> dict:
    """{topic id: {partition: epoch}} -> {"<uuid>": [[partition, epoch], ...]} (sorted)."""
    return {str(t): sorted([p, e] for p, e in ps.items()) for t, ps in sorted(parts.items(), key=lambda kv: str(kv[0]))
            if ps}


def _partitions(parts: dict) -> dict:
    """{topic id: partitions} -> {"<uuid>": [partitions sorted]}."""
    return {str(t): sorted(ps) for t, ps in sorted(parts.items(), key=lambda kv: str(kv[0])) if ps}


def _offsets(group) -> list:
    out = []
    for topic, parts in group.offsets.items():
        for partition, o in parts.items():
            out.append({"topic": topic, "partition": partition, "offset": o.committed_offset,
                        "leader_epoch": o.leader_epoch, "metadata": o.metadata,
                        "commit_timestamp": o.commit_timestamp, "expire_timestamp": o.expire_timestamp})
    return sorted(out, key=lambda o: (o["topic"], o["partition"]))


def dump_classic(g: ClassicGroup) -> dict:
    protocol = g.protocol_name
    return {
        "type": "classic", "state": g.state, "generation": g.generation_id, "protocol_type": g.protocol_type,
        "protocol": protocol, "leader": g.leader_id,
        # a simple group (offsets only) has no group record: its state timestamp is "now" at load
        "current_state_timestamp": g.current_state_timestamp if g.protocol_type is not None else None,
        "static_members": dict(sorted(g.static_members.items())),
        "subscribed_topics": None if g.subscribed_topics is None else sorted(g.subscribed_topics),
        # in the group's order (the leader's member list and re-election follow it; the record keeps it)
        "members": [{"member_id": m.member_id, "instance_id": m.group_instance_id, "client_id": m.client_id,
                     "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
                     "session_timeout_ms": m.session_timeout_ms, "protocol_type": m.protocol_type,
                     # the selected protocol's metadata, as the record keeps it (only that protocol comes back)
                     "metadata": _b(m.metadata(protocol)) if protocol is not None else None,
                     "assignment": _b(m.assignment)}
                    for m in g.members.values()],
        "offsets": _offsets(g),
    }


def dump_consumer(g: ConsumerGroup) -> dict:
    members = {}
    for m in g.members.values():
        members[m.member_id] = {
            "member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
            "client_id": m.client_id, "client_host": m.client_host,
            "member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
            "state": m.state.value, "rebalance_timeout_ms": m.rebalance_timeout_ms,
            # sorted: the old code's live member keeps the request's order, its loaded one is sorted
            "subscribed_topic_names": sorted(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex, "server_assignor": m.server_assignor,
            "assigned": _epoched(m.assigned), "pending_revocation": _epoched(m.pending_revocation),
            "target": _partitions(g.target.get(m.member_id, {})),
            "classic": None if m.classic is None else {
                "session_timeout_ms": m.classic.session_timeout_ms,
                "protocols": [[name, _b(data)] for name, data in m.classic.protocols]},
        }
    return {
        "type": "consumer", "state": g.state, "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch,
        "members": dict(sorted(members.items())),
        "static_members": dict(sorted(g.static_members.items())),
        # the group's target, also for ids that are no member (none expected)
        "target": {mid: _partitions(t) for mid, t in sorted(g.target.items())},
        "partition_epochs": _epoched(g.partition_epochs),
        "subscription_metadata": {name: {"topic_id": str(i.topic_id), "partitions": i.partitions}
                                  for name, i in sorted(g.subscription_metadata.items())},
        "subscribed_regexes": dict(sorted(g.subscribed_regexes.items())),
        # version left out: load-time dependent (-1 after a load)
        "resolved_regexes": {regex: {"topics": sorted(r.topics), "timestamp_ms": r.timestamp_ms}
                             for regex, r in sorted(g.resolved_regexes.items())},
        "offsets": _offsets(g),
    }


def dump(gc: GroupCoordinator) -> dict:
    """Every group of the coordinator (classic and consumer), by group id."""
    groups = {g.group_id: dump_classic(g) for g in gc.groups()}
    for g in gc.consumer_groups():
        assert g.group_id not in groups
        groups[g.group_id] = dump_consumer(g)
    return dict(sorted(groups.items()))


def _key(key) -> list:
    """A log record's key in a neutral JSON shape."""
    if isinstance(key, st.OffsetCommitKey):
        return ["offset_commit", key.group, key.topic, key.partition]
    if isinstance(key, st.GroupMetadataKey):
        return ["group_metadata", key.group]
    if isinstance(key, st.ConsumerGroupKey):
        return ["consumer_group_record", key.kind, key.group, key.name]
    if isinstance(key, st.TopicKey):
        return ["topic", key.name]
    return ["end_offset", str(key.topic_id), key.partition]


def log_summary(directory: str) -> dict:
    """Per log file: how many records, and the keys whose last record is a tombstone (what must stay
    deleted; consumer group record kinds: 3 epoch, 5 member, 6 target epoch, 7 member target,
    8 current assignment, 16 regex)."""
    out = {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".log"):
            continue
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
        decode = st.decode_metadata_payload if name == "__cluster_metadata.log" else st.decode_payload
        frames, _, why = st.read_frames(data, decode)
        assert why is None, (name, why)
        last = {}
        for key, value, _, _ in frames:
            last[json.dumps(_key(key))] = value is None
        out[name] = {"records": len(frames), "tombstoned": [json.loads(k) for k, dead in sorted(last.items()) if dead]}
    return out


# ============================================================================ the driver
class Driver:
    """A GroupCoordinator on a LogStore, its metadata image a Cluster writing its topics to the store."""

    def __init__(self, directory: str, now: int, *, create_topics: bool) -> None:
        self.config = BrokerConfig(dict(CONFIG), environ={})
        self.now = now
        self.timers = Timers()
        self.events: list[dict] = []
        seq = itertools.count(1)
        self.store = st.LogStore(directory)
        self.gc = GroupCoordinator(self.config, self.timers, lambda: self.now, emit=self.events.append,
                                   member_id_factory=lambda prefix: f"{prefix}-{next(seq)}", store=self.store)
        self.cluster = Cluster([Node(0, "localhost", 9092)], topic_id_factory=topic_id)
        state = self.store.load_topics()
        self.cluster.restore_topics(state.topics, state.end_offsets)      # as Service._restore_topics
        self.cluster.store = self.store
        if create_topics:
            for name, n in TOPICS.items():
                self.cluster.create_topic(name, n)
        self.gc.consumer.image = self.cluster
        self.cluster.topic_listeners.append(self.gc.consumer.topics_changed)

    def load(self) -> None:
        """As Service.loader: every partition loading, then each completed with its records."""
        for p in self.store.partitions():
            self.gc.begin_loading(p)
        for p in self.store.partitions():
            self.gc.complete_loading(p, self.store.load(p))

    def advance(self, ms: int = 100) -> None:
        self.now += ms
        self.timers.advance(self.now)

    # ---- classic requests ----
    def join(self, group_id, member_id="", *, topics, instance_id=None, client_id="client", session=45000,
             rebalance=30000, protocols=None) -> list:
        out = []
        protocols = protocols or [("range", subscription(topics))]
        self.gc.join_group(out.append, JoinGroupRequest(
            group_id=group_id, session_timeout_ms=session, protocol_type="consumer", protocols=protocols,
            member_id=member_id, group_instance_id=instance_id, client_id=client_id, client_host="/10.0.0.1",
            rebalance_timeout_ms=rebalance))
        return out

    def sync(self, group_id, member_id, generation, *, instance_id=None, assignments=()) -> list:
        out = []
        self.gc.sync_group(out.append, SyncGroupRequest(group_id, generation, member_id, instance_id, "consumer",
                                                        "range", list(assignments)))
        return out

    def heartbeat(self, group_id, member_id, generation, instance_id=None) -> int:
        out = []
        self.gc.heartbeat(out.append, HeartbeatRequest(group_id, generation, member_id, instance_id))
        return out[0]["error_code"]

    def leave(self, group_id, *members) -> dict:
        out = []
        self.gc.leave_group(out.append, LeaveGroupRequest(group_id, list(members)))
        return out[0]

    def commit(self, group_id, offsets, *, member_id="", generation=-1, instance_id=None, retention=-1,
               v9=True) -> list:
        """offsets: [(topic, partition, offset, leader_epoch, metadata, commit_timestamp)]"""
        topics: dict[str, list] = {}
        for t, p, o, epoch, metadata, ts in offsets:
            topics.setdefault(t, []).append({"partition_index": p, "committed_offset": o,
                                             "committed_leader_epoch": epoch, "committed_metadata": metadata,
                                             "commit_timestamp": ts})
        out = []
        self.gc.offset_commit(out.append, OffsetCommitRequest(
            group_id, [{"name": t, "partitions": ps} for t, ps in topics.items()], generation, member_id,
            instance_id, retention, group_id_not_found=v9))
        codes = [p["error_code"] for t in out[0]["topics"] for p in t["partitions"]]
        assert codes == [0] * len(codes), (group_id, out)
        return out

    # ---- consumer group heartbeat ----
    def hb(self, group_id, member_id, epoch, *, topics=None, owned=None, instance_id=None, assignor=None,
           regex=None) -> dict:
        joining = epoch == 0
        req = ConsumerGroupHeartbeatRequest(
            group_id=group_id, member_id=member_id, member_epoch=epoch, instance_id=instance_id,
            rack_id="rack-a" if instance_id else None, rebalance_timeout_ms=30000 if joining else -1,
            subscribed_topic_names=topics, subscribed_topic_regex=regex, server_assignor=assignor,
            topic_partitions=([] if joining and owned is None else
                              None if owned is None else [(topic_id(t), ps) for t, ps in owned.items()]),
            client_id=f"client-{member_id}", client_host="/10.0.0.2", version=1)
        assert req.error(self.gc.consumer.assignors) is None
        out = []
        self.gc.consumer_group_heartbeat(out.append, req)
        assert out[0]["error_code"] == 0, (group_id, member_id, out)
        return out[0]


def subscription(topics, owned=None) -> bytes:
    return cp.encode_subscription({"topics": list(topics), "user_data": None, "owned_partitions": [
        {"topic": t, "partitions": ps} for t, ps in (owned or {}).items()], "generation_id": -1, "rack_id": None}, 3)


def assignment(parts: dict) -> bytes:
    return cp.encode_assignment({"assigned_partitions": [{"topic": t, "partitions": ps} for t, ps in parts.items()],
                                 "user_data": None}, 3)


# ============================================================================ the scenario
def write(directory: str) -> dict:
    d = Driver(directory, T0, create_topics=True)
    gc = d.gc

    # 1. classic-stable: two members (one static), Stable, assignments, offsets
    g = "classic-stable"
    first = d.join(g, topics=["orders"], client_id="c-dyn")
    assert first[0]["error_code"] == 79
    dyn_call = d.join(g, first[0]["member_id"], topics=["orders"], client_id="c-dyn")
    static_call = d.join(g, topics=["orders"], instance_id="instance-a", client_id="c-static")
    d.advance(0)
    assert dyn_call and static_call, (dyn_call, static_call)
    dyn, stat = dyn_call[0]["member_id"], static_call[0]["member_id"]
    generation = dyn_call[0]["generation_id"]
    leader = dyn_call[0]["leader"]
    follower = stat if leader == dyn else dyn
    f_sync = d.sync(g, follower, generation, instance_id="instance-a" if follower == stat else None)
    l_sync = d.sync(g, leader, generation, instance_id="instance-a" if leader == stat else None, assignments=[
        (dyn, assignment({"orders": [0, 1]})), (stat, assignment({"orders": [2, 3]}))])
    assert l_sync[0]["error_code"] == 0 and f_sync[0]["error_code"] == 0
    assert gc.group(g).state == "Stable"
    d.advance()
    d.commit(g, [("orders", 0, 100, 3, "", -1), ("orders", 1, 101, 3, "", -1)], member_id=dyn, generation=generation)
    d.commit(g, [("orders", 2, 200, -1, "s", -1)], member_id=stat, generation=generation, instance_id="instance-a")
    d.advance()

    # 2. classic-empty: a member came and left (Empty, generation 2); offsets of every kind; one deleted,
    #    one expired (tombstones)
    g = "classic-empty"
    first = d.join(g, topics=["orders", "bar"], client_id="c-gone")
    call = d.join(g, first[0]["member_id"], topics=["orders", "bar"], client_id="c-gone")
    d.advance(0)
    mid = call[0]["member_id"]
    assert d.sync(g, mid, 1, assignments=[(mid, assignment({"bar": [0, 1, 2], "orders": [0, 1, 2, 3]}))])[0][
        "error_code"] == 0
    d.advance()
    d.commit(g, [("orders", 0, 10, -1, "", -1)], member_id=mid, generation=1)
    d.advance()
    assert d.leave(g, (mid, None, "bye"))["members"][0]["error_code"] == 0
    assert gc.group(g).state == "Empty"
    d.advance()
    d.commit(g, [("orders", 1, 42, 7, "checkpoint-7", -1),                 # metadata and leader epoch
                 ("orders", 2, 43, 7, "with explicit commit time", T0 - 5000),
                 ("bar", 0, 5, -1, "", -1), ("bar", 1, 6, -1, "", -1)])
    d.advance()
    d.commit(g, [("bar", 2, 7, 2, "kept until", -1)], retention=3_600_000)  # v2-4 retention: an expire timestamp
    d.commit(g, [("orders", 3, 44, -1, "expires soon", -1)], retention=50)
    d.advance()
    out = []
    gc.offset_delete(out.append, OffsetDeleteRequest(g, [{"name": "bar", "partitions": [{"partition_index": 1}]}]))
    assert out[0]["error_code"] == 0 and out[0]["topics"][0]["partitions"][0]["error_code"] == 0
    d.advance()

    # 3. simple-offsets: offsets only (no group record, protocol type None); simple-expired: gone by retention
    d.commit("simple-offsets", [("foo", 0, 1000, 4, "simple", -1), ("foo", 5, 1005, -1, "", -1)])
    d.commit("simple-expired", [("foo", 1, 1, -1, "", -1)], retention=50)
    d.advance()
    assert gc.cleanup_group_metadata() == (2, 1)       # classic-empty's orders-3, simple-expired's foo-1 (and group)
    assert gc.group("simple-expired") is None and ("orders" in gc.group("classic-empty").offsets)
    d.advance()

    # 4. classic-deleted: a group with offsets, emptied, deleted (tombstones)
    g = "classic-deleted"
    first = d.join(g, topics=["orders"], client_id="c-del")
    call = d.join(g, first[0]["member_id"], topics=["orders"], client_id="c-del")
    d.advance(0)
    mid = call[0]["member_id"]
    assert d.sync(g, mid, 1, assignments=[(mid, assignment({"orders": [0, 1, 2, 3]}))])[0]["error_code"] == 0
    d.commit(g, [("orders", 0, 9, -1, "", -1)], member_id=mid, generation=1)
    d.leave(g, (mid, None, None))
    out = []
    gc.delete_groups(out.append, group_ids=[g])
    assert out[0]["results"][0]["error_code"] == 0
    d.advance()

    # 5. cg-stable: consumer group, two members Stable, offsets with member epochs
    g = "cg-stable"
    d.hb(g, "s1", 0, topics=["bar", "foo"])
    d.advance()
    d.hb(g, "s2", 0, topics=["foo"], assignor="range")
    d.advance()
    for _ in range(4):
        for m in ("s1", "s2"):
            member = gc.consumer_group(g).members[m]
            d.hb(g, m, member.member_epoch, owned=_owned_now(gc, g, m))
            d.advance()
    cg = gc.consumer_group(g)
    assert cg.state == "Stable", cg.state
    e1, e2 = cg.members["s1"].member_epoch, cg.members["s2"].member_epoch
    d.commit(g, [("foo", 0, 500, 1, "", -1), ("bar", 0, 50, -1, "by s1", -1)], member_id="s1", generation=e1)
    d.commit(g, [("foo", 3, 530, 1, "", -1)], member_id="s2", generation=e2)
    d.advance()

    # 6. cg-reconciling: two members Stable, a third joins: one revoking (UNREVOKED_PARTITIONS), one
    #    waiting (UNRELEASED_PARTITIONS)
    g = "cg-reconciling"
    d.hb(g, "r1", 0, topics=["foo"])
    d.advance()
    d.hb(g, "r1", 1, owned={})
    d.advance()
    d.hb(g, "r2", 0, topics=["foo"])
    d.advance()
    cg = gc.consumer_group(g)
    d.hb(g, "r1", cg.members["r1"].member_epoch, owned=_owned_now(gc, g, "r1"))   # revokes: pending
    d.advance()
    for _ in range(3):
        for m in ("r1", "r2"):
            d.hb(g, m, gc.consumer_group(g).members[m].member_epoch, owned=_owned_now(gc, g, m))
            d.advance()
    assert gc.consumer_group(g).state == "Stable", gc.consumer_group(g).state
    d.commit(g, [("foo", 1, 77, -1, "", -1)], member_id="r1", generation=gc.consumer_group(g).members["r1"].member_epoch)
    d.hb(g, "r3", 0, topics=["foo"])                    # a third member: a new target
    d.advance()
    d.hb(g, "r1", gc.consumer_group(g).members["r1"].member_epoch, owned=_owned_now(gc, g, "r1"))
    d.advance()
    d.hb(g, "r3", gc.consumer_group(g).members["r3"].member_epoch, owned={})
    d.advance()
    cg = gc.consumer_group(g)
    states = {m.member_id: m.state for m in cg.members.values()}
    assert states["r1"] is MemberState.UNREVOKED_PARTITIONS and cg.members["r1"].pending_revocation, states
    assert MemberState.UNRELEASED_PARTITIONS in states.values(), states
    assert cg.state == "Reconciling"

    # 7. cg-regex: a regex subscriber (resolved) and a subscriber by name
    g = "cg-regex"
    d.hb(g, "x1", 0, regex="fo.*")
    d.advance()
    r = d.hb(g, "x1", 1)                              # resolved after the first heartbeat: epoch 2
    assert r["member_epoch"] == 2, r
    d.advance()
    d.hb(g, "x2", 0, topics=["bar"])
    d.advance()
    for _ in range(3):
        for m in ("x1", "x2"):
            d.hb(g, m, gc.consumer_group(g).members[m].member_epoch, owned=_owned_now(gc, g, m))
            d.advance()
    assert gc.consumer_group(g).resolved_regexes["fo.*"].topics == frozenset({"foo"})

    # 8. cg-static: a static member Stable, and a static member gone for now (epoch -2)
    g = "cg-static"
    d.hb(g, "st1", 0, topics=["bar"], instance_id="inst-1")
    d.advance()
    d.hb(g, "st2", 0, topics=["bar"], instance_id="inst-2")
    d.advance()
    for _ in range(3):
        for m, i in (("st1", "inst-1"), ("st2", "inst-2")):
            d.hb(g, m, gc.consumer_group(g).members[m].member_epoch, owned=_owned_now(gc, g, m), instance_id=i)
            d.advance()
    d.commit(g, [("bar", 0, 3, -1, "", -1)], member_id="st1", generation=gc.consumer_group(g).members["st1"].member_epoch)
    d.hb(g, "st2", -2, instance_id="inst-2")            # leaves for now: keeps its place, epoch -2
    d.advance()
    assert gc.consumer_group(g).members["st2"].member_epoch == -2

    # 9. cg-mixed: a consumer group with a member of the classic protocol
    g = "cg-mixed"
    d.hb(g, "k1", 0, topics=["foo", "orders"])
    d.advance()
    d.hb(g, "k1", 1, owned={})
    d.advance()
    first = d.join(g, topics=["orders"], client_id="c-classic", session=30000)
    assert first[0]["error_code"] == 79, first
    call = d.join(g, first[0]["member_id"], topics=["orders"], client_id="c-classic", session=30000)
    assert call[0]["error_code"] == 0, call
    c1 = call[0]["member_id"]
    d.advance()
    assert d.sync(g, c1, call[0]["generation_id"])[0]["error_code"] == 0
    d.advance()
    d.hb(g, "k1", gc.consumer_group(g).members["k1"].member_epoch, owned=_owned_now(gc, g, "k1"))
    d.advance()
    d.commit(g, [("orders", 0, 12, -1, "classic member", -1)], member_id=c1,
             generation=gc.consumer_group(g).members[c1].member_epoch)
    assert gc.consumer_group(g).members[c1].classic is not None

    # 10. cg-deleted: a consumer group with offsets, emptied and deleted (tombstones of its records)
    g = "cg-deleted"
    d.hb(g, "d1", 0, topics=["bar"])
    d.advance()
    d.commit(g, [("bar", 1, 8, -1, "", -1)], member_id="d1", generation=1)
    d.hb(g, "d1", -1)
    out = []
    gc.delete_groups(out.append, group_ids=[g])
    assert out[0]["results"][0]["error_code"] == 0
    d.advance()

    for g in ABSENT:
        assert g not in gc, g
    expected = {
        "written_by": "groupcoord commit 755066c (tests/coordinator/data/make_old_datadir.py)",
        "config": CONFIG, "offsets_topic_partitions": gc.num_offsets_partitions,
        "written_at_ms": d.now,
        "load_dependent_fields_left_out": [
            "classic and consumer members' joined_ms (now at load)",
            "ConsumerGroup.state_timestamp (now at load)",
            "a simple group's current_state_timestamp (no group record: now at load; dumped as null)",
            "ResolvedRegularExpression.version (metadata version at resolution; -1 after a load)"],
        "absent_groups": ABSENT,
        "topics": {name: {"topic_id": str(t.topic_id), "partitions": t.partition_count}
                   for name, t in sorted(d.cluster.topics.items())},
        "groups": dump(gc),
    }
    d.store.close()
    expected["logs"] = log_summary(directory)
    return expected


def _owned_now(gc, group_id, member_id) -> dict:
    """What a well-behaved member owns after its last response: its assigned partitions (by name)."""
    m = gc.consumer_group(group_id).members[member_id]
    names = {topic_id(n): n for n in TOPICS}
    return {names[t]: sorted(ps) for t, ps in m.assigned.items()}


def check(directory: str, now: int | None = None) -> dict:
    """Load the dir in a fresh coordinator (as the service does) and compare its dump with expected.json."""
    with open(os.path.join(directory, "expected.json")) as f:
        expected = json.load(f)
    scratch = directory.rstrip("/") + ".check"
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(directory, scratch)                 # loading may rewrite (repair, compact): not the fixture
    try:
        d = Driver(scratch, expected["written_at_ms"] if now is None else now, create_topics=False)
        d.load()
        got = json.loads(json.dumps(dump(d.gc)))
        for g in expected["absent_groups"]:
            assert g not in d.gc, g
        d.store.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if got != expected["groups"]:
        for gid in sorted(set(got) | set(expected["groups"])):
            if got.get(gid) != expected["groups"].get(gid):
                print(f"DIFF {gid}:\n  expected {json.dumps(expected['groups'].get(gid), sort_keys=True)}\n"
                      f"  loaded   {json.dumps(got.get(gid), sort_keys=True)}")
        raise SystemExit("loaded state differs from expected.json")
    return got


def main(argv: list[str]) -> None:
    checking = "--check" in argv
    args = [a for a in argv if a != "--check"]
    directory = os.path.abspath(args[0] if args else DEFAULT_DIR)
    if not checking:
        # a new member id of the classic protocol in a consumer group is random in the old code
        ids = itertools.count(1)
        consumer_classic.new_member_id = lambda: f"classic-member-{next(ids)}"
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        expected = write(directory)
        with open(os.path.join(directory, "expected.json"), "w") as f:
            json.dump(expected, f, indent=1, sort_keys=True)
            f.write("\n")
        with open(os.path.join(directory, "README.md"), "w") as f:
            f.write(README)
        print(f"wrote {directory}: {len(expected['groups'])} groups")
    check(directory)
    check(directory, now=T0 + 3_600_000)                # loaded an hour later: the same dump
    print(f"checked {directory}: loading it gives expected.json")


if __name__ == "__main__":
    main(sys.argv[1:])
