"""The per-group computation and the invariant checker on hand-made logs (no Spark).

tests/analytics/data holds logs written by hand: ``eager`` (range: A alone, B joins, A closes),
``cooperative`` (cooperative-sticky over 5 partitions: B joins in two rounds, then crashes and
expires) and ``serve-events.jsonl`` (the coordinator events of ``eager`` only). The expected values
were computed by hand from the events (see the comments).
"""
import copy
import itertools
import json
import random
from pathlib import Path

from groupcoord.analytics import check_invariants, check_log, min_moves
from groupcoord.analytics.model import Timeline, analyze_group, group_partitions

DATA = Path(__file__).parent / "data"


def load(name):
    path = DATA / name
    if path.is_dir():
        events = [json.loads(line) for line in (path / "events.jsonl").read_text().splitlines() if line]
        return events, json.loads((path / "scenario.json").read_text())
    return [json.loads(line) for line in path.read_text().splitlines() if line], None


def run(name, group):
    events, scenario = load(name)
    return analyze_group(group, events, group_partitions(scenario, group))


def pick(rows, keys):
    return [{k: r[k] for k in keys} for r in rows]


KEYS = ("generation", "trigger", "start_ms", "end_ms", "duration_ms", "members", "partitions_moved", "min_moves",
        "partitions_revoked", "settle_ms", "member_idle_ms", "max_member_idle_ms", "unowned_partition_ms", "balance")


def test_eager_rebalances():
    r = run("eager", "g")
    assert pick(r["rebalances"], KEYS) == [
        # A joins alone: 4 partitions from no owner to A; A idle 10..27; 4 unowned over 17 ms
        {"generation": 1, "trigger": "new_member", "start_ms": 10, "end_ms": 25, "duration_ms": 15, "members": 1,
         "partitions_moved": 4, "min_moves": 4, "partitions_revoked": 0, "settle_ms": 27,
         "member_idle_ms": {"g/m0": 17}, "max_member_idle_ms": 17, "unowned_partition_ms": 68, "balance": 0},
        # B joins: A revokes all 4 at 1010, gets 0,1 back at 1032; B gets 2,3 at 1040.
        # unowned: 4 over 1010..1032 + 2 over 1032..1040 = 88 + 16
        {"generation": 2, "trigger": "new_member", "start_ms": 1005, "end_ms": 1030, "duration_ms": 25, "members": 2,
         "partitions_moved": 2, "min_moves": 2, "partitions_revoked": 4, "settle_ms": 1040,
         "member_idle_ms": {"g/m0": 22, "g/m1": 35}, "max_member_idle_ms": 35, "unowned_partition_ms": 104,
         "balance": 0},
        # A revokes 0,1 and closes at 3000 (before the rebalance: counted here), B revokes 2,3 at 3010
        # and takes all 4 at 3030; unowned: 2 over 3002..3010 + 4 over 3010..3030
        {"generation": 3, "trigger": "member_left", "start_ms": 3002, "end_ms": 3025, "duration_ms": 23, "members": 1,
         "partitions_moved": 2, "min_moves": 2, "partitions_revoked": 4, "settle_ms": 3030,
         "member_idle_ms": {"g/m1": 20}, "max_member_idle_ms": 20, "unowned_partition_ms": 96, "balance": 0},
    ]
    assert all(x["settled"] and x["outcome"] == "Stable" and x["member_events"] for x in r["rebalances"])
    # 4 x 27 (start) + 4 x 22 + 2 x 8 (B joins) + 2 x 10 + 4 x 20 (A leaves)
    assert r["group"]["unowned_partition_ms"] == 108 + 88 + 16 + 20 + 80


def test_eager_sessions():
    r = run("eager", "g")
    keys = ("client", "member", "start_ms", "end_ms", "duration_ms", "end_reason", "generations", "assignments",
            "partitions_assigned", "partitions_revoked", "commits", "max_owned", "time_without_partitions_ms")
    assert pick(r["sessions"], keys) == [
        {"client": "g/m0", "member": "A-1", "start_ms": 0, "end_ms": 3000, "duration_ms": 3000, "end_reason": "close",
         "generations": 2, "assignments": 2, "partitions_assigned": 6, "partitions_revoked": 6, "commits": 1,
         "max_owned": 4, "time_without_partitions_ms": 27 + 22},
        {"client": "g/m1", "member": "B-1", "start_ms": 1000, "end_ms": None, "duration_ms": 3000, "end_reason": None,
         "generations": 2, "assignments": 2, "partitions_assigned": 6, "partitions_revoked": 2, "commits": 1,
         "max_owned": 4, "time_without_partitions_ms": 40 + 20},
    ]


def test_cooperative_rebalances():
    r = run("cooperative", "c")
    assert pick(r["rebalances"], KEYS) == [
        {"generation": 1, "trigger": "new_member", "start_ms": 5, "end_ms": 20, "duration_ms": 15, "members": 1,
         "partitions_moved": 5, "min_moves": 5, "partitions_revoked": 0, "settle_ms": 22,
         "member_idle_ms": {"c/m0": 17}, "max_member_idle_ms": 17, "unowned_partition_ms": 85, "balance": 0},
        # first cooperative round: A gives up 3,4 (to no owner: 2 moves); the balanced minimum over
        # A, B (shares 3 and 2) is 2; A keeps 3, B none: balance 3
        {"generation": 2, "trigger": "new_member", "start_ms": 505, "end_ms": 525, "duration_ms": 20, "members": 2,
         "partitions_moved": 2, "min_moves": 2, "partitions_revoked": 2, "settle_ms": 529,
         "member_idle_ms": {"c/m0": 0, "c/m1": 24}, "max_member_idle_ms": 24, "unowned_partition_ms": 4,
         "balance": 3},
        # the follow-up: 3,4 from no owner to B
        {"generation": 3, "trigger": "leader_rejoined", "start_ms": 532, "end_ms": 542, "duration_ms": 10,
         "members": 2, "partitions_moved": 2, "min_moves": 2, "partitions_revoked": 0, "settle_ms": 546,
         "member_idle_ms": {"c/m0": 0, "c/m1": 14}, "max_member_idle_ms": 14, "unowned_partition_ms": 28,
         "balance": 1},
        # B crashed at 3000 (its partitions have no owner since), expired at 13000; A takes 3,4
        {"generation": 4, "trigger": "member_expired", "start_ms": 13000, "end_ms": 13030, "duration_ms": 30,
         "members": 1, "partitions_moved": 2, "min_moves": 2, "partitions_revoked": 0, "settle_ms": 13033,
         "member_idle_ms": {"c/m0": 0}, "max_member_idle_ms": 0, "unowned_partition_ms": 66, "balance": 0},
    ]
    assert r["group"]["unowned_partition_ms"] == 5 * 22 + 2 * (546 - 527) + 2 * (13033 - 3000)
    inv = r["invariants"]
    assert inv["status"] == dict.fromkeys(inv["status"], "pass")
    # generations 1, 3 and 4 are checked for full ownership; 2 is a first cooperative round
    assert inv["checked"]["all_owned_when_stable"] == 3
    sessions = {s["client"]: s for s in r["sessions"]}
    assert sessions["c/m1"]["end_reason"] == "crash" and sessions["c/m1"]["time_without_partitions_ms"] == 46
    assert sessions["c/m0"]["partitions_assigned"] == 7 and sessions["c/m0"]["generations"] == 4


def test_coordinator_events_only():
    r = run("serve-events.jsonl", "g")
    assert [(x["generation"], x["trigger"], x["duration_ms"], x["members"]) for x in r["rebalances"]] == [
        (1, "new_member", 15, 1), (2, "new_member", 25, 2), (3, "member_left", 23, 1)]
    for x in r["rebalances"]:
        assert x["member_events"] is False
        assert x["partitions_moved"] is None and x["min_moves"] is None and x["member_idle_ms"] is None
    assert pick(r["sessions"], ("source", "member", "start_ms", "end_ms", "end_reason", "duration_ms")) == [
        {"source": "coordinator", "member": "A-1", "start_ms": 10, "end_ms": 3002, "end_reason": "left",
         "duration_ms": 2992},
        {"source": "coordinator", "member": "B-1", "start_ms": 1005, "end_ms": None, "end_reason": None,
         "duration_ms": 3999 - 1005},
    ]
    assert r["group"]["unowned_partition_ms"] is None
    assert r["invariants"]["status"] == {"single_owner": "skipped", "all_owned_when_stable": "skipped",
                                         "generations_grow": "pass", "commits_kept": "skipped"}


# ------------------------------------------------------------------ minimum movement
def brute_min(before, members, universe):
    """Least owner changes over every balanced assignment, by enumeration."""
    universe = sorted(universe)
    owner = {tp: c for c, s in before.items() for tp in s}
    if not members:
        return sum(1 for tp in universe if tp in owner)
    q, r = divmod(len(universe), len(members))
    best = None
    for combo in itertools.product(members, repeat=len(universe)):
        counts = [combo.count(m) for m in members]
        if sorted(counts) != sorted([q + 1] * r + [q] * (len(members) - r)):
            continue
        cost = sum(1 for tp, m in zip(universe, combo) if owner.get(tp) != m)
        best = cost if best is None else min(best, cost)
    return best


def test_min_moves_by_hand():
    tps = [("t", p) for p in range(7)]
    # 7 over 3: shares 3,2,2; A had all: keeps 3
    assert min_moves({"A": frozenset(tps)}, ["A", "B", "C"], tps) == 4
    # had 3,3,1: each keeps up to 2, one of those with more than 2 keeps 3
    before = {"A": frozenset(tps[:3]), "B": frozenset(tps[3:6]), "C": frozenset(tps[6:])}
    assert min_moves(before, ["A", "B", "C"], tps) == 1
    # the group empties: every owned partition loses its owner
    assert min_moves(before, [], tps) == 7


def test_min_moves_against_enumeration():
    rng = random.Random(5)
    for _ in range(150):
        universe = [("t", p) for p in range(rng.randint(1, 6))]
        clients = ["A", "B", "C", "D"][:rng.randint(1, 4)]
        before = {c: set() for c in clients}
        for tp in universe:
            owner = rng.choice(clients + [None])
            if owner:
                before[owner].add(tp)
        before = {c: frozenset(s) for c, s in before.items()}
        members = rng.sample(clients + ["N"], rng.randint(0, min(3, len(clients) + 1)))
        assert min_moves(before, members, universe) == brute_min(before, members, universe), (before, members)


def test_timeline_integrate():
    tl = Timeline()
    tl.set(10, 2)
    tl.set(20, None)
    tl.set(30, 0)
    f = lambda v: v or 0  # noqa: E731
    assert tl.integrate(0, 100, f) == 20
    assert tl.integrate(15, 25, f) == 10
    assert tl.integrate(0, 100, lambda v: v == 0) == 70


# ------------------------------------------------------------------ invariants
def test_hand_logs_pass():
    for name in ("eager", "cooperative"):
        result = check_log(DATA / name)
        assert {k: v["status"] for k, v in result.items()} == dict.fromkeys(result, "pass"), name
    assert check_log(DATA / "serve-events.jsonl")["generations_grow"]["status"] == "pass"


def edited(name, edit):
    events, scenario = load(name)
    events = copy.deepcopy(events)
    edit(events)
    return check_invariants(events, scenario)


def find(events, kind, ts, client=None):
    return next(e for e in events if e["event"] == kind and e["ts_ms"] == ts and e.get("client", client) == client)


def test_single_owner_broken():
    def edit(events):   # A takes 0,1,2 in generation 2: B's 2 is then owned twice
        e = find(events, "client.assigned", 1032, "g/m0")
        e["partitions"] = e["owned"] = [["t", 0], ["t", 1], ["t", 2]]
    result = edited("eager", edit)
    assert result["single_owner"]["status"] == "fail" and result["single_owner"]["failed"] == 1
    ex = result["single_owner"]["counterexamples"][0]
    assert ex["ts_ms"] == 1040 and ex["detail"]["partition"] == ["t", 2]
    assert ex["detail"]["owners"] == ["g/m0", "g/m1"]


def test_single_owner_cooperative_handover_broken():
    def edit(events):   # A never revokes 3,4 in the first round: B takes them while A holds them
        events.remove(find(events, "client.revoked", 527, "c/m0"))
        for ts in (527, 544):
            find(events, "client.assigned", ts, "c/m0")["owned"] = [["t", p] for p in range(5)]
    result = edited("cooperative", edit)
    assert result["single_owner"]["failed"] == 2
    owned_twice = {tuple(ex["detail"]["partition"]) for ex in result["single_owner"]["counterexamples"]}
    assert owned_twice == {("t", 3), ("t", 4)}


def frozen_b(events):
    """B freezes at 3000 instead of crashing, and finds out at 20000 that its partitions are lost."""
    events.remove(find(events, "client.stopped", 3000, "c/m1"))
    events.append({"v": 1, "event": "client.lost", "ts_ms": 20000, "group": "c", "client": "c/m1",
                   "member": "B-1", "generation": -1, "partitions": [["t", 3], ["t", 4]], "owned": []})


def test_frozen_member_owns_nothing_once_out_of_the_group():
    events, scenario = load("cooperative")
    frozen_b(events)
    r = analyze_group("c", events, group_partitions(scenario, "c"))
    assert r["invariants"]["status"]["single_owner"] == "pass"
    # 3,4 lose their owner when the coordinator expires B (13000), not when B froze
    assert r["group"]["unowned_partition_ms"] == 5 * 22 + 2 * (546 - 527) + 2 * (13033 - 13000)
    assert r["sessions"][1]["partitions_lost"] == 2


def test_single_owner_broken_by_a_member_still_in_the_group():
    def edit(events):   # ... but if the coordinator never removed B, A takes 3,4 from a member
        frozen_b(events)
        events.remove(find(events, "member.expired", 13000))
    result = edited("cooperative", edit)
    assert result["single_owner"]["failed"] == 2
    assert result["single_owner"]["counterexamples"][0]["detail"]["owners"] == ["c/m0", "c/m1"]


def test_all_owned_when_stable_broken():
    def edit(events):   # B takes only 2 in generation 2: 3 has no owner though the group is Stable
        e = find(events, "client.assigned", 1040, "g/m1")
        e["partitions"] = e["owned"] = [["t", 2]]
    result = edited("eager", edit)
    r = result["all_owned_when_stable"]
    assert r["status"] == "fail" and r["failed"] == 1
    assert r["counterexamples"][0]["ts_ms"] == 1040
    assert r["counterexamples"][0]["detail"] == {"generation": 2, "unowned": [["t", 3]], "count": 1}


def test_subscription_change_drops_the_old_topic():
    def edit(events):   # B switches to topic u: generation 3 gives it u-0, u-1 and nothing of t
        e = find(events, "client.assigned", 3030, "g/m1")
        e["partitions"] = e["owned"] = [["u", 0], ["u", 1]]
    events, scenario = load("eager")
    edit(events)
    r = analyze_group("g", events, group_partitions(scenario, "g"))
    assert r["invariants"]["status"]["all_owned_when_stable"] == "pass"
    assert r["group"]["partitions"] == 2
    # t's 4 partitions have no owner from B's revocation (3010) until generation 3 settles (3030)
    assert r["group"]["unowned_partition_ms"] == 108 + 88 + 16 + 2 * 10 + 4 * 20
    assert r["rebalances"][2]["partitions_moved"] == 2 and r["rebalances"][2]["min_moves"] == 2

    def partial(events):   # ... but losing part of a topic still counts
        edit(events)
        find(events, "client.assigned", 3030, "g/m1")["owned"] = [["u", 0], ["t", 0]]
    result = edited("eager", partial)["all_owned_when_stable"]
    assert result["status"] == "fail"
    assert result["counterexamples"][0]["detail"]["unowned"] == [["t", 1], ["t", 2], ["t", 3]]


def test_generations_grow_broken():
    def edit(events):   # the third rebalance goes back to generation 1
        for e in events:
            if e["ts_ms"] >= 3020 and "state" in e:
                e["generation"] = 1
    result = edited("eager", edit)
    r = result["generations_grow"]
    assert r["status"] == "fail"
    first = r["counterexamples"][0]
    assert first["ts_ms"] == 3020 and first["detail"]["generation"] == 1 and first["detail"]["before"] == 2


def test_generations_may_restart_after_delete():
    def edit(events):
        events.append({"v": 1, "event": "group.deleted", "ts_ms": 5000, "group": "g", "generation": 3,
                       "state": "Dead", "members": 0, "reason": "delete_groups", "offsets": 1})
        events.append({"v": 1, "event": "group.created", "ts_ms": 5001, "group": "g", "generation": 0,
                       "state": "Empty", "members": 0, "protocol_type": None, "cause": "offset_commit"})
    assert edited("eager", edit)["generations_grow"]["status"] == "pass"


def test_commits_kept_broken():
    def edit(events):   # B's acknowledged commit of t-0 goes back from 5 to 3
        find(events, "client.committed", 4000, "g/m1")["offsets"] = [["t", 0, 3]]
    result = edited("eager", edit)
    r = result["commits_kept"]
    assert r["status"] == "fail"
    assert r["counterexamples"][0]["detail"] == {"partition": ["t", 0], "offset": 3, "client": "g/m1",
                                                 "acknowledged_before": 5, "by": "g/m0", "at_ms": 2000}

    def deleted(events):  # ... unless the offsets were deleted in between
        edit(events)
        events.append({"v": 1, "event": "offsets.deleted", "ts_ms": 3500, "group": "g", "generation": 3,
                       "state": "Stable", "members": 1, "partitions": 1})
    assert edited("eager", deleted)["commits_kept"]["status"] == "pass"


def test_group_partitions_both_scenario_shapes():
    listed = {"topics": [{"name": "t", "partitions": 2}], "groups": [{"id": "g", "topics": ["t"]}]}
    fleet = {"topics": {"t": 2}, "groups": [{"name": "g", "count": 2, "topics": ["t"]}]}
    assert group_partitions(listed, "g") == {("t", 0), ("t", 1)}
    assert group_partitions(fleet, "g-1") == {("t", 0), ("t", 1)}
    assert group_partitions(fleet, "other") == frozenset()


# ------------------------------------------------------------------ assignments after the next rebalance started
def moved_late(name, kinds_at, to):
    """The log with the events of ``kinds_at`` [(event, ts, client)] moved to time ``to``."""
    events, scenario = load(name)
    for kind, ts, client in kinds_at:
        find(events, kind, ts, client)["ts_ms"] = to
    events.sort(key=lambda e: e["ts_ms"])
    return events, scenario


def test_a_members_first_assignment_after_the_next_rebalance_started():
    # A's client.assigned of generation 1 (its first event naming its member id A-1) arrives after
    # B's join started generation 2's rebalance (1005): before, the finalised rebalance 1 held A
    # under its member id and the row raised KeyError: 'g/m0'. It is rebalance 1's after (A took
    # 4 partitions, settled at 1006) and what A brings into rebalance 2.
    events, scenario = moved_late("eager", [("client.assigned", 27, "g/m0")], 1006)
    r = analyze_group("g", events, group_partitions(scenario, "g"))
    rows = [(x["generation"], x["settle_ms"], x["partitions_moved"], x["min_moves"]) for x in r["rebalances"]]
    assert rows == [(1, 1006, 4, 4), (2, 1040, 2, 2), (3, 3030, 2, 2)]
    assert r["invariants"]["status"] == dict.fromkeys(r["invariants"]["status"], "pass")


def test_a_revocation_after_the_follow_up_started_belongs_to_its_generation():
    # A's revocation of 3,4 and its assignment of generation 2 (first cooperative round) arrive
    # after the follow-up rebalance started (532): they are still generation 2's. Before: moved
    # 0 < min_moves 2 for generation 2 (its after cut at 532, when A still held 3,4) and the
    # revocation counted in generation 3.
    events, scenario = moved_late("cooperative", [("client.revoked", 527, "c/m0"),
                                                  ("client.assigned", 527, "c/m0")], 534)
    r = analyze_group("c", events, group_partitions(scenario, "c"))
    rows = [(x["generation"], x["settle_ms"], x["partitions_moved"], x["min_moves"], x["partitions_revoked"])
            for x in r["rebalances"]]
    assert rows == [(1, 22, 5, 5, 0), (2, 534, 2, 2, 2), (3, 546, 2, 2, 0), (4, 13033, 2, 2, 0)]
    assert r["invariants"]["status"] == dict.fromkeys(r["invariants"]["status"], "pass")
