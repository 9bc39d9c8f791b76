"""Static membership (KIP-345) and SkipAssignment (KIP-814)."""
from __future__ import annotations

GROUP = "group-id"


def static_stable(h, instances=("leader", "follower"), **kw):
    """Static members joined (no KIP-394 round trip) and synced; returns {instance: member id}."""
    calls = {i: h.join(instance_id=i, client_id=f"client-{i}", **kw) for i in instances}
    assert all(not c.done for c in calls.values())          # static members are added directly
    h.advance(0)
    ids = {i: c.result["member_id"] for i, c in calls.items()}
    leader = next(iter(calls.values())).result["leader"]
    assignments = [(m, f"assignment-{i}".encode()) for i, m in ids.items()]
    for i, m in ids.items():
        if m != leader:
            h.sync(member_id=m, generation=1, instance_id=i)
    h.sync(member_id=leader, generation=1, instance_id=[i for i, m in ids.items() if m == leader][0],
           assignments=assignments)
    assert h.state() == "Stable"
    return ids


def test_static_member_joins_without_member_id_required(h):
    call = h.join(instance_id="inst", version=5)
    h.advance(0)
    assert call.result["member_id"] == "inst-1" == call.result["leader"]
    assert h.group().static_members == {"inst": "inst-1"}
    assert h.events_of("member.joined")[0]["instance_id"] == "inst"


def test_static_follower_rejoin_in_stable_same_protocol_no_rebalance_v9(h):
    ids = static_stable(h)
    call = h.join(instance_id="follower", client_id="client-follower")
    assert call.result == {"throttle_time_ms": 0, "error_code": 0, "generation_id": 1, "protocol_type": "consumer",
                           "protocol_name": "range", "leader": ids["leader"], "skip_assignment": False,
                           "member_id": "follower-3", "members": []}
    g = h.group()
    assert g.state == "Stable" and g.static_members["follower"] == "follower-3"
    assert not g.has_member(ids["follower"])
    # the new id fetches its old assignment
    assert h.sync(member_id="follower-3", generation=1, instance_id="follower").result["assignment"] == \
        b"assignment-follower"
    # the old id is fenced / unknown
    assert h.heartbeat(member_id=ids["follower"], instance_id="follower") == 82
    assert h.heartbeat(member_id=ids["follower"]) == 25
    replaced = h.events_of("member.replaced")[-1]
    assert (replaced["member"], replaced["old_member"], replaced["rebalance"]) == ("follower-3", ids["follower"], False)
    assert not h.events_of("rebalance.started")[1:]


def test_static_leader_rejoin_v9_gets_skip_assignment(h, sub):
    ids = static_stable(h)
    call = h.join(instance_id="leader", client_id="client-leader")
    res = call.result
    assert res["skip_assignment"] is True
    assert res["leader"] == res["member_id"] == "leader-3"
    assert res["generation_id"] == 1 and res["protocol_name"] == "range"
    assert res["members"] == [
        {"member_id": ids["follower"], "group_instance_id": "follower", "metadata": sub(["foo"])},
        {"member_id": "leader-3", "group_instance_id": "leader", "metadata": sub(["foo"])}]
    assert h.state() == "Stable"
    assert h.sync(member_id="leader-3", generation=1, instance_id="leader").result["assignment"] == \
        b"assignment-leader"


def test_static_leader_rejoin_below_v9_gets_old_leader_id(h):
    ids = static_stable(h)
    call = h.join(instance_id="leader", client_id="client-leader", version=8)
    res = call.result
    assert res["member_id"] == "leader-3"
    assert res["leader"] == ids["leader"]          # the id from before the replacement
    assert res["members"] == [] and res["skip_assignment"] is False
    assert h.group().leader_id == "leader-3" and h.state() == "Stable"


def test_static_rejoin_with_changed_selected_protocol_rebalances(h, sub):
    static_stable(h, instances=("leader",), protocols=[("range", sub(["foo"])), ("roundrobin", sub(["foo"]))])
    call = h.join(instance_id="leader", protocols=[("roundrobin", sub(["foo"])), ("range", sub(["foo"]))])
    # the only member now prefers roundrobin: the selected protocol would change
    assert call.result["generation_id"] == 2 and call.result["protocol_name"] == "roundrobin"
    assert h.events_of("member.replaced")[-1]["rebalance"] is True
    assert h.events_of("rebalance.started")[-1]["reason"] == "static_member_protocol_changed"


def test_static_rejoin_with_changed_metadata_but_same_protocol_does_not_rebalance(h, sub):
    static_stable(h)
    call = h.join(instance_id="follower", protocols=[("range", sub(["foo", "bar"]))])
    assert call.result["generation_id"] == 1 and h.state() == "Stable"
    assert h.group().members["follower-3"].protocols == [("range", sub(["foo", "bar"]))]


def test_static_rejoin_during_completing_rebalance_fences_parked_sync_and_rebalances(h):
    a = h.join(instance_id="a")
    b = h.join(instance_id="b")
    h.advance(0)
    parked = h.sync(member_id=b.result["member_id"], generation=1, instance_id="b")
    assert not parked.done
    rejoin = h.join(instance_id="b")
    assert parked.result == {"throttle_time_ms": 0, "error_code": 82, "protocol_type": None, "protocol_name": None,
                             "assignment": b""}
    assert h.state() == "PreparingRebalance"
    assert h.events_of("rebalance.started")[-1]["reason"] == "static_member_rejoined_during_sync"
    ra = h.join(member_id=a.result["member_id"], instance_id="a")
    assert rejoin.result["generation_id"] == ra.result["generation_id"] == 2
    assert rejoin.result["member_id"] == "b-3"


def test_static_rejoin_fences_old_parked_join(h):
    ids = static_stable(h, instances=("leader", "follower", "other"))
    h.join(member_id=ids["leader"], instance_id="leader")           # the leader forces a rebalance
    parked_old = h.join(member_id=ids["follower"], instance_id="follower")
    assert not parked_old.done and h.state() == "PreparingRebalance"
    new = h.join(instance_id="follower")                             # same instance, new process
    assert parked_old.result == {"throttle_time_ms": 0, "error_code": 82, "generation_id": -1,
                                 "protocol_type": None, "protocol_name": None, "leader": "",
                                 "skip_assignment": False, "member_id": ids["follower"], "members": []}
    assert not new.done
    h.join(member_id=ids["other"], instance_id="other")
    assert new.result["member_id"] == "follower-4" and new.result["generation_id"] == 2


def test_fenced_instance_id_on_join(h):
    ids = static_stable(h)
    assert h.join(member_id="follower-999", instance_id="follower").error == 82
    # unknown instance with a member id
    assert h.join(member_id=ids["follower"], instance_id="nobody").error == 25


def test_static_members_are_kept_at_join_completion_and_in_leader_list(h, sub):
    ids = static_stable(h, session=60000, rebalance=30000)
    dyn = h.join_new(client_id="dyn", session=60000, rebalance=30000)   # new dynamic member: rebalance
    r_leader = h.join(member_id=ids["leader"], instance_id="leader", session=60000, rebalance=30000)
    h.run_until(30000)     # the static follower never rejoins
    g = h.group()
    assert g.has_member(ids["follower"]) and g.state == "CompletingRebalance"
    assert {m["member_id"] for m in r_leader.result["members"]} == {ids["leader"], ids["follower"], "dyn-3"}
    follower_entry = [m for m in r_leader.result["members"] if m["member_id"] == ids["follower"]][0]
    assert follower_entry == {"member_id": ids["follower"], "group_instance_id": "follower", "metadata": sub(["foo"])}
    assert dyn.result["generation_id"] == 2


def test_static_leader_that_does_not_rejoin_loses_leadership(h):
    ids = static_stable(h, session=60000, rebalance=30000)
    rf = h.join(member_id=ids["follower"], instance_id="follower", session=60000, rebalance=30000,
                protocols=[("range", b"\x00\x00\x00\x00\x00\x01\x00\x03bar\xff\xff\xff\xff")])
    assert h.state() == "PreparingRebalance"
    h.run_until(30000)
    res = rf.result
    assert res["leader"] == ids["follower"] and res["member_id"] == ids["follower"]
    assert {m["member_id"] for m in res["members"]} == {ids["leader"], ids["follower"]}
    assert h.events_of("group.leader_changed")[-1]["reason"] == "leader_not_rejoined"


def test_group_waits_for_nonjoined_static_member_until_its_session_expires(h):
    ids = static_stable(h, session=50000, rebalance=10000)
    h.leave(GROUP, {"member_id": ids["leader"], "group_instance_id": "leader"})    # Stable -> PreparingRebalance
    g = h.group()
    assert g.state == "PreparingRebalance" and g.leader_id == ids["follower"]
    h.run_until(10000)     # join timer: nobody parked, a static member remains -> wait again
    assert g.state == "PreparingRebalance" and h.timers.deadline(("join", GROUP)) == 20000
    h.run_until(20000)
    assert g.state == "PreparingRebalance"
    h.run_until(50000)     # the follower's session (armed at sync time 0) expires
    assert g.state == "Empty" and g.generation_id == 2


def test_remove_static_member_by_instance_id_with_empty_member_id(h):
    ids = static_stable(h)
    res = h.leave(GROUP, {"member_id": "", "group_instance_id": "follower", "reason": "admin"})
    assert res == {"throttle_time_ms": 0, "error_code": 0,
                   "members": [{"member_id": "", "group_instance_id": "follower", "error_code": 0}]}
    g = h.group()
    assert not g.has_member(ids["follower"]) and "follower" not in g.static_members
    assert g.state == "PreparingRebalance"
    left = h.events_of("member.left")[-1]
    assert (left["member"], left["initiator"], left["reason"]) == (ids["follower"], "admin", "admin")


def test_get_different_static_member_id_after_each_rejoin(h):
    static_stable(h, instances=("solo",))
    seen = {h.group().static_members["solo"]}
    for _ in range(3):
        res = h.join(instance_id="solo").result
        assert res["member_id"] not in seen
        seen.add(res["member_id"])
    assert len(h.group().members) == 1


def test_static_member_rejoin_with_known_member_id_in_stable(h):
    ids = static_stable(h)
    res = h.join(member_id=ids["follower"], instance_id="follower").result
    assert res["member_id"] == ids["follower"] and res["generation_id"] == 1 and res["members"] == []


def test_static_member_replacement_rearms_session_with_previous_timeout(h):
    ids = static_stable(h, session=20000)
    h.run_until(1000)
    h.join(instance_id="follower", session=30000)
    # the session timer is re-armed before the update, so with the old (20000) timeout
    assert h.timers.deadline(("hb", GROUP, "follower-3")) == 21000
    assert not h.timers.is_scheduled(("hb", GROUP, ids["follower"]))
    assert h.group().members["follower-3"].session_timeout_ms == 30000
