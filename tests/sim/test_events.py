"""The member events' schema and its check."""
from __future__ import annotations

import json

import pytest

from groupcoord.sim.events import EVENT_FIELDS, check_event
from groupcoord.cli import main

GOOD = {"v": 1, "event": "client.assigned", "ts_ms": 5, "group": "g", "client": "g/m000", "member": "m-1",
        "generation": 1, "partitions": [["t", 0]], "owned": [["t", 0], ["t", 1]]}


def test_check_accepts_and_rejects():
    check_event(GOOD)
    for bad, message in [
        ({**GOOD, "event": "client.exploded"}, "unknown member event"),
        ({k: v for k, v in GOOD.items() if k != "owned"}, "missing"),
        ({**GOOD, "extra": 1}, "unexpected"),
        ({**GOOD, "v": 2}, "schema version"),
        ({**GOOD, "ts_ms": "5"}, "integers"),
        ({**GOOD, "partitions": [["t", 0, 1]]}, "partitions"),
        ({**GOOD, "event": "client.stopped", "reason": "bored", "partitions": None, "owned": None}, "unexpected"),
    ]:
        with pytest.raises(ValueError, match=message):
            check_event(bad)


def test_every_type_appears_in_a_run_and_checks(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text("""
duration_s = 30
[coordinator]
config = { "group.initial.rebalance.delay.ms" = 0 }
[topics]
t = 4
[[groups]]
name = "g"
topics = ["t"]
members = 3
session_timeout_ms = 6000
heartbeat_interval_ms = 500
[[groups]]
name = "c"
group_protocol = "consumer"
topics = ["t"]
members = 2
[[groups]]
name = "s"
group_type = "share"
topics = ["t"]
members = 2
job_ms = { dist = "constant", ms = 5 }
[[produce]]
topic = "t"
rate_per_s = 50
stop_s = 20
[[events]]
at_s = 5
action = "crash"
group = "g"
members = [0]
[[events]]
at_s = 6
action = "slow"
group = "g"
members = [1]
kind = "heartbeat"
duration_ms = 8000
[[events]]
at_s = 20
action = "leave"
group = "g"
members = [2]
""")
    assert main(["simulate", str(path), "--seed", "1", "--out", str(tmp_path / "out"), "--no-progress",
                 "--events-format", "jsonl"]) == 0
    assert "simulate s (seed 1)" in capsys.readouterr().out
    events = [json.loads(line) for line in (tmp_path / "out" / "events.jsonl").read_text().splitlines()]
    member = [e for e in events if e["event"].startswith("client.")]
    for e in member:
        check_event(e)
    assert {e["event"] for e in member} == set(EVENT_FIELDS)
    produced = [e for e in events if e["event"] == "producer.produced"]
    for e in produced:
        check_event(e)
    assert sum(e["last"] - e["first"] + 1 for e in produced) == 1000          # 50 a second for 20 s
    polled = [e for e in member if e["event"] == "client.records_polled"]
    assert {e["group"] for e in polled} == {"s"}
    states = [e for e in member if e["event"] == "client.state"]
    assert {e["group"] for e in states} == {"c"}           # the consumer protocol's members only
    assert {e["protocol"] for e in member if e["event"] == "client.started"} == {"eager", "consumer", "share"}
    # each consumer-protocol member joins, and ends STABLE at the group's epoch
    for client in ("c/m000", "c/m001"):
        mine = [e for e in states if e["client"] == client]
        assert "JOINING" in [e["state"] for e in mine]
        assert mine[-1]["state"] == "STABLE" and mine[-1]["generation"] > 0
    assert {e["reason"] for e in member if e["event"] == "client.stopped"} == {"crash", "close"}
    committed = [e for e in member if e["event"] == "client.committed"]
    assert all(o[2] > 0 for e in committed for o in e["offsets"])
