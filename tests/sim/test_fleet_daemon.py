"""`groupcoord fleet --bootstrap --admin` against a daemon that serves other groups too: the run's
log and summary hold the scenario's groups only, and the scenario's [coordinator] settings, which
a daemon does not take, are each named in a warning line."""
from __future__ import annotations

import asyncio
import json

import pytest

from groupcoord.sim import fleet
from groupcoord.cli import main
from groupcoord.coordinator.embed import ThreadedCoordinator
from groupcoord.coordinator.group.offsets import OffsetCommitRequest

SCENARIO = """
duration_s = 20
[coordinator]
nodes = 2
profile = "test"
config = { "group.initial.rebalance.delay.ms" = 0, "group.max.size" = 10 }
[topics]
orders = 2
[[groups]]
name = "billing"
topics = ["orders"]
members = 1
session_timeout_ms = 2000
heartbeat_interval_ms = 200
[[events]]
at_ms = 300
action = "join"
"""


def commit_for_another_group(gc: ThreadedCoordinator) -> dict:
    """Once the fleet's event stream is connected, another group commits offsets on the daemon at
    the first event of the scenario's group (its events reach the stream while the fleet listens)."""
    hub = gc.admin.app["events"]
    seen = {"while_streaming": False}

    def commit() -> None:
        gc.service.group_coordinator.offset_commit(lambda r: None, OffsetCommitRequest("other", [
            {"name": "orders", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                               "committed_metadata": None}]}]))

    def on_event(event: dict) -> None:
        if event["group"] == "billing" and hub.clients and not seen["while_streaming"]:
            seen["while_streaming"] = True
            asyncio.get_running_loop().call_soon(commit)
    gc.call(gc.service.bus.subscribe, on_event)
    return seen


@pytest.mark.parametrize("filtered_by", ["daemon", "fleet"])
def test_fleet_against_a_daemon_keeps_to_its_groups_and_warns_of_ignored_settings(
        tmp_path, capsys, monkeypatch, filtered_by):
    if filtered_by == "fleet":
        monkeypatch.setattr(fleet, "STREAM_QUERY_CHARS", 0)      # no filter in the stream request
    path = tmp_path / "small.toml"
    path.write_text(SCENARIO)
    with ThreadedCoordinator(http=True, topics={"orders": 2}) as gc:
        other = commit_for_another_group(gc)
        rc = main(["fleet", str(path), "--bootstrap", gc.bootstrap_servers, "--admin", gc.admin_url,
                   "--out", str(tmp_path / "out"), "--until-stable", "--no-progress", "--events-format", "jsonl"])
        other_exists = gc.call(gc.service.group_coordinator.group, "other") is not None
    assert rc == 0
    assert other["while_streaming"] and other_exists    # the other group's events went out to the stream
    out, err = capsys.readouterr()
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert warnings == [f"groupcoord: warning: {path}: {setting} is ignored: the daemon runs with its own settings"
                        for setting in ('[coordinator] nodes = 2', '[coordinator] profile = "test"',
                                        '[coordinator] config "group.initial.rebalance.delay.ms" = 0',
                                        '[coordinator] config "group.max.size" = 10')]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert list(summary["groups"]) == ["billing"]
    events = [json.loads(line) for line in (tmp_path / "out" / "events.jsonl").read_text().splitlines()]
    assert {e["group"] for e in events} == {"billing"}
    assert any(e["event"] == "rebalance.completed" for e in events)      # the daemon's events are there
    assert "other" not in out and "billing" in out


def test_no_warning_for_a_scenario_without_coordinator_settings():
    from groupcoord.sim import scenario
    sc = scenario.from_dict({"topics": {"t": 1}, "groups": [{"name": "g", "topics": ["t"]}]})
    assert fleet.ignored_against_daemon(sc) == []


SHARE_SCENARIO = """
duration_s = 4
[topics]
jobs = 2
[[groups]]
name = "workers"
group_type = "share"
topics = ["jobs"]
members = 2
lock_duration_ms = 20000
job_ms = { dist = "constant", ms = 2 }
[[produce]]
topic = "jobs"
rate_per_s = 50
stop_s = 2
"""


def test_a_share_group_s_configs_are_set_on_the_daemon_before_its_members_start(tmp_path):
    """share.auto.offset.reset=earliest (every share group of a scenario) and the scenario's lock: without
    them the daemon's default, latest, would skip the records produced before the members first fetch."""
    path = tmp_path / "share.toml"
    path.write_text(SHARE_SCENARIO)
    with ThreadedCoordinator(topics={"jobs": 2}) as gc:
        rc = main(["fleet", str(path), "--bootstrap", gc.bootstrap_servers, "--out", str(tmp_path / "out"),
                   "--no-progress", "--events-format", "jsonl"])
        configs = gc.call(lambda: {k: gc.service.group_coordinator.group_configs.get("workers", k)
                                   for k in ("share.auto.offset.reset", "share.record.lock.duration.ms")})
    assert rc == 0
    assert configs == {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": 20000}
    events = [json.loads(line) for line in (tmp_path / "out" / "events.jsonl").read_text().splitlines()]
    produced = {(e["partition"], o) for e in events if e["event"] == "producer.produced"
                for o in range(e["first"], e["last"] + 1)}
    polled = {(r[1], o) for e in events if e["event"] == "client.records_polled" for r in e["records"]
              for o in range(r[2], r[3] + 1)}
    assert len(produced) == 100 and polled == produced
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert not [n for n in summary["notes"] if "could not be set" in n]
