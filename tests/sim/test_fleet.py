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
                   "--out", str(tmp_path / "out"), "--until-stable", "--no-progress"])
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
