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
    # before: nothing owned at 7; after: m000 t0-t3, m001 none. All 4 move from "no owner"; a
    # balanced 2/2 from nothing needs 4 moves too. Unowned [7, 8): 4 partitions x 1 ms
    assert (r1["partitions_moved"], r1["min_moves"], r1["balance"], r1["unowned_partition_ms"]) == (4, 4, 4, 4)
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
