"""JoinGroup conformance: validation, KIP-394, rebalance triggers, initial delay, leader and
protocol selection, group max size (after Kafka's GroupMetadataManagerTest classic cases)."""
from __future__ import annotations

import re

import pytest

from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.group.classic.group import Member
from groupcoord.coordinator.group.runtime import GroupCoordinator, JoinGroupRequest
from groupcoord.coordinator.timer import Timers

GROUP = "group-id"


# ---------------------------------------------------------------- validation
def test_join_empty_group_id_is_invalid_group_id(h):
    call = h.join("", member_id="m")
    assert call.result == {"throttle_time_ms": 0, "error_code": 24, "generation_id": -1, "protocol_type": None,
                           "protocol_name": None, "leader": "", "skip_assignment": False, "member_id": "m",
                           "members": []}
    assert len(h.gc) == 0


@pytest.mark.parametrize("session,error", [(5999, 26), (6000, 79), (1800000, 79), (1800001, 26)])
def test_join_session_timeout_bounds(h, session, error):
    call = h.join(session=session)
    assert call.error == error
    assert (h.group() is not None) == (error == 79)


def test_join_known_member_of_unknown_group_is_unknown_member_id(h):
    call = h.join(member_id="someone")
    assert call.error == 25
    assert call.result["member_id"] == "someone"
    assert h.group() is None


def test_join_unknown_member_of_existing_group(h):
    h.stable_group(1)
    call = h.join(member_id="nobody")
    assert call.error == 25
    assert call.result["member_id"] == "nobody"


def test_join_empty_protocol_type_is_inconsistent_and_group_still_created(h):
    call = h.join(protocol_type="")
    assert call.error == 23
    assert call.result["member_id"] == ""
    # Kafka persists the newly created group even when the join fails
    assert h.state() == "Empty"
    assert h.group().protocol_type is None


def test_join_empty_protocol_list_is_inconsistent(h):
    assert h.join(protocols=[]).error == 23


def test_join_inconsistent_protocol_type(h):
    h.stable_group(1)
    call = h.join(protocol_type="connect")
    assert call.error == 23
    assert call.result["member_id"] == ""


def test_join_no_common_protocol_is_inconsistent(h, sub):
    h.stable_group(1, protocols=[("range", sub(["foo"]))])
    assert h.join(protocols=[("roundrobin", sub(["foo"]))]).error == 23


def test_join_known_member_with_inconsistent_protocols_echoes_member_id(h, sub):
    leader, = h.stable_group(1)
    call = h.join(member_id=leader, protocols=[("roundrobin", sub(["foo"]))])
    assert call.error == 23
    assert call.result["member_id"] == leader


# ---------------------------------------------------------------- KIP-394
def test_member_id_required_on_v4_plus(h):
    call = h.join(version=4, client_id="my-client")
    assert call.result == {"throttle_time_ms": 0, "error_code": 79, "generation_id": -1, "protocol_type": None,
                           "protocol_name": None, "leader": "", "skip_assignment": False,
                           "member_id": "my-client-1", "members": []}
    g = h.group()
    assert g.state == "Empty" and list(g.pending_join_members) == ["my-client-1"] and not g.members
    assert h.events_of("member.pending")[0]["member"] == "my-client-1"


def test_join_below_v4_adds_member_directly(h):
    call = h.join(version=3)
    assert not call.done
    g = h.group()
    assert g.state == "PreparingRebalance" and list(g.members) == ["client-1"]
    h.advance(0)
    assert call.result["member_id"] == "client-1" and call.result["generation_id"] == 1


def test_pending_member_rejoins_and_is_added(h):
    first = h.join()
    second = h.join(member_id=first.result["member_id"])
    h.advance(0)
    assert second.result["error_code"] == 0
    assert second.result["member_id"] == second.result["leader"] == "client-1"


def test_pending_member_expires_after_session_timeout(h):
    first = h.join(session=10000)
    mid = first.result["member_id"]
    h.advance(9999)
    assert h.group().is_pending_member(mid)
    h.advance(1)
    assert not h.group().is_pending_member(mid)
    assert h.events_of("member.expired")[0]["reason"] == "pending_member_timeout"
    # the id is forgotten
    assert h.join(member_id=mid).error == 25


def test_pending_member_blocks_join_completion_until_it_joins(h):
    leader, = h.stable_group(1)
    pending = h.join(client_id="late")
    assert pending.error == 79
    rejoin = h.join(member_id=leader)              # the leader's JoinGroup forces a rebalance
    assert h.state() == "PreparingRebalance" and not rejoin.done
    h.advance(10)
    assert not rejoin.done                            # all members joined, but one id is pending
    late = h.join(member_id=pending.result["member_id"], client_id="late")
    assert rejoin.done and late.done
    assert rejoin.result["generation_id"] == late.result["generation_id"] == 2
    assert {m["member_id"] for m in rejoin.result["members"]} == {leader, "late-2"}


def test_pending_member_timeout_completes_join(h):
    leader, = h.stable_group(1)
    pending = h.join(client_id="late", session=10000)
    rejoin = h.join(member_id=leader)
    h.advance(9999)
    assert not rejoin.done
    h.advance(1)
    assert rejoin.result["error_code"] == 0 and rejoin.result["generation_id"] == 2
    assert [m["member_id"] for m in rejoin.result["members"]] == [leader]
    assert pending.result["member_id"] not in h.group().pending_join_members


def test_pending_member_with_instance_id_is_an_internal_error(h):
    first = h.join()
    call = h.join(member_id=first.result["member_id"], instance_id="instance")
    assert call.error == -1


# ---------------------------------------------------------------- group max size
def test_join_group_over_max_size(make_harness):
    h = make_harness(group_max_size=1)
    first = h.join(version=3)
    second = h.join(version=3, client_id="other")
    assert second.result == {"throttle_time_ms": 0, "error_code": 81, "generation_id": -1, "protocol_type": None,
                             "protocol_name": None, "leader": "", "skip_assignment": False, "member_id": "",
                             "members": []}
    h.advance(0)
    assert first.error == 0 and len(h.group().members) == 1


def test_dynamic_members_with_max_size_and_required_known_member(make_harness):
    h = make_harness(group_max_size=3)
    firsts = [h.join(client_id=f"c{i}") for i in range(4)]     # Empty group: every id is handed out
    assert [f.error for f in firsts] == [79] * 4
    ids = [f.result["member_id"] for f in firsts]
    calls = [h.join(member_id=mid, client_id=f"c{i}") for i, mid in enumerate(ids)]
    assert calls[3].error == 81 and calls[3].result["member_id"] == ""
    assert not h.group().is_pending_member(ids[3])
    h.advance(0)
    assert all(c.error == 0 for c in calls[:3]) and list(h.group().members) == ids[:3]


def test_static_members_with_max_size(make_harness):
    h = make_harness(group_max_size=2)
    a = h.join(instance_id="a")
    b = h.join(instance_id="b")
    c = h.join(instance_id="c")
    assert c.error == 81
    h.advance(0)
    assert a.error == b.error == 0
    assert set(h.group().static_members) == {"a", "b"}


def test_existing_members_can_rejoin_with_max_size_while_rebalancing(make_harness):
    h = make_harness(group_max_size=2, group_initial_rebalance_delay_ms=3000)
    a = h.join(version=3, client_id="a")
    b = h.join(version=3, client_id="b")
    assert h.join(version=3, client_id="c").error == 81       # numAwaitingJoin == max
    again = h.join(member_id="a-1", client_id="a")             # parked already: accepted
    h.run_until(3000)                                          # extended once (b was added)
    h.run_until(6000)
    assert again.result["generation_id"] == 1 and b.result["generation_id"] == 1
    assert not a.done     # Kafka drops the replaced parked JoinGroup without answering it


def test_last_joining_members_are_kicked_out_when_rejoining_group_with_max_size(make_harness, sub):
    # as Kafka's test: the group already holds more members than group.max.size
    h = make_harness(group_max_size=10, group_initial_rebalance_delay_ms=50)
    gc = h.gc
    gc.join_group(lambda r: None, JoinGroupRequest(group_id=GROUP, member_id="", session_timeout_ms=10000,
                  protocol_type="consumer", protocols=[("range", sub(["foo"]))], client_id="x"))
    group = h.group()
    group.pending_join_members.clear()
    ids = [f"client-id-{i}" for i in range(12)]
    for mid in ids:
        group.add(Member(mid, None, "client-id", "client-host", 10000, 5000, "consumer",
                         [("range", sub(["foo"]))]))
    gc.classic._prepare_rebalance(group, h.now, "test")
    calls = [h.join(member_id=mid, rebalance=10000, session=10000) for mid in ids]
    assert [c.error for c in calls[10:]] == [81, 81]
    assert len(group.members) == 10 and group.num_members_awaiting_join == 10
    h.advance(10000)
    assert [c.error for c in calls[:10]] == [0] * 10
    assert group.state == "CompletingRebalance"
    assert list(group.members) == ids[:10]


# ---------------------------------------------------------------- rebalance triggers
def test_new_member_joining_stable_group_triggers_rebalance(h):
    a, b = h.stable_group(2)
    c = h.join_new(client_id="c")
    assert h.state() == "PreparingRebalance" and not c.done
    assert h.heartbeat(member_id=a, generation=1) == 27
    ra, rb = h.join(member_id=a), h.join(member_id=b)
    assert ra.done and rb.done and c.done
    assert ra.result["generation_id"] == 2


def test_leader_rejoin_in_stable_always_rebalances(h):
    leader, follower = h.stable_group(2)
    call = h.join(member_id=leader)                       # identical metadata
    assert not call.done and h.state() == "PreparingRebalance"
    assert h.events_of("rebalance.started")[-1]["reason"] == "leader_rejoined"
    f = h.join(member_id=follower)
    assert call.result["generation_id"] == f.result["generation_id"] == 2


def test_follower_same_metadata_in_stable_gets_current_generation(h):
    leader, follower = h.stable_group(2)
    call = h.join(member_id=follower)
    assert call.result == {"throttle_time_ms": 0, "error_code": 0, "generation_id": 1, "protocol_type": "consumer",
                           "protocol_name": "range", "leader": leader, "skip_assignment": False,
                           "member_id": follower, "members": []}
    assert h.state() == "Stable"


def test_follower_changed_metadata_in_stable_rebalances(h, sub):
    leader, follower = h.stable_group(2)
    call = h.join(member_id=follower, protocols=[("range", sub(["foo", "bar"]))])
    assert not call.done and h.state() == "PreparingRebalance"
    assert h.events_of("rebalance.started")[-1]["reason"] == "metadata_changed"


def test_completing_rebalance_same_metadata_returns_current_generation(h):
    a = h.join_new(client_id="a")
    h.join_new(client_id="b")
    h.advance(0)
    assert h.state() == "CompletingRebalance"
    leader = a.result["member_id"]
    again = h.join(member_id=leader, client_id="a")
    assert again.result["generation_id"] == 1 and again.result["leader"] == leader
    assert [m["member_id"] for m in again.result["members"]] == [leader, "b-2"]
    again_b = h.join(member_id="b-2", client_id="b")
    assert again_b.result["members"] == [] and again_b.result["generation_id"] == 1
    assert h.state() == "CompletingRebalance"


def test_completing_rebalance_changed_metadata_rebalances_and_fails_parked_syncs(h, sub):
    h.join_new(client_id="a")
    h.join_new(client_id="b")
    h.advance(0)
    parked = h.sync(member_id="b-2", generation=1)
    assert not parked.done
    call = h.join(member_id="b-2", client_id="b", protocols=[("range", sub(["bar"]))])
    assert parked.result == {"throttle_time_ms": 0, "error_code": 27, "protocol_type": None, "protocol_name": None,
                             "assignment": b""}
    assert h.state() == "PreparingRebalance" and not call.done


def test_existing_member_in_empty_group_is_unknown(h):
    leader, = h.stable_group(1)
    assert h.leave(GROUP, {"member_id": leader})["members"][0]["error_code"] == 0
    assert h.state() == "Empty"
    assert h.join(member_id=leader).error == 25


def test_complete_join_removes_dynamic_members_that_did_not_rejoin(h):
    a, b = h.stable_group(2, rebalance=30000)
    ra = h.join(member_id=a)
    for t in range(5000, 30000, 5000):
        h.run_until(t)
        assert h.heartbeat(member_id=b) == 27          # alive, but does not rejoin
    h.run_until(29999)
    assert not ra.done
    h.run_until(30000)
    assert ra.result["generation_id"] == 2
    assert [m["member_id"] for m in ra.result["members"]] == [a]
    assert not h.group().has_member(b)
    removed = h.events_of("member.removed")[-1]
    assert (removed["member"], removed["reason"]) == (b, "not_rejoined")


def test_generation_bumps_to_empty_when_everyone_leaves(h):
    a, b = h.stable_group(2)
    res = h.leave(GROUP, {"member_id": a}, {"member_id": b})
    assert [m["error_code"] for m in res["members"]] == [0, 0]
    g = h.group()
    assert (g.state, g.generation_id, g.protocol_name, g.leader_id) == ("Empty", 2, None, None)
    done = h.events_of("rebalance.completed")[-1]
    assert done["outcome"] == "Empty" and done["generation"] == 2


def test_generation_id_increments_on_each_rebalance(h):
    a, b = h.stable_group(2)
    for expected in (2, 3, 4):
        ra, rb = h.join(member_id=a), h.join(member_id=b)
        assert ra.result["generation_id"] == rb.result["generation_id"] == expected
        h.sync(member_id=a, generation=expected, assignments=[(a, b"x")])


# ---------------------------------------------------------------- initial delay
def test_initial_rebalance_delay_on_empty_group(make_harness):
    h = make_harness(group_initial_rebalance_delay_ms=3000)
    call = h.join(version=3)
    h.advance(2999)
    assert not call.done
    h.advance(1)
    assert call.result["error_code"] == 0 and call.result["generation_id"] == 1


def test_initial_delay_is_not_cut_short_when_everyone_joined(make_harness):
    h = make_harness(group_initial_rebalance_delay_ms=3000)
    a = h.join_new()
    assert not a.done and h.group().has_all_members_joined()
    h.advance(2999)
    assert not a.done
    h.advance(1)
    assert a.done


def test_initial_delay_is_extended_when_a_new_member_joins(make_harness):
    # Kafka's testResetRebalanceDelayWhenNewMemberJoinsGroupDuringInitialRebalance
    h = make_harness(group_initial_rebalance_delay_ms=3000)
    first = h.join(version=3, rebalance=9000)
    h.run_until(2999)
    second = h.join(version=3, rebalance=9000)
    h.run_until(3000)   # the timer fires: a new member was added, so it is extended by D
    h.run_until(5999)
    assert not first.done and not second.done
    h.run_until(6000)
    assert first.error == second.error == 0


def test_initial_delay_is_bounded_by_the_rebalance_timeout(make_harness):
    # Kafka's testDelayRebalanceUptoRebalanceTimeout: remaining = max(2D - D, 0) = D, then
    # min(D, remaining) = D with newRemaining = max(D - D, 0) = 0: a third member cannot extend it
    h = make_harness(group_initial_rebalance_delay_ms=3000)
    first = h.join(version=3, rebalance=6000)
    second = h.join(version=3, rebalance=6000)
    h.advance(3001)     # timer fired at 3001 (as in Kafka's mock timer), rescheduled to 6001
    third = h.join(version=3, rebalance=6000)
    h.advance(2999)     # 6000
    assert not first.done and not second.done and not third.done
    h.advance(1)        # 6001: remaining is 0, the join completes despite the third member
    assert first.error == second.error == third.error == 0
    assert len(first.result["members"]) == 3


def test_initial_delay_extension_uses_current_delay_in_remaining_arithmetic(make_harness):
    # rebalance 10000, D 3000: (3000, 7000) -> +3000 (new: min(3000,7000), rem 7000-3000=4000)
    # -> +3000 (rem 4000-3000=1000) -> +1000 (min(3000,1000), rem max(1000-3000,0)=0) -> complete
    h = make_harness(group_initial_rebalance_delay_ms=3000)
    first = h.join(version=3, rebalance=10000)
    for joiner, deadline in ((1000, 3000), (4000, 6000), (7000, 9000)):
        h.run_until(joiner)
        h.join(version=3, rebalance=10000)
        h.run_until(deadline)
        assert not first.done
    assert h.timers.deadline(("join", GROUP)) == 10000
    h.run_until(9999)
    assert not first.done
    h.run_until(10000)
    assert first.done and len(first.result["members"]) == 4


def test_initial_delay_applies_when_an_existing_group_restarts_from_empty(make_harness):
    h = make_harness(group_initial_rebalance_delay_ms=3000)
    call = h.join(version=3)
    h.advance(3000)
    leader = call.result["member_id"]
    h.sync(member_id=leader, generation=1, assignments=[(leader, b"a")])
    h.leave(GROUP, {"member_id": leader})
    assert h.state() == "Empty"
    again = h.join(version=3)
    h.advance(2999)
    assert not again.done
    second = h.join(version=3)           # J: newMemberAdded for any rebalance from Empty
    h.advance(1)                         # 3000 after start: extended
    assert not again.done
    h.advance(3000)
    assert again.result["generation_id"] == 3 and len(again.result["members"]) == 2 and second.done


# ---------------------------------------------------------------- leader and protocol
def test_leader_gets_members_followers_get_none(h, sub):
    a = h.join_new(client_id="a", protocols=[("range", sub(["foo"]))])
    b = h.join_new(client_id="b", protocols=[("range", sub(["bar"]))])
    h.advance(0)
    assert a.result["leader"] == "a-1" == b.result["leader"]
    assert a.result["members"] == [
        {"member_id": "a-1", "group_instance_id": None, "metadata": sub(["foo"])},
        {"member_id": "b-2", "group_instance_id": None, "metadata": sub(["bar"])}]
    assert b.result["members"] == []
    assert a.result["protocol_name"] == b.result["protocol_name"] == "range"
    assert a.result["protocol_type"] == "consumer"


@pytest.mark.parametrize("prefs,expected", [
    ([["range", "roundrobin"], ["roundrobin", "range"], ["roundrobin", "range"]], "roundrobin"),
    ([["range", "roundrobin"], ["roundrobin", "range"]], "range"),          # tie: the leader's preference
    ([["roundrobin", "range"], ["range", "roundrobin"]], "roundrobin"),
    ([["range", "sticky"], ["sticky"]], "sticky"),                          # only candidates count
    ([["a", "b", "c"], ["c", "b"], ["b", "c"]], "b"),                       # "a" is no candidate
])
def test_protocol_vote(h, prefs, expected, sub):
    calls = []
    for i, names in enumerate(prefs):
        calls.append(h.join(version=3, client_id=f"c{i}", protocols=[(n, sub(["foo"])) for n in names]))
    h.advance(0)
    assert calls[0].result["protocol_name"] == expected


def test_protocol_vote_tie_uses_leader_order_among_tied(h, sub):
    # the leader votes c, the other member b: a tie, broken by the leader's order
    x = h.join(version=3, client_id="x", protocols=[("c", b""), ("b", b"")])
    h.join(version=3, client_id="y", protocols=[("b", b""), ("c", b"")])
    h.advance(0)
    assert x.result["protocol_name"] == "c"


def test_member_id_format(sub):
    cfg = BrokerConfig({"group.initial.rebalance.delay.ms": 0}, environ={})
    gc = GroupCoordinator(cfg, Timers(), lambda: 0, emit=lambda e: None)
    out = []
    gc.join_group(out.append, JoinGroupRequest(group_id="g", client_id="my-client", session_timeout_ms=10000,
                  protocol_type="consumer", protocols=[("range", sub(["foo"]))]))
    gc.join_group(out.append, JoinGroupRequest(group_id="g", group_instance_id="inst-7", client_id="my-client",
                  session_timeout_ms=10000, protocol_type="consumer", protocols=[("range", sub(["foo"]))]))
    gc.join_group(out.append, JoinGroupRequest(group_id="g2", client_id="", session_timeout_ms=10000,
                  protocol_type="consumer", protocols=[("range", sub(["foo"]))]))
    uuid4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    assert re.fullmatch(f"my-client-{uuid4}", out[0]["member_id"])
    assert re.fullmatch(f"inst-7-{uuid4}", gc.group("g").static_members["inst-7"])
    assert re.fullmatch(f"-{uuid4}", out[1]["member_id"])


def test_new_member_join_times_out_after_five_minutes(h):
    a, = h.stable_group(1, session=10000, rebalance=600000)
    newcomer = h.join(version=3, client_id="new", session=10000, rebalance=600000)
    assert h.state() == "PreparingRebalance"
    for t in range(5000, 300000, 5000):
        h.run_until(t)
        assert h.heartbeat(member_id=a) == 27
    h.run_until(299999)
    assert not newcomer.done
    h.run_until(300000)
    assert newcomer.result == {"throttle_time_ms": 0, "error_code": 25, "generation_id": -1, "protocol_type": None,
                               "protocol_name": None, "leader": "", "skip_assignment": False, "member_id": "",
                               "members": []}
    expired = h.events_of("member.expired")[-1]
    assert (expired["member"], expired["reason"]) == ("new-2", "new_member_join_timeout")


def test_new_member_session_is_not_its_join_timeout(h):
    # a new member's parked JoinGroup is bounded by the 5-minute timer, not its session
    a, = h.stable_group(1, session=10000, rebalance=100000)
    newcomer = h.join(version=3, client_id="new", session=10000, rebalance=100000)
    for t in range(5000, 60000, 5000):
        h.run_until(t)
        h.heartbeat(member_id=a)
    assert not newcomer.done and h.group().has_member("new-2")
