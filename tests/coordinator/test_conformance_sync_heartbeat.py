"""SyncGroup, Heartbeat and session/pending-sync timers."""
from __future__ import annotations

import pytest

GROUP = "group-id"


def completing(h, n=2, **kw):
    """n dynamic members joined; the group is CompletingRebalance at generation 1."""
    calls = [h.join_new(client_id=f"c{i}", **kw) for i in range(n)]
    h.advance(0)
    assert h.state() == "CompletingRebalance"
    return [c.result["member_id"] for c in calls]


# ---------------------------------------------------------------- SyncGroup
def test_follower_parks_until_leader_syncs(h):
    leader, follower = completing(h)
    f = h.sync(member_id=follower, generation=1)
    assert not f.done
    assert h.heartbeat(member_id=follower) == 0            # NONE during CompletingRebalance
    lead = h.sync(member_id=leader, generation=1, assignments=[(leader, b"L"), (follower, b"F")])
    assert f.result == {"throttle_time_ms": 0, "error_code": 0, "protocol_type": "consumer",
                        "protocol_name": "range", "assignment": b"F"}
    assert lead.result == {"throttle_time_ms": 0, "error_code": 0, "protocol_type": "consumer",
                           "protocol_name": "range", "assignment": b"L"}
    assert h.state() == "Stable"
    assert h.group().members[follower].assignment == b"F"


def test_leader_sync_before_follower(h):
    leader, follower = completing(h)
    lead = h.sync(member_id=leader, generation=1, assignments=[(leader, b"L"), (follower, b"F")])
    assert lead.result["assignment"] == b"L" and h.state() == "Stable"
    late = h.sync(member_id=follower, generation=1)           # Stable: answered at once
    assert late.result["assignment"] == b"F"
    assert late.result["protocol_name"] == "range"


def test_members_missing_from_leader_assignment_get_zero_length_bytes(h):
    leader, follower = completing(h)
    f = h.sync(member_id=follower, generation=1)
    h.sync(member_id=leader, generation=1, assignments=[(leader, b"L"), ("stranger", b"?")])
    assert f.result["assignment"] == b"" and f.result["error_code"] == 0
    assert "stranger" not in h.group().members
    assert h.events_of("group.sync_completed")[-1]["empty_assignments"] == 1


def test_follower_assignments_are_ignored(h):
    leader, follower = completing(h)
    f = h.sync(member_id=follower, generation=1, assignments=[(follower, b"mine!")])
    assert not f.done
    h.sync(member_id=leader, generation=1, assignments=[(follower, b"F")])
    assert f.result["assignment"] == b"F"


def test_repeated_sync_replaces_the_parked_one(h):
    leader, follower = completing(h)
    first = h.sync(member_id=follower, generation=1)
    second = h.sync(member_id=follower, generation=1)
    h.sync(member_id=leader, generation=1, assignments=[(follower, b"F")])
    assert not first.done and second.result["assignment"] == b"F"


def test_sync_illegal_generation(h):
    leader, follower = completing(h)
    assert h.sync(member_id=follower, generation=2).result == {
        "throttle_time_ms": 0, "error_code": 22, "protocol_type": None, "protocol_name": None, "assignment": b""}


def test_sync_during_preparing_rebalance(h):
    leader, follower = h.stable_group(2)
    h.join(member_id=leader)
    assert h.sync(member_id=follower, generation=1).error == 27
    assert h.sync(member_id=follower, generation=0).error == 22     # generation checked first


def test_sync_unknown_group_member_and_empty_group(h):
    assert h.sync("nope", "m", 1).error == 25
    leader, follower = completing(h)
    assert h.sync(member_id="stranger", generation=1).error == 25
    h.leave(GROUP, {"member_id": leader}, {"member_id": follower})
    assert h.state() == "Empty"
    assert h.sync(member_id=leader, generation=2).error == 25


def test_sync_empty_group_id(h):
    assert h.sync("", "m", 1).error == 24


@pytest.mark.parametrize("ptype,pname,error", [
    ("connect", "range", 23), ("consumer", "roundrobin", 23), (None, None, 0), ("consumer", "range", 0),
    (None, "range", 0), ("consumer", None, 0)])
def test_sync_protocol_type_and_name_consistency(h, ptype, pname, error):
    leader, = completing(h, 1)
    call = h.sync(member_id=leader, generation=1, protocol_type=ptype, protocol_name=pname,
                  assignments=[(leader, b"x")])
    assert call.error == error


def test_sync_fenced_static_member(h):
    a = h.join(instance_id="a")
    h.advance(0)
    mid = a.result["member_id"]
    assert h.sync(member_id="other", generation=1, instance_id="a").error == 82
    assert h.sync(member_id=mid, generation=1, instance_id="unknown").error == 25
    assert h.sync(member_id=mid, generation=1, instance_id="a", assignments=[(mid, b"A")]).error == 0


def test_sync_in_stable_does_not_rearm_the_session(h):
    # J: SyncGroup in Stable does not refresh the session (the Scala coordinator did)
    leader, follower = h.stable_group(2, session=10000)
    h.run_until(9000)
    assert h.sync(member_id=follower, generation=1).error == 0
    h.heartbeat(member_id=leader)
    h.run_until(10000)
    assert not h.group().has_member(follower)


# ---------------------------------------------------------------- pending sync
def test_pending_sync_expiry_removes_members_that_never_synced(h):
    leader, follower = completing(h, rebalance=30000)
    h.keep_alive([leader, follower], 30000)
    h.run_until(30000)
    g = h.group()
    # both removed; the rebalance that follows completes with nobody -> Empty, generation 2
    assert (g.state, g.generation_id, len(g.members)) == ("Empty", 2, 0)
    assert {e["member"] for e in h.events_of("member.removed")} == {leader, follower}
    assert {e["reason"] for e in h.events_of("member.removed")} == {"sync_timeout"}


def test_pending_sync_expiry_of_followers(h):
    leader, follower = completing(h, rebalance=30000)
    h.sync(member_id=leader, generation=1, assignments=[(leader, b"L"), (follower, b"F")])
    assert h.state() == "Stable"
    h.keep_alive([leader, follower], 30000)
    h.run_until(30000)
    assert not h.group().has_member(follower)
    assert h.state() == "PreparingRebalance"
    assert h.heartbeat(member_id=leader) == 27


def test_pending_sync_expiry_of_leader(h):
    leader, follower = completing(h, rebalance=30000)
    parked = h.sync(member_id=follower, generation=1)
    h.keep_alive([leader], 30000)
    h.run_until(30000)
    assert parked.result["error_code"] == 27
    g = h.group()
    assert not g.has_member(leader) and g.leader_id == follower
    assert g.state == "PreparingRebalance"
    assert h.events_of("group.leader_changed")[-1]["leader_to"] == follower


def test_no_pending_sync_expiry_when_everyone_synced(h):
    leader, follower = completing(h, rebalance=30000)
    h.sync(member_id=follower, generation=1)
    h.sync(member_id=leader, generation=1, assignments=[(leader, b"L")])
    assert not h.timers.is_scheduled(("sync", GROUP))
    for t in range(5000, 60001, 5000):
        h.run_until(t)
        assert h.heartbeat(member_id=leader) == 0 and h.heartbeat(member_id=follower) == 0
    assert h.state() == "Stable" and len(h.group().members) == 2


def test_leader_session_expiry_while_follower_awaits_sync(h):
    leader, follower = completing(h, session=10000, rebalance=60000)
    parked = h.sync(member_id=follower, generation=1)
    h.run_until(10000)
    assert parked.result["error_code"] == 27
    assert not h.group().has_member(leader)
    assert h.group().has_member(follower)      # a parked SyncGroup satisfies the heartbeat


# ---------------------------------------------------------------- Heartbeat
def test_heartbeat_errors(h):
    assert h.heartbeat("", "m") == 24
    assert h.heartbeat("nope", "m") == 25
    leader, follower = h.stable_group(2)
    assert h.heartbeat(member_id="stranger") == 25
    assert h.heartbeat(member_id=leader, generation=2) == 22
    assert h.heartbeat(member_id=leader, generation=1) == 0


def test_heartbeat_on_empty_group(h):
    first = h.join()          # a group with only a pending member
    assert h.state() == "Empty"
    assert h.heartbeat(member_id=first.result["member_id"], generation=0) == 25


def test_heartbeat_during_preparing_rebalance(h):
    leader, follower = h.stable_group(2)
    h.join(member_id=leader)
    assert h.heartbeat(member_id=follower, generation=1) == 27
    assert h.heartbeat(member_id=follower, generation=0) == 22       # generation before state


def test_heartbeat_during_completing_rebalance(h):
    leader, follower = completing(h)
    assert h.heartbeat(member_id=follower, generation=1) == 0


def test_heartbeat_static_member_fenced(h):
    a = h.join(instance_id="a")
    h.advance(0)
    assert h.heartbeat(member_id="wrong", generation=1, instance_id="a") == 82
    assert h.heartbeat(member_id=a.result["member_id"], generation=1, instance_id="b") == 25


def test_session_expiry_removes_member_and_rebalances(h):
    leader, follower = h.stable_group(2, session=10000)
    for t in range(3000, 10000, 3000):
        h.run_until(t)
        assert h.heartbeat(member_id=leader) == 0
    h.run_until(9999)
    assert h.group().has_member(follower)
    h.run_until(10000)
    assert not h.group().has_member(follower)
    assert h.state() == "PreparingRebalance"
    expired = h.events_of("member.expired")[-1]
    assert (expired["member"], expired["reason"], expired["session_timeout_ms"]) == (follower, "session_timeout", 10000)
    assert h.events_of("rebalance.started")[-1]["reason"] == "member_expired"
    rejoin = h.join(member_id=leader)
    assert rejoin.result["generation_id"] == 2 and [m["member_id"] for m in rejoin.result["members"]] == [leader]


def test_heartbeats_maintain_the_session(h):
    leader, follower = h.stable_group(2, session=10000)
    for t in range(9999, 100000, 9999):
        h.run_until(t)
        assert h.heartbeat(member_id=leader) == 0 and h.heartbeat(member_id=follower) == 0
    assert len(h.group().members) == 2


def test_heartbeat_in_preparing_rebalance_refreshes_session(h):
    leader, follower = h.stable_group(2, session=10000, rebalance=60000)
    h.join(member_id=leader)
    for t in range(8000, 40000, 8000):
        h.run_until(t)
        assert h.heartbeat(member_id=follower) == 27
    assert h.group().has_member(follower)


def test_parked_members_are_not_expired(h):
    leader, follower = h.stable_group(2, session=10000, rebalance=60000)
    rejoin = h.join(member_id=leader)          # parked well past its session
    h.run_until(10000)                         # the follower expires, then everyone has joined
    assert rejoin.result["generation_id"] == 2
    assert h.group().has_member(leader)


def test_session_timeout_during_rebalance_completes_join(h):
    a, b, c = h.stable_group(3, session=10000, rebalance=60000)
    ra, rb = h.join(member_id=a), h.join(member_id=b)
    h.run_until(9999)
    assert not ra.done
    h.run_until(10000)
    assert ra.result["generation_id"] == rb.result["generation_id"] == 2
    assert {m["member_id"] for m in ra.result["members"]} == {a, b}


def test_heartbeats_emit_no_events(h):
    leader, follower = h.stable_group(2)
    h.clear_events()
    for _ in range(10):
        h.heartbeat(member_id=leader)
    assert h.events == []


def test_session_timer_rearmed_at_join_completion(h):
    a, = h.stable_group(1, session=10000, rebalance=60000)
    h.run_until(5000)
    h.heartbeat(member_id=a)
    call = h.join(member_id=a)
    assert call.done     # alone: the join completes at once
    assert h.timers.deadline(("hb", GROUP, a)) == 5000 + 10000
