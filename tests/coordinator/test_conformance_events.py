"""Structured events: schema, sequences, durations, default structlog emit; plus a scale check."""
from __future__ import annotations

import time

import pytest
import structlog

from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.events import BASE_FIELDS, EVENT_FIELDS, EVENT_TYPES, check_event
from groupcoord.coordinator.group.offsets import TxnOffsetCommitRequest
from groupcoord.coordinator.group.runtime import GroupCoordinator, HeartbeatRequest, JoinGroupRequest, SyncGroupRequest
from groupcoord.coordinator.group.offsets import OffsetCommitRequest
from groupcoord.coordinator.timer import Timers

GROUP = "group-id"


def test_schema_tables_agree():
    assert set(EVENT_FIELDS) == set(EVENT_TYPES)
    for kind, td in EVENT_TYPES.items():
        assert set(td.__annotations__) | set(BASE_FIELDS) == set(BASE_FIELDS) | set(EVENT_FIELDS[kind]), kind
    with pytest.raises(ValueError):
        check_event({"event": "nope"})
    with pytest.raises(ValueError):
        check_event({"event": "offsets.expired", "v": 1})


def test_lifecycle_sequence_and_durations(make_harness):
    h = make_harness(group_initial_rebalance_delay_ms=3000)
    a = h.join_new(client_id="a")               # t=0
    h.run_until(1000)
    b = h.join_new(client_id="b")               # extends the initial delay once
    h.run_until(3000)
    h.run_until(6000)
    leader, follower = a.result["member_id"], b.result["member_id"]
    h.run_until(6500)
    h.sync(member_id=follower, generation=1)
    h.run_until(7000)
    h.sync(member_id=leader, generation=1, assignments=[(leader, b"A"), (follower, b"B")])
    kinds = [e["event"] for e in h.events]
    assert kinds == ["group.created", "member.pending", "member.joined", "group.state_change", "rebalance.started",
                     "member.pending", "member.joined", "group.state_change", "rebalance.join_completed",
                     "group.state_change", "group.sync_completed", "rebalance.completed"]
    started = h.events_of("rebalance.started")[0]
    assert (started["initial"], started["delay_ms"], started["round"], started["reason"], started["member"]) == \
        (True, 3000, 1, "new_member", leader)
    joined = h.events_of("rebalance.join_completed")[0]
    assert (joined["duration_ms"], joined["generation"], joined["protocol"], joined["leader"], joined["state_to"]) == \
        (6000, 1, "range", leader, "CompletingRebalance")
    synced = h.events_of("group.sync_completed")[0]
    assert (synced["duration_ms"], synced["empty_assignments"]) == (1000, 0)
    done = h.events_of("rebalance.completed")[0]
    assert (done["outcome"], done["duration_ms"], done["rounds"], done["ts_ms"]) == ("Stable", 7000, 1, 7000)
    changes = [(e["state_from"], e["state_to"], e["duration_ms"]) for e in h.events_of("group.state_change")]
    assert changes == [("Empty", "PreparingRebalance", 0), ("PreparingRebalance", "CompletingRebalance", 6000),
                       ("CompletingRebalance", "Stable", 1000)]
    member = h.events_of("member.joined")[1]
    assert (member["member"], member["client_id"], member["protocols"], member["leader"], member["members"]) == \
        (follower, "b", ["range"], False, 2)


def test_interrupted_sync_counts_rounds(h, sub):
    calls = [h.join_new(client_id=f"c{i}") for i in range(2)]
    h.advance(0)
    h.run_until(100)
    h.join(member_id=calls[1].result["member_id"], client_id="c1", protocols=[("range", sub(["bar"]))])
    h.join(member_id=calls[0].result["member_id"], client_id="c0")
    leader = calls[0].result["member_id"]
    h.run_until(300)
    h.sync(member_id=leader, generation=2, assignments=[])
    starts = h.events_of("rebalance.started")
    assert [(s["round"], s["state_from"]) for s in starts] == [(1, "Empty"), (2, "CompletingRebalance")]
    done, = h.events_of("rebalance.completed")
    assert (done["rounds"], done["duration_ms"], done["generation"]) == (2, 300, 2)
    assert h.events_of("group.sync_completed")[0]["empty_assignments"] == 2


def test_every_event_type_is_emitted_somewhere(make_harness):
    h = make_harness(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    leader, follower = h.stable_group(2, session=10000)
    h.commit(member_id=leader, generation=1, offsets={("foo", 0): 1, ("other", 0): 1})
    h.delete_offsets(GROUP, [{"name": "other", "partitions": [{"partition_index": 0}]}])
    h.leave(GROUP, {"member_id": follower})                 # member.left, leader stays
    h.join(member_id=leader)
    h.sync(member_id=leader, generation=2, assignments=[])
    h.join(instance_id="s")                                 # a static joiner -> rebalance
    h.join(member_id=leader)
    h.sync(member_id=leader, generation=3, assignments=[])
    h.join(instance_id="s")                                 # static replacement: member.replaced
    h.leave(GROUP, {"member_id": leader})                   # leader_changed
    h.run_until(20000)                                      # sessions expire -> Empty
    h.commit("simple", offsets={("foo", 0): 1})
    h.gc.delete_groups(lambda r: None, group_ids=["simple"])
    h.commit("simple2", offsets={("foo", 0): 1})
    for commit in (True, False):                            # transactional offsets (KIP-447), committed, aborted
        txn = TxnOffsetCommitRequest("tx", "txn", 7, 0, [{"name": "foo", "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1, "committed_metadata": ""}]}])
        h.gc.txn_offset_commit(lambda r: None, txn)
        h.gc.complete_transaction(h.gc.partition_of("txn"), 7, 0, commit)
    h.run_until(200000)                                     # offsets expire, groups deleted
    h.join("g2", client_id="p")                             # pending member that never comes back
    h.run_until(h.now + 10000)
    h.join("g3", version=3, session=30000, rebalance=20000)  # joins, never syncs: sync timeout
    h.advance(0)
    h.run_until(h.now + 20000)
    # (the consumer groups' own events: test_conformance_consumer_group.py; the share groups':
    # test_conformance_share_group.py)
    assert {e["event"] for e in h.events} == {kind for kind in EVENT_FIELDS
                                              if not kind.startswith(("consumer.", "share."))}


def test_static_rejoin_with_empty_member_id_is_rejected_when_group_is_full(make_harness):
    # J's acceptJoiningMember counts the empty member id as a new member, even for a known instance
    h = make_harness(group_max_size=1)
    first = h.join(instance_id="s")
    h.advance(0)
    mid = first.result["member_id"]
    h.sync(member_id=mid, generation=1, instance_id="s", assignments=[(mid, b"x")])
    assert h.join(instance_id="s").error == 81
    assert h.group().static_members == {"s": mid}


def test_member_removed_for_group_max_size(make_harness):
    from groupcoord.coordinator.group.classic.group import Member
    h = make_harness(group_max_size=1, group_initial_rebalance_delay_ms=1000)
    h.join(version=3)
    g = h.group()
    g.add(Member("extra", None, "c", "/h", 30000, 10000, "consumer", [("range", b"")]))
    call = h.join(member_id="extra")          # not parked and over the limit: removed
    assert call.result == {"throttle_time_ms": 0, "error_code": 81, "generation_id": -1, "protocol_type": None,
                           "protocol_name": None, "leader": "", "skip_assignment": False, "member_id": "",
                           "members": []}
    removed = h.events_of("member.removed")[-1]
    assert (removed["member"], removed["reason"]) == ("extra", "group_max_size")


def test_offset_commit_events_can_be_disabled(sub):
    events = []
    gc = GroupCoordinator(BrokerConfig(environ={}), Timers(), lambda: 0, emit=events.append,
                          emit_offset_commits=False)
    gc.offset_commit(lambda r: None, OffsetCommitRequest("g", [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 1, "committed_metadata": None}]}]))
    assert [e["event"] for e in events] == ["group.created"]


def test_default_emit_logs_through_structlog(sub):
    gc = GroupCoordinator(BrokerConfig({"group.initial.rebalance.delay.ms": 0}, environ={}), Timers(), lambda: 5)
    with structlog.testing.capture_logs() as logs:
        gc.join_group(lambda r: None, JoinGroupRequest(group_id="g", session_timeout_ms=10000, protocol_type="consumer",
                      protocols=[("range", sub(["foo"]))], client_id="c"))
    assert [log["event"] for log in logs] == ["group.created", "member.pending"]
    assert logs[1]["member"] == "c-" + logs[1]["member"][2:] and logs[1]["ts_ms"] == 5
    assert logs[0]["log_level"] == "info" and logs[1]["log_level"] == "debug"   # member.pending: per request


def test_respond_callbacks_may_reenter_the_coordinator(h):
    """A driver that answers synchronously (e.g. sends SyncGroup from the JoinGroup callback)."""
    log = []

    def on_join(resp):
        log.append(("join", resp["member_id"], h.state()))
        h.gc.sync_group(lambda r: log.append(("sync", resp["member_id"], r["error_code"])), SyncGroupRequest(
            group_id=GROUP, generation_id=resp["generation_id"], member_id=resp["member_id"],
            assignments=[(m["member_id"], b"x") for m in resp["members"]]))

    for client in ("a", "b"):
        first = []
        h.gc.join_group(first.append, JoinGroupRequest(group_id=GROUP, client_id=client, session_timeout_ms=10000,
                        protocol_type="consumer", protocols=[("range", b"")]))
        h.gc.join_group(on_join, JoinGroupRequest(group_id=GROUP, member_id=first[0]["member_id"], client_id=client,
                        session_timeout_ms=10000, protocol_type="consumer", protocols=[("range", b"")]))
    h.advance(0)
    # responses go out in the order they were produced, after each state change is complete
    assert log == [("join", "a-1", "CompletingRebalance"), ("join", "b-2", "Stable"), ("sync", "a-1", 0),
                   ("sync", "b-2", 0)]
    assert h.state() == "Stable"


def test_scale_thousands_of_members():
    cfg = BrokerConfig({"group.initial.rebalance.delay.ms": 0}, environ={})
    timers = Timers()
    now = [0]
    gc = GroupCoordinator(cfg, timers, lambda: now[0], emit=lambda e: None,
                          member_id_factory=lambda p: p)
    n = 3000
    results = {}
    start = time.perf_counter()
    for i in range(n):
        gc.join_group(lambda r, i=i: results.__setitem__(i, r), JoinGroupRequest(group_id="big", client_id=f"m{i}",
                      session_timeout_ms=30000, protocol_type="consumer", protocols=[("range", b"\x00\x00")],
                      require_known_member_id=False))
    timers.advance(0)
    assert len(results) == n
    leader = results[0]["leader"]
    syncs = {}
    for i in range(1, n):
        gc.sync_group(lambda r, i=i: syncs.__setitem__(i, r), SyncGroupRequest("big", 1, f"m{i}"))
    gc.sync_group(lambda r: syncs.__setitem__(0, r), SyncGroupRequest("big", 1, leader,
                                                                     assignments=[(f"m{i}", b"a") for i in range(n)]))
    assert len(syncs) == n and gc.group("big").state == "Stable"
    for _ in range(3):
        now[0] += 3000
        for i in range(n):
            gc.heartbeat(lambda r: None, HeartbeatRequest("big", 1, f"m{i}"))
        timers.advance(now[0])
    assert len(gc.group("big").members) == n
    assert time.perf_counter() - start < 10
