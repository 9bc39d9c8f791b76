"""`groupcoord fleet --processes N` (the members over N processes, one log) and `--shard I/N` (the
members over N hosts driving one daemon)."""
from __future__ import annotations

import asyncio
import json
import time
from collections import Counter

import pytest

from groupcoord.sim import fleet, scenario
from groupcoord.sim.processes import child_shards
from groupcoord.cli import main
from groupcoord.coordinator.embed import ThreadedCoordinator

# two groups of five; at 1 s two members of each group crash (picked with the seed: every
# process must pick the same two), at 1.5 s two join; the run ends once every group is stable
SCENARIO = {
    "name": "small", "duration_s": 40, "topics": {"orders": 6},
    "coordinator": {"profile": "test", "config": {"group.initial.rebalance.delay.ms": 300}},
    "groups": [{"name": "g", "count": 2, "topics": ["orders"], "members": 5, "session_timeout_ms": 1500,
                "heartbeat_interval_ms": 200, "processing_ms": 100}],
    "events": [{"at_ms": 1000, "action": "crash", "count": 2}, {"at_ms": 1500, "action": "join", "count": 2}],
}


def member_view(events: list[dict]) -> dict:
    """What does not depend on timing: who started and stopped how, and who owns what at the end."""
    started = sorted(e["client"] for e in events if e["event"] == "client.started")
    stopped = sorted((e["client"], e["reason"]) for e in events if e["event"] == "client.stopped")
    owned: dict[str, set] = {}
    for e in events:
        if e["event"] == "client.assigned":
            owned.setdefault(e["client"], set()).update(map(tuple, e["partitions"]))
        elif e["event"] in ("client.revoked", "client.lost"):
            owned.get(e["client"], set()).difference_update(map(tuple, e["partitions"]))
        elif e["event"] == "client.stopped":
            owned.pop(e["client"], None)
    return {"started": started, "stopped": stopped, "owned": {c: sorted(p) for c, p in owned.items() if p}}


def stable_part(summary: dict) -> dict:
    return {gid: {k: g[k] for k in ("state", "members", "clients_started", "stops", "expired",
                                    "ownership_violations", "final")}
            for gid, g in summary["groups"].items()}


async def test_two_processes_give_the_members_events_and_summary_of_one(tmp_path):
    sc = scenario.from_dict(SCENARIO)
    one, two = await asyncio.gather(fleet.run(sc, 5, tmp_path / "one", until_stable=True),
                                    fleet.run(sc, 5, tmp_path / "two", until_stable=True, processes=2))
    assert one.final == two.final == {"g-0": "ok", "g-1": "ok"}
    view = member_view(one.sorted_events)
    assert view == member_view(two.sorted_events)
    assert len(view["started"]) == 14 and Counter(c.split("/")[0] for c, _ in view["stopped"]) == {"g-0": 2, "g-1": 2}
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("one", "two")]
    parts = [stable_part(s) for s in summaries]
    assert sorted(parts[0]) == sorted(parts[1]) == ["g-0", "g-1"]
    for gid in parts[0]:      # (key by key: a failure names what differs)
        for key, value in parts[0][gid].items():
            assert value == parts[1][gid][key], (gid, key, value, parts[1][gid][key])
        assert parts[0][gid]["ownership_violations"] == 0, gid
    assert parts[0] == parts[1]       # (and no key of the second run's that the first lacks)
    assert summaries[0]["clients"] == summaries[1]["clients"] == 14 and summaries[1]["processes"] == 2
    for g in summaries[1]["groups"].values():
        assert g["final"] == {"check": "ok", "running_clients": 5} and g["state"] == "Stable"
    # one log, merged in time order, with the coordinator's events (the parent's) and every member's
    log = [json.loads(line) for line in (tmp_path / "two" / "events.jsonl").read_text().splitlines()]
    assert [e["ts_ms"] for e in log] == sorted(e["ts_ms"] for e in log)
    assert {e["event"] for e in log} >= {"client.started", "client.assigned", "rebalance.completed", "member.expired"}
    assert json.loads((tmp_path / "two" / "scenario.json").read_text())["processes"] == 2


@pytest.mark.parametrize("shard,processes", [((0, 1), 3), ((1, 2), 2), ((2, 3), 4)])
def test_the_processes_of_a_shard_own_its_members_once(shard, processes):
    owners = Counter()
    for i, n in child_shards(shard, processes):
        owners.update(x for x in range(200) if x % n == i)
    assert owners == Counter(x for x in range(200) if x % shard[1] == shard[0])


async def test_two_shards_against_one_daemon_run_every_member_once(tmp_path):
    # both shards start their clocks at one wall time and run 5 s (each shard's own check cannot
    # see the other's members: --until-stable would end a shard while the other still rebalances)
    sc = scenario.apply_overrides(scenario.from_dict(SCENARIO), {"duration_s": 5})
    start = time.time() + 1.5
    daemon_events: list[dict] = []
    with ThreadedCoordinator(topics={"orders": 6}, config={"group.initial.rebalance.delay.ms": 300},
                             emit=daemon_events.append) as gc:
        # shard 1/2 itself over two processes (shards 1/4 and 3/4)
        s0, s1 = await asyncio.gather(
            fleet.run(sc, 5, tmp_path / "s0", bootstrap=gc.bootstrap_servers, shard=(0, 2), start_at=start),
            fleet.run(sc, 5, tmp_path / "s1", bootstrap=gc.bootstrap_servers, shard=(1, 2), processes=2,
                      start_at=start))
    # the daemon saw each group stable with the five members of both shards (once one shard has
    # ended, its members' sessions expire while the other holds on: the state at the end is no proof)
    assert {e["group"] for e in daemon_events if e["event"] == "rebalance.completed" and e["state"] == "Stable"
            and e["members"] == 5} == {"g-0", "g-1"}
    assert s0.final == s1.final == {"g-0": "ok", "g-1": "ok"}
    views = [member_view(r.sorted_events) for r in (s0, s1)]
    started = [set(v["started"]) for v in views]
    assert not started[0] & started[1]
    assert started[0] | started[1] == {f"{g}/m{i:03d}" for g in ("g-0", "g-1") for i in range(7)}
    assert all(int(c[-3:]) % 2 == k for k in (0, 1) for c in started[k])
    # the crash picks the same two members of each group in both shards: two crashes per group in all
    crashed = Counter(c.split("/")[0] for v in views for c, reason in v["stopped"] if reason == "crash")
    assert crashed == {"g-0": 2, "g-1": 2}
    # the shards' partitions together: each exactly once
    owned = Counter((c.split("/")[0], tuple(p)) for v in views for c, ps in v["owned"].items() for p in ps)
    assert owned == Counter((g, ("orders", p)) for g in ("g-0", "g-1") for p in range(6))
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("s0", "s1")]
    assert [s["shard"] for s in summaries] == ["0/2", "1/2"] and [s["clients"] for s in summaries] == [8, 6]
    assert json.loads((tmp_path / "s1" / "scenario.json").read_text())["shard"] == [1, 2]


@pytest.mark.parametrize("args,message", [
    (["--processes", "0"], "--processes 0: expected a whole number of processes, 1 or more"),
    (["--processes", "two"], "--processes two: expected a whole number of processes, 1 or more"),
    (["--shard", "2/2", "--bootstrap", "127.0.0.1:1"], "--shard 2/2: expected I/N with 0 <= I < N (e.g. 0/2 and 1/2 on two hosts)"),
    (["--shard=-1/2", "--bootstrap", "127.0.0.1:1"], "--shard -1/2: expected I/N with 0 <= I < N (e.g. 0/2 and 1/2 on two hosts)"),
    (["--shard", "1", "--bootstrap", "127.0.0.1:1"], "--shard 1: expected I/N with 0 <= I < N (e.g. 0/2 and 1/2 on two hosts)"),
    (["--shard", "a/b", "--bootstrap", "127.0.0.1:1"], "--shard a/b: expected I/N with 0 <= I < N (e.g. 0/2 and 1/2 on two hosts)"),
    (["--shard", "0/2"], "--shard 0/2 needs --bootstrap: the shards of a scenario drive one daemon"),
    (["--start-at", "soon"], "--start-at soon: expected a wall time in seconds since the epoch, within a day of now "
                             "(e.g. $(($(date +%s) + 10)))"),
])
def test_bad_processes_and_shards_are_one_line_errors(tmp_path, capsys, args, message):
    path = tmp_path / "s.toml"
    path.write_text('[topics]\nt = 1\n[[groups]]\nname = "g"\ntopics = ["t"]\n')
    assert main(["fleet", str(path), "--no-progress", *args]) == 2
    out, err = capsys.readouterr()
    assert err == f"groupcoord: {message}\n" and out == ""


async def test_one_shard_produces_and_the_shards_process_every_record(tmp_path):
    # a work queue of four members in two shards against a daemon of two nodes (the producer finds
    # each partition's leader through the bootstrap's Metadata): shard 0 alone produces, so the
    # topic gets the scenario's 200 records once, and the shards' members process and commit them
    sc = scenario.from_dict({
        "name": "work", "duration_s": 4, "topics": {"jobs": 4},
        "groups": [{"name": "q", "topics": ["jobs"], "members": 4, "job_ms": 1, "auto_commit": False,
                    "session_timeout_ms": 6000, "heartbeat_interval_ms": 300}],
        "produce": [{"topic": "jobs", "rate_per_s": 100, "stop_s": 2}]})
    start = time.time() + 1.5
    with ThreadedCoordinator(nodes=2, topics={"jobs": 4}, config={"group.initial.rebalance.delay.ms": 0}) as gc:
        s0, s1 = await asyncio.gather(
            fleet.run(sc, 5, tmp_path / "s0", bootstrap=gc.bootstrap_servers, shard=(0, 2), start_at=start),
            fleet.run(sc, 5, tmp_path / "s1", bootstrap=gc.bootstrap_servers, shard=(1, 2), start_at=start))
        ends = gc.call(lambda: [gc.service.cluster.log("jobs", p).log_end_offset for p in range(4)])
        leaders = gc.call(lambda: {gc.service.cluster.leader_for("jobs", p) for p in range(4)})
    assert ends == [50] * 4 and leaders == {0, 1}
    logs = [s0.sorted_events, s1.sorted_events]
    produced = [[e for e in log if e["event"] == "producer.produced"] for log in logs]
    assert not produced[1] and sum(e["last"] - e["first"] + 1 for e in produced[0]) == 200
    assert sorted((e["partition"], o) for e in produced[0] for o in range(e["first"], e["last"] + 1)) == \
        [(p, o) for p in range(4) for o in range(50)]
    processed = Counter((r[1], o) for log in logs for e in log if e["event"] == "client.batch_processed"
                        for r in e["records"] for o in range(r[2], r[3] + 1))
    assert set(processed) == {(p, o) for p in range(4) for o in range(50)}
    committed: dict = {}
    for log in logs:
        for e in log:
            if e["event"] == "client.committed":
                for _, p, offset in e["offsets"]:
                    committed[p] = max(committed.get(p, 0), offset)
    assert committed == {p: 50 for p in range(4)}
    assert {e["client"] for e in logs[0] if e["event"] == "client.started"} == {"q/m000", "q/m002"}
