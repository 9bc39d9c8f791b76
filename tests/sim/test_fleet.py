"""Real time: simulated consumers (our client library) against an in-process coordinator."""
from __future__ import annotations

import json
from pathlib import Path

from groupcoord.sim import events as member_events
from groupcoord.sim import fleet, scenario
from groupcoord.coordinator import events as coordinator_events
from groupcoord.cli import main

EXAMPLES = Path(__file__).parents[2] / "examples" / "scenarios"


async def test_500_members_in_50_groups(tmp_path):
    # 50 groups of 10 (cooperative-sticky, 20 partitions each); per group one crash, one graceful
    # leave, then two new members; the run ends once every group is stable again
    sc = scenario.load(EXAMPLES / "fleet-500x50.toml")
    assert sc.total_members() == 500 and len(sc.group_ids()) == 50
    runner = await fleet.run(sc, 11, tmp_path, until_stable=True)
    assert len(runner.final) == 50
    assert {g: v for g, v in runner.final.items() if v != "ok"} == {}
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    for e in events:
        (member_events if e["event"].startswith("client.") else coordinator_events).check_event(e)
    summary = json.loads((tmp_path / "summary.json").read_text())
    for gid in sc.group_ids():
        g = summary["groups"][gid]
        assert g["ownership_violations"] == 0, (gid, g)
        assert g["stops"] == {"close": 1, "crash": 1} and g["clients_started"] == 12
        assert g["final"] == {"check": "ok", "running_clients": 10}
        assert g["members"] == 10 and g["state"] == "Stable"
    # walk the member events: no partition ever has two owners, and at the end every partition
    # of every group has exactly one
    owner: dict = {}
    for e in events:
        if e["event"] == "client.assigned":
            for t, p in e["partitions"]:
                assert owner.get((e["group"], t, p)) in (None, e["client"]), e
                owner[(e["group"], t, p)] = e["client"]
        elif e["event"] in ("client.revoked", "client.lost"):
            for t, p in e["partitions"]:
                if owner.get((e["group"], t, p)) == e["client"]:
                    del owner[(e["group"], t, p)]
        elif e["event"] == "client.stopped":
            for key in [k for k, v in owner.items() if v == e["client"]]:
                del owner[key]
    assert sorted(owner) == sorted((g, "t", p) for g in sc.group_ids() for p in range(20))
    doc = json.loads((tmp_path / "scenario.json").read_text())
    assert doc["mode"] == "fleet" and len(doc["groups"]) == 1 and doc["groups"][0]["count"] == 50


async def test_a_fleet_sharing_connections_opens_one_per_member_and_settles():
    # 300 members of one group over TCP, each with one connection for bootstrap, broker and
    # coordinator (the layout bench/fleet.py uses to reach 10,000 members under the fd limit)
    sc = scenario.from_dict({
        "name": "shared", "duration_s": 60, "topics": {"t": 64},
        "coordinator": {"config": {"group.initial.rebalance.delay.ms": 500}},
        "groups": [{"name": "big", "topics": ["t"], "members": 300, "processing_ms": 500}]})
    runner = await fleet.run(sc, 3, until_stable=True, share_connections=True)
    assert runner.final == {"big": "ok"}
    assert runner.embedded.server.stats["connections"] == 300
    # the members read one Metadata answer, decoded once (then served from the shared cache)
    assert runner.response_cache.hits >= 299 * 2 and runner.response_cache.misses <= 4


def test_cli_fleet_against_a_daemon_address(tmp_path, capsys):
    # `groupcoord fleet --bootstrap --admin`: topics created through CreateTopics, the coordinator's
    # events streamed from the admin API, a coordinator move through it
    from groupcoord.coordinator.embed import ThreadedCoordinator
    path = tmp_path / "small.toml"
    path.write_text("""
duration_s = 20
[coordinator]
nodes = 2
[topics]
orders = 4
[[groups]]
name = "billing"
topics = ["orders"]
members = 2
strategy = "range"
session_timeout_ms = 2000
heartbeat_interval_ms = 200
[[events]]
at_ms = 500
action = "join"
[[events]]
at_ms = 1500
action = "move_coordinator"
group = "billing"
node = 1
""")
    with ThreadedCoordinator(nodes=2, http=True) as gc:
        cluster = gc.service.cluster
        p = cluster.coordinator_partition("billing")
        gc.call(lambda: cluster.set_leader(None, p, 0))
        rc = main(["fleet", str(path), "--bootstrap", gc.bootstrap_servers, "--admin", gc.admin_url,
                   "--out", str(tmp_path / "out"), "--until-stable", "--no-progress", "--events-format", "jsonl"])
        assert gc.call(lambda: gc.service.partition_count("orders")) == 4
        assert gc.call(lambda: cluster.offsets_leaders[p]) == 1
    assert rc == 0
    out = capsys.readouterr().out
    assert "fleet small" in out and "1/1 ok" in out
    events = [json.loads(line) for line in (tmp_path / "out" / "events.jsonl").read_text().splitlines()]
    kinds = {e["event"] for e in events}
    assert kinds >= {"client.started", "client.assigned", "member.joined", "rebalance.completed"}
    assert len({e["client"] for e in events if e["event"].startswith("client.")}) == 3
    for e in events:
        (member_events if e["event"].startswith("client.") else coordinator_events).check_event(e)


async def test_an_asynchronous_fault_that_fails_is_a_note_and_until_stable_still_ends(tmp_path):
    # node_up of a node that is up fails only once its coroutine runs (in-process coordinator):
    # the failure is a note of the run, and the run still ends early once the group is stable
    sc = scenario.from_dict({
        "duration_s": 30, "coordinator": {"nodes": 2}, "topics": {"t": 2},
        "groups": [{"name": "g", "topics": ["t"], "members": 1, "strategy": "range",
                    "session_timeout_ms": 6000, "heartbeat_interval_ms": 500}],
        "events": [{"at_ms": 300, "action": "node_up", "node": 1}]})
    runner = await fleet.run(sc, 1, tmp_path, until_stable=True)
    assert any(n.startswith("node_up 1:") and "up already" in n for n in runner.notes), runner.notes
    assert runner.final == {"g": "ok"} and runner.wall_s < 20


async def test_a_consumer_protocol_group_in_real_time(tmp_path):
    # Kafka 4's consumer protocol over TCP: the group's heartbeat interval is its group config,
    # set on the in-process coordinator; a leave and a join re-settle the group
    sc = scenario.from_dict({
        "name": "kip848", "duration_s": 30, "topics": {"t": 8},
        "coordinator": {"config": {"group.consumer.min.heartbeat.interval.ms": 100,
                                   "group.consumer.min.session.timeout.ms": 3000}},
        "groups": [{"name": "c", "group_protocol": "consumer", "remote_assignor": "range", "topics": ["t"],
                    "members": 4, "heartbeat_interval_ms": 200, "session_timeout_ms": 3000}],
        "events": [{"at_s": 1, "action": "leave", "members": [0]}, {"at_s": 1.5, "action": "join"}]})
    runner = await fleet.run(sc, 3, tmp_path, until_stable=True)
    assert runner.final == {"c": "ok"}
    assert runner.embedded.service.group_coordinator.group_configs.values == {
        "c": {"consumer.session.timeout.ms": 3000, "consumer.heartbeat.interval.ms": 200}}
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    for e in events:
        (member_events if e["event"].startswith("client.") else coordinator_events).check_event(e)
    assert {e["protocol"] for e in events if e["event"] == "client.started"} == {"consumer"}
    assert {e["strategy"] == ["range"] for e in events if e["event"] == "client.started"} == {True}
    reasons = [e["reason"] for e in events if e["event"] == "consumer.group_epoch_bumped"]
    assert reasons.count("member_joined") == 5 and reasons.count("member_left") == 1
    assert any(e["event"] == "client.state" and e["state"] == "ACKNOWLEDGING" for e in events)


def read_log(path: Path) -> list[dict]:
    events = [json.loads(line) for line in (path / "events.jsonl").read_text().splitlines()]
    for e in events:
        (member_events if e["event"].startswith(("client.", "producer.")) else coordinator_events).check_event(e)
    return events


def offsets(runs) -> set:
    """(partition, offset) of the runs [[topic, partition, first, last, ...], ...]."""
    return {(p, o) for _, p, first, last, *_ in runs for o in range(first, last + 1)}


def produced(events: list[dict]) -> set:
    return {(e["partition"], o) for e in events if e["event"] == "producer.produced"
            for o in range(e["first"], e["last"] + 1)}


def of(events: list[dict], kind: str, group: str, client: str | None = None) -> list[dict]:
    return [e for e in events if e["event"] == kind and e.get("group") == group
            and (client is None or e["client"] == client)]


async def test_share_groups_as_work_queues_in_real_time(tmp_path):
    # a producer appends 100 records a second for 3 s to a topic of 2 partitions, which two share
    # groups read: "ex" (3 members, explicit acknowledgements, 25 ms a record: busy most of the time)
    # and "im" (2 members, implicit, 2 ms a record). ex's member 1 hangs at 1 s (a stuck job: it
    # holds what it has, under 15 s acquisition locks) and is killed at 2 s: its connections drop
    # without closing its share sessions, the leader releases its records at once, others get them
    # again (delivery count 2) long before the locks would have expired. ex acknowledges its last
    # records some 4.5 s into the run: 8 s leave room for a busy machine's stalls (with 6 s, they
    # once left its last five records unacknowledged at the end)
    sc = scenario.from_dict({
        "name": "share-work", "duration_s": 8, "topics": {"jobs": 2},
        "coordinator": {"profile": "test", "config": {"group.initial.rebalance.delay.ms": 0,
                                                      "group.share.min.heartbeat.interval.ms": 100,
                                                      "group.share.min.session.timeout.ms": 1000}},
        "groups": [{"name": "ex", "group_type": "share", "topics": ["jobs"], "members": 3, "job_ms": 25,
                    "acknowledgement_mode": "explicit", "max_poll_records": 5, "lock_duration_ms": 15000,
                    "heartbeat_interval_ms": 200, "session_timeout_ms": 2000},
                   {"name": "im", "group_type": "share", "topics": ["jobs"], "members": 2, "job_ms": 2,
                    "heartbeat_interval_ms": 200, "session_timeout_ms": 2000}],
        "produce": [{"topic": "jobs", "rate_per_s": 100, "stop_s": 3, "batch": 2}],
        "events": [{"at_s": 1, "action": "slow", "kind": "poll", "group": "ex", "members": [1], "duration_ms": 10000},
                   {"at_s": 2, "action": "crash", "group": "ex", "members": [1]}]})
    runner = await fleet.run(sc, 1, tmp_path)
    # the share group configs of the scenario (and reading from the log's start) on the coordinator
    assert runner.embedded.service.group_coordinator.group_configs.values["ex"] == {
        "share.auto.offset.reset": "earliest", "share.session.timeout.ms": 2000, "share.heartbeat.interval.ms": 200,
        "share.record.lock.duration.ms": 15000}
    events = read_log(tmp_path)
    records = produced(events)
    assert len(records) == 300 and {p for p, _ in records} == {0, 1}
    for gid in ("ex", "im"):
        polled = set().union(*(offsets(e["records"]) for e in of(events, "client.records_polled", gid)))
        assert polled == records, gid
        acks = of(events, "client.acknowledged", gid)
        assert all(e["error"] is None and {r[4] for r in e["records"]} == {"ACCEPT"} for e in acks), gid
        assert set().union(*(offsets(e["records"]) for e in acks)) == records, gid
    t0 = min(e["ts_ms"] for e in events if e["event"] == "client.started")
    [crash] = [e for e in events if e["event"] == "client.stopped"]
    assert (crash["client"], crash["reason"]) == ("ex/m001", "crash") and abs(crash["ts_ms"] - t0 - 2000) < 500
    # the leader released what the crashed member held as its connection closed (a close would end
    # its session with final_epoch)
    [closed] = [e for e in events if e["event"] == "share.session_closed" and e["member"] == crash["member"]]
    assert closed["reason"] == "connection_closed" and closed["released"] >= 1
    # ... and it went to the others at once, delivered a second time
    again = [(e["ts_ms"], e["client"], r) for e in of(events, "client.records_polled", "ex")
             for r in e["records"] if r[4] > 1]
    assert again and all(client != "ex/m001" and ts >= crash["ts_ms"] and r[4] == 2 for ts, client, r in again)
    assert min(ts for ts, _, _ in again) - crash["ts_ms"] < 3000          # the locks last 15 s
    assert sum(r[3] - r[2] + 1 for _, _, r in again) >= closed["released"]
    assert not [e for e in of(events, "client.records_polled", "im") if any(r[4] != 1 for r in e["records"])]
    # the stuck member did nothing from its hang on
    assert not [e for e in events if e.get("client") == "ex/m001" and t0 + 1100 < e["ts_ms"] < crash["ts_ms"]
                and e["event"] in ("client.records_polled", "client.batch_processed", "client.acknowledged")]
    # each batch took its records' job times
    for e in of(events, "client.batch_processed", "ex"):
        assert e["busy_ms"] == 25 * len(offsets(e["records"])) and e["ts_ms"] - e["started_ms"] >= e["busy_ms"] - 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    ex, im = summary["groups"]["ex"]["work"], summary["groups"]["im"]["work"]
    assert ex["accepted"] == im["accepted"] == 300 and ex["records_redelivered"] >= 1
    assert im["records_redelivered"] == 0 and ex["acknowledgements_failed"] == im["acknowledgements_failed"] == 0
    assert summary["groups"]["ex"]["stops"] == {"crash": 1} and summary["groups"]["im"]["final"]["check"] == "ok"


async def test_consumer_group_work_queues_in_real_time(tmp_path):
    # a producer appends 100 records a second for 3 s to 4 partitions led by two nodes; node 1 goes
    # down at 1.5 s (the producer finds the new leaders). Two consumer groups process each record:
    # "c" commits after each poll's records, "a" auto-commits every 300 ms; c's member 0 hangs
    # from 1 s to 2 s. (metadata.max.age.ms: our client asks for metadata only then after a leader's
    # connection broke)
    sc = scenario.from_dict({
        "name": "consumer-work", "duration_s": 6, "topics": {"jobs": 4},
        "coordinator": {"nodes": 2, "profile": "test", "config": {"group.initial.rebalance.delay.ms": 0}},
        "groups": [{"name": "c", "topics": ["jobs"], "members": 2, "strategy": "cooperative-sticky",
                    "job_ms": {"dist": "uniform", "min_ms": 1, "max_ms": 5}, "auto_commit": False,
                    "max_poll_records": 10, "session_timeout_ms": 3000, "heartbeat_interval_ms": 300,
                    "config": {"metadata.max.age.ms": 500}},
                   {"name": "a", "topics": ["jobs"], "members": 2, "job_ms": 2, "auto_commit_interval_ms": 300,
                    "session_timeout_ms": 3000, "heartbeat_interval_ms": 300,
                    "config": {"metadata.max.age.ms": 500}}],
        "produce": [{"topic": "jobs", "rate_per_s": 100, "stop_s": 3}],
        "events": [{"at_s": 1, "action": "slow", "kind": "poll", "group": "c", "members": [0], "duration_ms": 1000},
                   {"at_s": 1.5, "action": "node_down", "node": 1}]})
    runner = await fleet.run(sc, 1, tmp_path)
    assert runner.notes == []
    cluster = runner.embedded.service.cluster
    moved = [p for p in range(4) if cluster.preferred_leader(p) == 1]
    assert moved and all(cluster.leader_for("jobs", p) == 0 for p in range(4))
    events = read_log(tmp_path)
    records = produced(events)
    assert records == {(p, o) for p in range(4) for o in range(75)}
    t0 = min(e["ts_ms"] for e in events if e["event"] == "client.started")
    assert {e["partition"] for e in events if e["event"] == "producer.produced" and e["ts_ms"] > t0 + 2000} >= set(moved)
    for gid in ("c", "a"):
        processed = set().union(*(offsets(e["records"]) for e in of(events, "client.batch_processed", gid)))
        assert processed == records, gid
        committed = {}
        for e in of(events, "client.committed", gid):
            for _, p, offset in e["offsets"]:
                committed[p] = max(committed.get(p, 0), offset)
        assert committed == {p: 75 for p in range(4)}, gid
        assert not [e for e in of(events, "client.records_polled", gid) if any(r[4] != 0 for r in e["records"])]
    # c's member 0 did nothing while it hung, then went on
    hung = [e["ts_ms"] - t0 for e in events if e.get("client") == "c/m000"
            and e["event"] in ("client.records_polled", "client.batch_processed")]
    assert not [t for t in hung if 1100 < t < 1900] and [t for t in hung if t >= 1900]
    summary = json.loads((tmp_path / "summary.json").read_text())
    c, a = summary["groups"]["c"], summary["groups"]["a"]
    # c commits after each poll, a at a poll every 300 ms at most
    assert c["commits"] > 2 * a["commits"] and a["commits"] <= 2 * (6000 // 300 + 1)
    assert c["work"]["records_processed"] >= 300 and a["work"]["records_processed"] >= 300
    assert c["final"]["check"] == a["final"]["check"] == "ok"
