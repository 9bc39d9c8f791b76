"""Rebalances of a consumer group (KIP-848) in the model, against values worked out by hand.

``data/consumer`` is a simulation of ``data/consumer/scenario.toml`` (kept as data: the log is the
input here, whatever the simulator does later): two consumer-protocol members on t:4 (heartbeat
every 1 s, 1 ms latency), a third joins at 10 s, the first leaves at 20 s. The lines that matter:

    7      bump to epoch 1 (m000 joins), bump to epoch 2 (m001 joins)
    8      m000 assigned t0-t3 (epoch 1); m001 assigned nothing (epoch 2); both STABLE
    10     m000 revokes t2,t3 (the epoch 2 target gives them to m001); 12: m000 STABLE at epoch 2
    1010   m001 assigned t2,t3: every partition owned again, both STABLE at epoch 2
    10007  bump to epoch 3 (m002 joins); 10012 m000 revokes t1; 10014 m000 STABLE at epoch 3
    11010  m002 assigned t1: all owned, all STABLE at epoch 3
    20000  m000 revokes t0 and leaves (its stop at 20002); 20001 bump to epoch 4 (member_left)
    20012  m002 assigned t0, m001 STABLE at epoch 4: all owned
"""
import json
from pathlib import Path

from groupcoord.analytics.model import analyze_group, group_partitions

DATA = Path(__file__).parent / "data" / "consumer"


def analysed():
    events = [json.loads(line) for line in (DATA / "events.jsonl").read_text().splitlines()]
    scenario = json.loads((DATA / "scenario.json").read_text())
    return analyze_group("g", events, group_partitions(scenario, "g"))


def test_a_rebalance_per_epoch_bump_until_every_member_has_reconciled():
    result = analysed()
    rows = [(r["generation"], r["trigger"], r["start_ms"], r["end_ms"], r["duration_ms"], r["members"],
             r["outcome"], r["protocol"]) for r in result["rebalances"]]
    assert rows == [
        # epoch 1's target (m000 owns all) is reached at 8, while epoch 2's is under way
        (1, "member_joined", 7, 8, 1, 2, "Stable", "consumer"),
        # epoch 2: m000 must give up t2,t3 first; m001 takes them at its next heartbeat
        (2, "member_joined", 7, 1010, 1003, 2, "Stable", "consumer"),
        (3, "member_joined", 10007, 11010, 1003, 3, "Stable", "consumer"),
        (4, "member_left", 20001, 20012, 11, 2, "Stable", "consumer"),
    ]


def test_movement_idle_time_and_unowned_partitions():
    r1, r2, r3, r4 = analysed()["rebalances"]
    # it completes while epoch 2's change is under way (m000 owns all 4, m001 none): what they own
    # is no assignment of its own, so movement is not measured. Unowned [7, 8): 4 partitions x 1 ms
    assert (r1["partitions_moved"], r1["min_moves"], r1["balance"], r1["unowned_partition_ms"]) == \
        (None, None, None, 4)
    assert r1["member_idle_ms"] == {"g/m000": 1, "g/m001": 1}
    # after: m000 t0,t1 and m001 t2,t3 (4 moved from no owner); unowned 4 x [7,8) + 2 x [10,1010) = 2004;
    # m001 owns nothing from 7 to 1010; m000's revocation of t2,t3 at 10 belongs here
    assert (r2["partitions_moved"], r2["min_moves"], r2["partitions_revoked"], r2["unowned_partition_ms"]) == \
        (4, 4, 2, 2004)
    assert r2["member_idle_ms"] == {"g/m000": 1, "g/m001": 1003}
    # before m000 t0,t1, m001 t2,t3, m002 none; after m000 t0, m001 t2,t3, m002 t1: t1 moves; the
    # minimum for 4 over 3 (2, 1, 1) from (2, 2, 0) is 1; t1 unowned [10012, 11010) = 998 ms
    assert (r3["partitions_moved"], r3["min_moves"], r3["partitions_revoked"], r3["unowned_partition_ms"],
            r3["balance"]) == (1, 1, 1, 998, 1)
    assert r3["member_idle_ms"] == {"g/m000": 0, "g/m001": 0, "g/m002": 1003}
    # the leaver's revocation at 20000 came before the bump: it belongs to the next rebalance; t0
    # unowned [20001, 20012) = 11 ms (its 1 ms before the bump is outside); m000 runs, owning
    # nothing, until its stop at 20002
    assert (r4["partitions_moved"], r4["min_moves"], r4["partitions_revoked"], r4["unowned_partition_ms"],
            r4["balance"]) == (1, 1, 1, 11, 0)
    assert r4["member_idle_ms"] == {"g/m000": 1, "g/m001": 0, "g/m002": 0}


def test_group_totals_and_invariants():
    result = analysed()
    # unowned while a member runs: 4 x [0, 8) + 2 x [10, 1010) + 1 x [10012, 11010) + 1 x [20000, 20012)
    assert result["group"]["unowned_partition_ms"] == 32 + 2000 + 998 + 12
    assert result["invariants"]["status"] == dict.fromkeys(
        ("single_owner", "all_owned_when_stable", "generations_grow", "commits_kept"), "pass")
    # checked at each moment rebalances completed: 8, 1010, 11010, 20012
    assert result["invariants"]["checked"]["all_owned_when_stable"] == 4


def test_invariants_catch_a_consumer_group_gone_wrong():
    events = [json.loads(line) for line in (DATA / "events.jsonl").read_text().splitlines()]
    scenario = json.loads((DATA / "scenario.json").read_text())
    broken = []
    for e in events:
        if e["event"] == "client.assigned" and e["ts_ms"] == 11010:   # m002 takes t1 and t2 (m001's)
            e = dict(e, partitions=[["t", 1], ["t", 2]], owned=[["t", 1], ["t", 2]])
        if e["event"] == "client.state" and e["ts_ms"] == 10014:      # m000's epoch goes back
            e = dict(e, generation=1)
        broken.append(e)
    inv = analyze_group("g", broken, group_partitions(scenario, "g"))["invariants"]
    assert inv["failed"]["single_owner"] == 1 and inv["failed"]["generations_grow"] == 1


BOUNDS = {"group.consumer.min.heartbeat.interval.ms": 500, "group.consumer.min.session.timeout.ms": 6000}


def simulated(topics: dict, members: int, events: list, *, group_topics=None, duration_s=40) -> dict:
    from groupcoord.sim import scenario, simulate
    sc = scenario.from_dict({
        "duration_s": duration_s, "topics": topics, "coordinator": {"config": BOUNDS},
        "groups": [{"name": "g", "group_protocol": "consumer", "topics": group_topics or list(topics),
                    "members": members, "session_timeout_ms": 6000, "heartbeat_interval_ms": 500}],
        "events": events})
    events, _, resolved = simulate.simulate(sc, 1)
    return analyze_group("g", events, group_partitions(json.loads(json.dumps(resolved)), "g")), events


def test_a_dropped_topic_does_not_hold_the_rebalances_open():
    # a:4 and b:4, then every member subscribes to a alone at 10 s: b is nobody's from then on
    result, events = simulated({"a": 4, "b": 4}, 3, [{"at_s": 10, "action": "subscribe", "topics": ["a"]}])
    later = [r for r in result["rebalances"] if r["start_ms"] >= 10000]
    assert later and {r["trigger"] for r in later} == {"subscription_changed"}
    assert {r["outcome"] for r in later} == {"Stable"}
    # about a heartbeat interval (500 ms) or two, and Kafka 4.3's assignment interval (1 s) at most
    assert max(r["duration_ms"] for r in later) < 2500
    assert result["invariants"]["failed"]["all_owned_when_stable"] == 0


def test_a_fenced_member_still_running_is_not_waited_for():
    # member 0 freezes for 25 s (a GC pause): fenced at its 6 s session; the others take its
    # partitions, and that rebalance completes without it, though it runs on (frozen)
    result, events = simulated({"a": 6}, 3, [{"at_s": 10, "action": "slow", "members": [0], "kind": "heartbeat",
                                              "duration_ms": 25000}], duration_s=60)
    fenced = next(r for r in result["rebalances"] if r["trigger"] == "member_fenced")
    stable = next(e["ts_ms"] for e in events if e["event"] == "group.state_change" and e["state_to"] == "Stable"
                  and e["ts_ms"] >= fenced["start_ms"])
    assert fenced["outcome"] == "Stable" and fenced["members"] == 2
    assert fenced["end_ms"] - stable < 500 and fenced["end_ms"] < 35000   # not when the frozen one thaws


def test_a_group_whose_members_all_died_ends_empty():
    result, _ = simulated({"a": 4}, 2, [{"at_s": 10, "action": "crash", "members": [0, 1]}])
    fenced = [r for r in result["rebalances"] if r["trigger"] == "member_fenced"]
    assert len(fenced) == 2 and {r["outcome"] for r in fenced} == {"Empty"}
    # the first fence's rebalance ends with the second, a few ms later (the sessions end apart)
    assert all(r["members"] == 0 and r["duration_ms"] < 500 for r in fenced)
    assert fenced[-1]["duration_ms"] == 0


def test_an_upgrade_and_a_downgrade_keep_members_ownership_and_commits():
    # a synthetic log: a classic group (generation 3) under way when a consumer-protocol member
    # joins and the group is converted; then that member leaves and the group goes back
    def c(kind, ts, gen, state, members, **kw):
        return {"v": 1, "event": kind, "ts_ms": ts, "group": "g", "generation": gen, "state": state,
                "members": members, **kw}

    def m(kind, ts, client, member, gen, **kw):
        return {"v": 1, "event": kind, "ts_ms": ts, "group": "g", "client": client, "member": member,
                "generation": gen, **kw}
    events = [
        m("client.started", 0, "g/m0", "", -1, strategy=["range"], protocol="eager", instance_id=None),
        c("group.created", 1, 0, "Empty", 0, protocol_type="consumer", cause="join_group"),
        c("member.joined", 2, 0, "PreparingRebalance", 1, member="A", instance_id=None, client_id="g/m0",
          client_host="/h", protocol_type="consumer", protocols=["range"], session_timeout_ms=45000,
          rebalance_timeout_ms=300000, reason=None, leader=True),
        c("rebalance.started", 2, 0, "PreparingRebalance", 1, state_from="Empty", reason="new_member", member="A",
          client_reason=None, round=1, initial=True, rebalance_timeout_ms=300000, delay_ms=0),
        c("rebalance.completed", 10, 1, "Stable", 1, outcome="Stable", duration_ms=8, rounds=1, protocol="range",
          leader="A"),
        m("client.assigned", 11, "g/m0", "A", 1, partitions=[["t", 0], ["t", 1]], owned=[["t", 0], ["t", 1]]),
        m("client.committed", 20, "g/m0", "A", 1, offsets=[["t", 0, 50]]),
        c("rebalance.started", 30, 1, "PreparingRebalance", 1, state_from="Stable", reason="metadata_changed",
          member=None, client_reason=None, round=1, initial=False, rebalance_timeout_ms=300000, delay_ms=None),
        # the consumer-protocol member B converts the group while that rebalance is under way
        m("client.started", 40, "g/m1", "B", 0, strategy=[], protocol="consumer", instance_id=None),
        c("group.deleted", 41, 1, "Dead", 1, reason="converted", offsets=1),
        c("group.created", 41, 1, "Stable", 1, protocol_type="consumer", cause="upgrade"),
        c("consumer.group_epoch_bumped", 41, 2, "Stable", 1, member="B", reason="member_joined"),
        c("consumer.member_joined", 41, 2, "Reconciling", 2, member="B", instance_id=None, client_id="g/m1",
          client_host="/h", subscribed_topics=["t"], server_assignor=None),
        m("client.state", 42, "g/m1", "B", 2, state="STABLE"),
        m("client.revoked", 45, "g/m0", "A", 2, partitions=[["t", 1]], owned=[["t", 0]]),
        m("client.assigned", 50, "g/m1", "B", 2, partitions=[["t", 1]], owned=[["t", 1]]),
        m("client.state", 50, "g/m1", "B", 2, state="STABLE"),
        m("client.committed", 55, "g/m0", "A", 2, offsets=[["t", 0, 60]]),
        # B leaves: the group goes back to classic
        m("client.revoked", 60, "g/m1", "B", 2, partitions=[["t", 1]], owned=[]),
        c("consumer.group_epoch_bumped", 61, 3, "Reconciling", 1, member="B", reason="member_left"),
        c("consumer.member_left", 61, 3, "Reconciling", 1, member="B", instance_id=None, static=False),
        c("group.deleted", 61, 3, "Dead", 1, reason="converted", offsets=1),
        c("group.created", 61, 3, "Empty", 1, protocol_type="consumer", cause="downgrade"),
        m("client.stopped", 62, "g/m1", "B", -1, reason="close"),
    ]
    result = analyze_group("g", events, frozenset({("t", 0), ("t", 1)}))
    rows = [(r["generation"], r["protocol"], r["outcome"]) for r in result["rebalances"]]
    # the classic rebalance cut short by the upgrade is incomplete; the consumer group's first
    # completes at B's STABLE with every partition owned (A, a classic member, has no member
    # states in the log: it is not waited for); its second is cut short by the downgrade
    assert rows == [(1, "range", "Stable"), (None, None, "incomplete"), (2, "consumer", "Stable"),
                    (3, "consumer", "converted")]
    assert result["rebalances"][2]["end_ms"] == 42 and result["rebalances"][3]["end_ms"] == 61
    assert result["group"]["zombie_overlaps"] == 0
    assert result["invariants"]["failed"] == dict.fromkeys(result["invariants"]["failed"], 0)
    # A kept t0 through both conversions: unowned are both partitions until A's first assignment
    # [0, 11), then only t1, from A's revocation at 45 to B's assignment at 50, and from B's
    # revocation at 60 to the log's end at 62
    assert result["group"]["unowned_partition_ms"] == 2 * 11 + 5 + 2
