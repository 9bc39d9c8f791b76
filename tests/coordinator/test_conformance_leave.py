"""LeaveGroup: single and batch (KIP-345), pending members, leader re-election, admin removal."""
from __future__ import annotations

GROUP = "group-id"


def test_leave_empty_group_id(h):
    assert h.leave("", {"member_id": "m"}) == {"throttle_time_ms": 0, "error_code": 24, "members": []}


def test_leave_unknown_group(h):
    assert h.leave("nope", {"member_id": "m", "group_instance_id": None}, {"member_id": "", "group_instance_id": "i"}) == {
        "throttle_time_ms": 0, "error_code": 0, "members": [
            {"member_id": "m", "group_instance_id": None, "error_code": 25},
            {"member_id": "", "group_instance_id": "i", "error_code": 25}]}


def test_leave_unknown_member_of_existing_group(h):
    h.stable_group(1)
    res = h.leave(GROUP, {"member_id": "stranger"})
    assert res["error_code"] == 0 and res["members"][0]["error_code"] == 25
    assert h.state() == "Stable"


def test_valid_leave_triggers_rebalance(h):
    leader, follower = h.stable_group(2)
    res = h.leave(GROUP, {"member_id": follower, "reason": "bye"})
    assert res["members"] == [{"member_id": follower, "group_instance_id": None, "error_code": 0}]
    assert h.state() == "PreparingRebalance"
    assert not h.timers.is_scheduled(("hb", GROUP, follower))
    left = h.events_of("member.left")[-1]
    assert (left["member"], left["reason"], left["pending"], left["initiator"]) == (follower, "bye", False, "member")
    assert h.heartbeat(member_id=leader) == 27
    rejoin = h.join(member_id=leader)
    assert rejoin.result["generation_id"] == 2 and [m["member_id"] for m in rejoin.result["members"]] == [leader]


def test_a_leave_with_the_admin_clients_reason_was_initiated_by_an_admin(h):
    # KafkaAdminClient.removeMembersFromConsumerGroup: DEFAULT_LEAVE_GROUP_REASON when none is given
    leader, follower = h.stable_group(2)
    h.leave(GROUP, {"member_id": follower, "reason": "member was removed by an admin"})
    assert h.events_of("member.left")[-1]["initiator"] == "admin"


def test_leader_leaving_reelects_next_member_in_order(h):
    a, b, c = h.stable_group(3)
    h.leave(GROUP, {"member_id": a})
    assert h.group().leader_id == b
    changed = h.events_of("group.leader_changed")[-1]
    assert (changed["leader_from"], changed["leader_to"], changed["reason"]) == (a, b, "leader_removed")
    rb, rc = h.join(member_id=b), h.join(member_id=c)
    assert rb.result["leader"] == b and len(rb.result["members"]) == 2 and rc.result["members"] == []


def test_leave_answers_the_parked_join_with_unknown_member(h):
    a, b = h.stable_group(2)
    parked = h.join(member_id=a)
    h.leave(GROUP, {"member_id": a})
    assert parked.result == {"throttle_time_ms": 0, "error_code": 25, "generation_id": -1, "protocol_type": None,
                             "protocol_name": None, "leader": "", "skip_assignment": False, "member_id": "",
                             "members": []}


def test_leave_completes_join_when_everyone_else_joined(h):
    a, b, c = h.stable_group(3)
    ra, rb = h.join(member_id=a), h.join(member_id=b)
    assert not ra.done
    h.leave(GROUP, {"member_id": c})
    assert ra.result["generation_id"] == rb.result["generation_id"] == 2


def test_leave_during_initial_delay_does_not_complete_early(make_harness):
    h = make_harness(group_initial_rebalance_delay_ms=3000)
    a = h.join(version=3, client_id="a")
    b = h.join(version=3, client_id="b")
    h.leave(GROUP, {"member_id": "b-2"})
    assert b.result["error_code"] == 25
    h.run_until(2999)
    assert not a.done
    h.run_until(3000)       # b was added during the delay: extended once
    h.run_until(6000)
    assert a.result["generation_id"] == 1 and len(a.result["members"]) == 1


def test_pending_member_leave(h):
    leader, = h.stable_group(1)
    pending = h.join(client_id="p")
    pid = pending.result["member_id"]
    rejoin = h.join(member_id=leader)
    assert not rejoin.done                     # blocked by the pending member
    res = h.leave(GROUP, {"member_id": pid})
    assert res["members"][0]["error_code"] == 0
    assert not h.group().is_pending_member(pid)
    assert not h.timers.is_scheduled(("hb", GROUP, pid))
    assert h.events_of("member.left")[-1]["pending"] is True
    assert rejoin.result["generation_id"] == 2


def test_batch_leave_static_and_dynamic_members(h):
    calls = {i: h.join(instance_id=i) for i in ("s1", "s2", "s3")}
    dyn = h.join_new(client_id="d")
    h.advance(0)
    ids = {i: c.result["member_id"] for i, c in calls.items()}
    res = h.leave(GROUP,
                  {"member_id": ids["s1"], "group_instance_id": "s1"},       # valid
                  {"member_id": "", "group_instance_id": "s2"},              # by instance id
                  {"member_id": "wrong", "group_instance_id": "s3"},         # fenced
                  {"member_id": "", "group_instance_id": "unknown"},         # unknown instance
                  {"member_id": dyn.result["member_id"]},                    # dynamic
                  {"member_id": "ghost"})
    assert [m["error_code"] for m in res["members"]] == [0, 0, 82, 25, 0, 25]
    assert res["members"][2] == {"member_id": "wrong", "group_instance_id": "s3", "error_code": 82}
    g = h.group()
    assert list(g.members) == [ids["s3"]] and g.static_members == {"s3": ids["s3"]}
    assert g.state == "PreparingRebalance"


def test_joined_and_pending_members_batch_leave(h):
    leader, = h.stable_group(1)
    p = h.join(client_id="p").result["member_id"]
    res = h.leave(GROUP, {"member_id": leader}, {"member_id": p}, {"member_id": "unknown"})
    assert [m["error_code"] for m in res["members"]] == [0, 0, 25]
    g = h.group()
    assert not g.members and not g.pending_join_members
    assert g.state == "Empty" and g.generation_id == 2


def test_leave_from_completing_rebalance_fails_parked_syncs(h):
    calls = [h.join_new(client_id=f"c{i}") for i in range(3)]
    h.advance(0)
    a, b, c = (x.result["member_id"] for x in calls)
    parked = h.sync(member_id=b, generation=1)
    h.leave(GROUP, {"member_id": c})
    assert parked.result["error_code"] == 27
    assert h.state() == "PreparingRebalance"


def test_admin_remove_member_helper(h):
    a, b = h.stable_group(2)
    assert h.gc.remove_member(GROUP, b, reason="kick") == 0
    assert h.gc.remove_member(GROUP, "ghost") == 25
    assert h.gc.remove_member("nope", "x") == 25
    assert h.gc.remove_member("", "x") == 24
    left = h.events_of("member.left")[-1]
    assert (left["member"], left["initiator"], left["reason"]) == (b, "admin", "kick")
    assert h.state() == "PreparingRebalance"


def test_leave_on_empty_group(h):
    leader, = h.stable_group(1)
    h.leave(GROUP, {"member_id": leader})
    assert h.state() == "Empty"
    assert h.leave(GROUP, {"member_id": leader})["members"][0]["error_code"] == 25
