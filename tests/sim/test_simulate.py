"""Virtual time: exact outcomes of small scenarios, computed by hand, and determinism."""
from __future__ import annotations

import contextlib
import json
import os
import pickle
import subprocess
import sys
import tomllib
from collections import Counter

import pytest

from groupcoord.sim import events as member_events
from groupcoord.sim import scenario, simulate
from groupcoord.sim.model import summarize
from groupcoord.coordinator import events as coordinator_events


def three(strategy: str, events: list, *, static=False, **group) -> scenario.Scenario:
    """Three members of group g on topic t (6 partitions); all join in the first round (initial
    rebalance delay 3 s); sessions of 10 s, heartbeats every second."""
    return scenario.from_dict({
        "duration_s": 60, "topics": {"t": 6},
        "coordinator": {"config": {"group.initial.rebalance.delay.ms": 3000}},
        "groups": [{"name": "g", "topics": ["t"], "members": 3, "strategy": strategy, "static": static,
                    "session_timeout_ms": 10000, "heartbeat_interval_ms": 1000, **group}],
        "events": events})


def of(events, kind, **match):
    return [e for e in events if e["event"] == kind and all(e.get(k) == v for k, v in match.items())]


def owned_by(events) -> dict:
    """client -> partitions owned after its last callback."""
    out = {}
    for e in events:
        if e["event"] in ("client.assigned", "client.revoked", "client.lost"):
            out[e["client"]] = [tuple(tp) for tp in e["owned"]]
        elif e["event"] == "client.stopped":
            out.pop(e["client"], None)
    return out


def check_all(events):
    for e in events:
        if e["event"].startswith("client."):
            member_events.check_event(e)
        else:
            coordinator_events.check_event(e)


def test_eager_range_crash():
    # range over members sorted by id (g/m000-… < g/m001-… < g/m002-…): m000 {0,1}, m001 {2,3},
    # m002 {4,5}. m001 crashes at 20 s: the coordinator expires it one session after its last
    # heartbeat; both survivors revoke everything (eager) and range gives m000 {0,1,2}, m002 {3,4,5}:
    # partitions 2 and 3 moved, 4 revoked, generation 2 after 2 rebalances.
    ev = simulate.run(three("range", [{"at_s": 20, "action": "crash", "members": [1]}]), 1)
    check_all(ev)
    g = summarize(ev)["g"]
    assert (g["rebalances"], g["generation"], g["state"], g["members"]) == (2, 2, "Stable", 2)
    assert (g["moved_partitions"], g["revoked_partitions"], g["lost_partitions"]) == (2, 4, 0)
    assert g["assigned_callbacks"] == 5 and g["stops"] == {"crash": 1} and g["ownership_violations"] == 0
    first = {e["client"]: e["partitions"] for e in of(ev, "client.assigned", generation=1)}
    assert first == {"g/m000": [["t", 0], ["t", 1]], "g/m001": [["t", 2], ["t", 3]], "g/m002": [["t", 4], ["t", 5]]}
    assert owned_by(ev) == {"g/m000": [("t", 0), ("t", 1), ("t", 2)], "g/m002": [("t", 3), ("t", 4), ("t", 5)]}
    (expired,) = of(ev, "member.expired")
    (crash,) = of(ev, "client.stopped", reason="crash")
    assert expired["member"] == crash["member"] and crash["ts_ms"] == 20000
    assert 29000 <= expired["ts_ms"] <= 30000 + 10          # last heartbeat in (19 s, 20 s] + 10 s
    assert of(ev, "rebalance.started")[-1]["reason"] == "member_expired"


def test_eager_range_graceful_leave():
    # the same with a graceful leave: LeaveGroup at once, and m001 revokes its own two partitions too
    ev = simulate.run(three("range", [{"at_s": 20, "action": "leave", "members": [1]}]), 1)
    g = summarize(ev)["g"]
    assert (g["rebalances"], g["generation"], g["moved_partitions"], g["revoked_partitions"]) == (2, 2, 2, 6)
    assert g["expired"] == 0 and g["stops"] == {"close": 1}
    (left,) = of(ev, "member.left")
    assert left["reason"] == "the consumer is being closed" and 20000 < left["ts_ms"] < 20100
    assert of(ev, "rebalance.completed")[-1]["ts_ms"] < 20200


def test_cooperative_sticky_leave_moves_only_the_orphans():
    # cooperative-sticky: m000 {0,3}, m001 {1,4}, m002 {2,5}; m001 leaves; the survivors keep what
    # they own (no revocation) and each gets one orphan: one rebalance, generation 2, 2 moved
    ev = simulate.run(three("cooperative-sticky", [{"at_s": 20, "action": "leave", "members": [1]}]), 1)
    check_all(ev)
    g = summarize(ev)["g"]
    assert (g["rebalances"], g["generation"], g["moved_partitions"], g["revoked_partitions"]) == (2, 2, 2, 2)
    revoked = of(ev, "client.revoked")
    assert [e["client"] for e in revoked] == ["g/m001"]
    assert owned_by(ev) == {"g/m000": [("t", 0), ("t", 1), ("t", 3)], "g/m002": [("t", 2), ("t", 4), ("t", 5)]}
    assert {e["protocol"] for e in of(ev, "client.started")} == {"cooperative"}


def test_static_rolling_restart_within_the_session_needs_no_rebalance():
    # static members back 2 s after their close (session 10 s): the coordinator replaces each
    # member id under its instance id and hands back the same partitions; still generation 1
    sc = three("range", [{"at_s": 20, "action": "restart", "interval_ms": 5000, "down_ms": 2000}], static=True)
    ev = simulate.run(sc, 1)
    g = summarize(ev)["g"]
    assert (g["rebalances"], g["generation"], g["moved_partitions"], g["members"]) == (1, 1, 0, 3)
    assert len(of(ev, "member.replaced")) == 3 and not of(ev, "member.left")
    assert [e["ts_ms"] for e in of(ev, "client.started")][3:] == [22000, 27000, 32000]
    assert {e["instance_id"] for e in of(ev, "client.started")} == {"g-m0", "g-m1", "g-m2"}


def test_slow_members():
    # m1 freezes 15 s (> its 10 s session): expired, and it finds its partitions lost when it thaws;
    # m2 stops polling 30 s (> max.poll.interval.ms 20 s): it leaves the group and rejoins when it polls
    sc = three("cooperative-sticky", [
        {"at_s": 20, "action": "slow", "members": [1], "kind": "heartbeat", "duration_ms": 15000},
        {"at_s": 60, "action": "slow", "members": [2], "kind": "poll", "duration_ms": 30000}],
        max_poll_interval_ms=20000)
    sc = scenario.apply_overrides(sc, {"duration_s": 120})
    sim = simulate.Simulator(sc, 1)
    ev = sim.run()
    check_all(ev)
    (expired,) = of(ev, "member.expired")
    assert expired["member"].startswith("g/m001-") and 29000 < expired["ts_ms"] < 31000
    (lost,) = of(ev, "client.lost", client="g/m001")
    assert lost["ts_ms"] == 35000 and lost["owned"] == []
    (left,) = of(ev, "member.left")
    assert left["member"].startswith("g/m002-") and left["reason"] == "consumer poll timeout has expired"
    assert 79900 <= left["ts_ms"] <= 80000     # last poll within processing_ms (100) before 60 s
    rejoin = [e for e in of(ev, "member.joined") if e["client_id"] == "g/m002" and e["ts_ms"] > left["ts_ms"]]
    assert rejoin and rejoin[0]["ts_ms"] >= 90000
    assert sim.summary(ev)["groups"]["g"]["final"]["check"] == "ok"


def test_subscription_change_and_partition_increase():
    sc = scenario.from_dict({
        "duration_s": 90, "topics": {"a": 4, "b": 2},
        "coordinator": {"config": {"group.initial.rebalance.delay.ms": 0}},
        "groups": [{"name": "g", "topics": ["a"], "members": 2, "strategy": "range",
                    "config": {"metadata.max.age.ms": 5000}}],
        "events": [{"at_s": 20, "action": "subscribe", "topics": ["a", "b"]},
                   {"at_s": 50, "action": "add_partitions", "topic": "a", "partitions": 6}]})
    sim = simulate.Simulator(sc, 4)
    ev = sim.run()
    after = [e for e in of(ev, "client.assigned") if e["ts_ms"] > 50000]
    owned = sorted(tuple(tp) for tps in owned_by(ev).values() for tp in tps)
    assert owned == [("a", p) for p in range(6)] + [("b", 0), ("b", 1)]
    assert after and max(e["ts_ms"] for e in after) < 50000 + 5000 + 1000   # the next metadata refresh
    assert of(ev, "rebalance.started")[-1]["client_reason"].startswith("cached metadata changed")
    assert sim.summary(ev)["groups"]["g"]["final"]["check"] == "ok"


def test_coordinator_move_node_failure_partition_and_loss():
    sc = scenario.from_dict({
        # a lost JoinGroup answer costs its request timeout (rebalance timeout + 5 s): a short
        # max.poll.interval.ms and a quiet end give the groups the time to settle again
        "duration_s": 150, "topics": {"t": 8},
        "coordinator": {"nodes": 3, "config": {"group.initial.rebalance.delay.ms": 0}},
        "network": {"latency": {"dist": "exponential", "mean_ms": 3}, "loss": 0.01},
        "groups": [{"name": "g", "count": 3, "topics": ["t"], "members": 4, "strategy": "cooperative-sticky",
                    "session_timeout_ms": 10000, "heartbeat_interval_ms": 1000, "request_timeout_ms": 5000,
                    "max_poll_interval_ms": 15000}],
        "events": [{"at_s": 15, "action": "move_coordinator", "group": "g-0"},
                   {"at_s": 30, "action": "node_down", "node": 1},
                   {"at_s": 45, "action": "network_partition", "group": "g-2", "members": [0],
                    "duration_ms": 15000},
                   {"at_s": 80, "action": "node_up", "node": 1}]})
    sim = simulate.Simulator(sc, 5)
    ev = sim.run()
    check_all(ev)
    summary = sim.summary(ev)
    assert sim.stats["lost"] > 0
    assert all(g["final"]["check"] == "ok" for g in summary["groups"].values()), summary
    assert sum(g["ownership_violations"] for g in summary["groups"].values()) == 0
    cluster = sim.service.cluster
    assert all(cluster.offsets_leaders[cluster.coordinator_partition(g)] != 1 for g in sc.group_ids())
    cut = of(ev, "client.lost", client="g-2/m000")
    # its session ends 10 s after its last successful heartbeat (at most 1 s before the cut)
    assert cut and 54000 <= cut[0]["ts_ms"] <= 55000


def test_outputs(tmp_path):
    sc = three("range", [{"at_s": 20, "action": "crash", "members": [1]}])
    ev = simulate.run(sc, 3, out_dir=tmp_path)
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == ev
    ts = [e["ts_ms"] for e in ev]
    assert ts == sorted(ts)
    doc = json.loads((tmp_path / "scenario.json").read_text())
    assert (doc["mode"], doc["seed"], doc["topics"], doc["groups"][0]["protocol"]) == ("simulate", 3, {"t": 6}, "eager")
    assert doc["group_ids"] == ["g"] and scenario.from_dict(doc) == scenario.apply_overrides(sc, {"seed": 3})
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["groups"]["g"]["rebalances"] == 2 and summary["virtual_s"] == 60


def test_codec_path_gives_the_same_log():
    base = three("cooperative-sticky", [{"at_s": 20, "action": "crash", "count": 1}])
    plain = simulate.run(base, 8)
    coded = simulate.run(scenario.apply_overrides(base, {"network.codec": True}), 8)
    assert plain == coded


SCENARIO = """
duration_s = 40
[coordinator]
nodes = 2
config = { "group.initial.rebalance.delay.ms" = 0 }
[network]
latency = { dist = "uniform", min_ms = 1, max_ms = 6 }
loss = 0.002
[topics]
t = 12
[[groups]]
name = "g"
count = 3
topics = ["t"]
members = 5
strategy = "cooperative-sticky"
session_timeout_ms = 6000
heartbeat_interval_ms = 500
[[events]]
at_s = 10
action = "crash"
count = 2
restart_after_ms = 8000
[[events]]
at_s = 12
action = "move_coordinator"
group = "g-1"
[[events]]
at_s = 20
action = "restart"
group = "g-0"
interval_ms = 300
"""


def _simulate_cli(path, out, seed, hashseed):
    env = {**os.environ, "PYTHONHASHSEED": str(hashseed)}
    subprocess.run([sys.executable, "-m", "groupcoord.cli", "simulate", str(path), "--seed", str(seed),
                    "--out", str(out), "--no-progress", "--events-format", "jsonl"], check=True, env=env, capture_output=True, timeout=120)
    return (out / "events.jsonl").read_bytes()


def test_same_seed_same_log_byte_for_byte(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    # two processes with different string hashing: nothing may depend on set or dict order
    a = _simulate_cli(path, tmp_path / "a", 42, 1)
    b = _simulate_cli(path, tmp_path / "b", 42, 2)
    assert a == b and len(a.splitlines()) > 500
    c = _simulate_cli(path, tmp_path / "c", 43, 1)
    assert c != a                              # latencies, picks and ids all differ
    kinds = Counter(json.loads(line)["event"] for line in a.splitlines())
    assert kinds["client.stopped"] >= 2 + 5 and kinds["member.expired"] >= 2


def test_shards_in_several_processes_write_the_log_of_one(tmp_path):
    # the groups split over 2 and 3 processes (each replaying the cluster-wide events) merge into
    # the very log one process writes, with the same per-group summary
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO + """
[[events]]
at_s = 25
action = "node_down"
node = 1
[[events]]
at_s = 30
action = "slow"
group = "g-2"
members = [1]
kind = "heartbeat"
duration_ms = 7000
[[events]]
at_s = 32
action = "node_up"
node = 1
""")
    logs, summaries = {}, {}
    for workers in (1, 2, 3):
        out = tmp_path / f"w{workers}"
        subprocess.run([sys.executable, "-m", "groupcoord.cli", "simulate", str(path), "--seed", "7",
                        "--out", str(out), "--no-progress", "--workers", str(workers), "--events-format", "jsonl"],
                       check=True, capture_output=True, timeout=120)
        logs[workers] = (out / "events.jsonl").read_bytes()
        summaries[workers] = json.loads((out / "summary.json").read_text())
    assert logs[1] == logs[2] == logs[3] and len(logs[1].splitlines()) > 500
    assert summaries[1]["groups"] == summaries[2]["groups"] == summaries[3]["groups"]
    assert summaries[3]["workers"] == 3 and "workers" not in summaries[1]
    kinds = Counter(json.loads(line)["event"] for line in logs[1].splitlines())
    assert kinds["member.expired"] >= 2 and kinds["client.stopped"] >= 7
    groups = {json.loads(line)["group"] for line in logs[1].splitlines()}
    assert groups == {"g-0", "g-1", "g-2"}


def test_a_worker_hands_its_shard_log_over_in_a_file_or_through_the_pipe(tmp_path):
    sc = scenario.from_dict({"duration_s": 20, "topics": {"t": 2}, "groups": [
        {"name": "a", "topics": ["t"], "members": 2, "count": 2}]})
    events, _ = simulate._run_shard((sc, 3, ["a-1"], None))
    assert len(events) > 10
    path = tmp_path / "shard"
    log, summary = simulate._run_shard_elsewhere((sc, 3, ["a-1"], str(path), 1))
    assert log is None and summary["groups"].keys() == {"a-1"}
    assert simulate._shard_log(log, str(path)) == events
    # a file that cannot be written (here: a directory in its place): the log comes in the answer
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    log, _ = simulate._run_shard_elsewhere((sc, 3, ["a-1"], str(blocked), 1))
    assert isinstance(log, bytes) and simulate._shard_log(log, str(blocked)) == events


def test_a_sharded_run_leaves_no_file_behind(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)         # TMPDIR is read again
    sc = scenario.from_dict({"duration_s": 20, "topics": {"t": 2}, "groups": [
        {"name": "a", "topics": ["t"], "members": 2, "count": 3}]})
    events, summary, _ = simulate.simulate(sc, 3, workers=3)
    assert summary["workers"] == 3 and len(events) > 30 and list(tmp_path.iterdir()) == []
    monkeypatch.setattr(simulate, "_run_shard", lambda args: 1 / 0)    # the caller's own shard fails
    with pytest.raises(ZeroDivisionError):
        simulate.simulate(sc, 3, workers=2)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("workers", [1, 2])
def test_a_streamed_run_writes_what_a_held_one_writes(workers, tmp_path, monkeypatch):
    # simulate_to (the CLI's): each shard hands its events on to a file as it goes (here every few
    # events, at the end of a ms), and the files are merged as they are written and summarized;
    # the files and the summary must be those of the log held whole
    from groupcoord.sim.model import write_outputs
    sc = scenario.from_dict({**tomllib.loads(SCENARIO), "events": [
        {"at_s": 20, "action": "crash", "group": "g-1", "members": [0]},
        {"at_s": 25, "action": "node_down", "node": 1}, {"at_s": 28, "action": "node_up", "node": 1}]})
    events, summary, resolved = simulate.simulate(sc, 5, workers=workers)
    write_outputs(tmp_path / "held", events, resolved, summary, event_format="both")
    monkeypatch.setattr(simulate, "_SPILL", 7)
    streamed, resolved2 = simulate.simulate_to(sc, 5, tmp_path / "streamed", workers=workers, event_format="both")
    assert resolved2 == resolved
    held = tmp_path / "held"
    out = tmp_path / "streamed"
    assert (out / "events.jsonl").read_bytes() == (held / "events.jsonl").read_bytes()
    assert len(events) > 300 and streamed["events"] == len(events)
    for run in (streamed, summary):
        for key in ("wall_s", "virtual_s_per_wall_s"):
            run.pop(key)
    assert streamed == summary
    assert json.loads((out / "summary.json").read_text())["groups"] == summary["groups"]
    import pyarrow.parquet as pq
    files = sorted(f.name for f in (held / "events").iterdir())
    assert files == sorted(f.name for f in (out / "events").iterdir())
    for name in files:
        assert pq.read_table(out / "events" / name).equals(pq.read_table(held / "events" / name))
    # without out_dir: the summary alone
    alone, _ = simulate.simulate_to(sc, 5, workers=workers)
    alone.pop("wall_s"), alone.pop("virtual_s_per_wall_s")
    assert alone == summary


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_sharded_run_writes_the_parquet_files_of_the_held_log(workers, tmp_path, monkeypatch):
    # with Parquet alone, the shards turn their events into columns and the parent merges those
    # (eventfile.write_parts): the files are those of the log held whole, byte for byte
    from groupcoord.sim.eventfile import EventWriter
    from groupcoord.sim.model import write_outputs
    sc = scenario.from_dict({**tomllib.loads(SCENARIO), "events": [
        {"at_s": 20, "action": "crash", "group": "g-1", "members": [0]},
        {"at_s": 25, "action": "node_down", "node": 1}, {"at_s": 28, "action": "node_up", "node": 1}]})
    monkeypatch.setattr(EventWriter, "CHUNK", 16)          # (the workers fork with these)
    monkeypatch.setattr(EventWriter, "ROW_GROUP", 64)
    events, summary, resolved = simulate.simulate(sc, 5)
    write_outputs(tmp_path / "held", events, resolved, summary, event_format="parquet")
    streamed, _ = simulate.simulate_to(sc, 5, tmp_path / "streamed", workers=workers, event_format="parquet")
    assert streamed.get("workers", 1) == workers and streamed["events"] == len(events) > 300
    files = sorted(f.name for f in (tmp_path / "held" / "events").iterdir())
    assert files == sorted(f.name for f in (tmp_path / "streamed" / "events").iterdir()) and len(files) > 8
    for name in files:
        assert (tmp_path / "streamed" / "events" / name).read_bytes() == \
            (tmp_path / "held" / "events" / name).read_bytes(), name
    assert not (tmp_path / "streamed" / "events.jsonl").exists()


def test_a_streamed_run_leaves_no_file_behind(tmp_path, monkeypatch):
    import tempfile
    _own_tmpdir(tmp_path, monkeypatch)
    sc = scenario.from_dict({"duration_s": 20, "topics": {"t": 2}, "groups": [
        {"name": "a", "topics": ["t"], "members": 2, "count": 3}]})
    summary, _ = simulate.simulate_to(sc, 3, tmp_path / "out", workers=3, event_format="parquet")
    assert summary["workers"] == 3 and summary["events"] > 30
    assert list((tmp_path / "tmp").iterdir()) == []
    assert sorted(f.name for f in (tmp_path / "out").iterdir()) == ["events", "scenario.json", "summary.json"]
    monkeypatch.setattr(simulate, "_run_batches_to_elsewhere", _fails)      # a shard fails
    with pytest.raises(ZeroDivisionError):
        simulate.simulate_to(sc, 3, tmp_path / "out2", workers=2)
    assert list((tmp_path / "tmp").iterdir()) == []
    monkeypatch.undo()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setattr(simulate, "_SPILL", 5)
    from groupcoord.sim import model
    monkeypatch.setattr(model.RunOutput, "add", lambda self, e: _fails(e))   # the writing fails in the merge
    with pytest.raises(ZeroDivisionError):
        simulate.simulate_to(sc, 3, tmp_path / "out3", workers=2, event_format="jsonl")
    assert list((tmp_path / "tmp").iterdir()) == []


def _own_tmpdir(tmp_path, monkeypatch) -> None:
    """The run's temporary files in tmp_path/tmp (TMPDIR, read again by tempfile)."""
    import tempfile
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", None)


def _four_batches(monkeypatch):
    """A scenario of four groups of 2 members, each group a batch of its own."""
    monkeypatch.setattr(simulate, "_BATCH_MEMBERS", 2)
    return scenario.from_dict({"duration_s": 20, "topics": {"t": 2}, "groups": [
        {"name": "a", "topics": ["t"], "members": 2, "count": 4}]})


def _fails(args):
    raise ZeroDivisionError


@pytest.mark.skipif(sys.platform != "linux", reason="the workers are forked (they inherit the run's stand-in)")
def test_a_worker_free_first_runs_the_batches_another_would_have(tmp_path, monkeypatch):
    # the workers take the run's batches as they come: while one is held on the first batch, the
    # other runs every other one (with each shard's batches a worker's own, the held worker's
    # second batch would wait, and the run with it), and the log is the one of a single process
    import multiprocessing
    sc = _four_batches(monkeypatch)
    assert [simulate.batches(sc, shard) for shard in simulate.shards(sc, 2)] == \
        [[["a-0"], ["a-2"]], [["a-1"], ["a-3"]]]
    alone, _ = simulate.simulate_to(sc, 3, tmp_path / "alone", workers=1, event_format="parquet")
    ctx = multiprocessing.get_context("fork")
    others_done, others = ctx.Event(), ctx.Value("q", 0)
    real = simulate._run_batch_to

    def run(sc, seed, groups, path, columns, progress):
        if groups == ["a-0"]:           # (the first batch taken)
            assert others_done.wait(60), "the other batches waited for this one"
        summary = real(sc, seed, groups, path, columns, progress)
        (tmp_path / f"ran-{groups[0]}").write_text(str(os.getpid()))
        if groups != ["a-0"]:
            with others.get_lock():
                others.value += 1
                if others.value == 3:
                    others_done.set()
        return summary
    monkeypatch.setattr(simulate, "_run_batch_to", run)
    sharded, _ = simulate.simulate_to(sc, 3, tmp_path / "sharded", workers=2, event_format="parquet")
    ran = {g: (tmp_path / f"ran-{g}").read_text() for g in sc.group_ids()}
    assert len({ran["a-1"], ran["a-2"], ran["a-3"]}) == 1 and ran["a-0"] != ran["a-1"]
    assert sharded["groups"] == alone["groups"] and sharded["events"] == alone["events"] > 30
    for f in (tmp_path / "alone" / "events").iterdir():
        assert (tmp_path / "sharded" / "events" / f.name).read_bytes() == f.read_bytes()


@pytest.mark.skipif(sys.platform != "linux", reason="the workers are forked (they inherit the run's stand-in)")
@pytest.mark.parametrize("how", ["raises", "killed"])
@pytest.mark.timeout(120)
def test_a_batch_failing_after_others_ends_the_run_and_leaves_nothing(how, tmp_path, monkeypatch):
    # a worker's batch fails (an error; its process killed) while the workers take batches: the
    # run ends with that error, the other worker too, and no file of the run is left behind
    import threading
    _own_tmpdir(tmp_path, monkeypatch)
    sc = _four_batches(monkeypatch)
    real = simulate._run_batch_to

    def run(sc, seed, groups, path, columns, progress):
        if groups == ["a-3"]:           # (the last batch taken)
            _fails(None) if how == "raises" else _killed(None)
        return real(sc, seed, groups, path, columns, progress)
    monkeypatch.setattr(simulate, "_run_batch_to", run)
    before = set(threading.enumerate())
    with pytest.raises(ZeroDivisionError if how == "raises" else simulate.WorkerDied):
        simulate.simulate_to(sc, 3, tmp_path / "out", workers=2, event_format="parquet")
    assert list((tmp_path / "tmp").iterdir()) == [] and not (tmp_path / "out").exists()
    assert set(threading.enumerate()) == before


def _waits_for_idle(job):
    # (a worker: the "slow" one ends only once the parent has been told a processor is free)
    return job[1].wait(60) if job[0] == "slow" else "quick"


@pytest.mark.skipif(sys.platform != "linux", reason="the workers are forked (they inherit the event)")
def test_the_parent_is_told_once_when_a_worker_is_done_and_another_runs():
    # (what the merge of a Parquet log imports is imported then: see simulate._merge_ready)
    import multiprocessing
    free = multiprocessing.get_context("fork").Event()
    told = []

    def idle():
        told.append(True)
        free.set()
    with simulate._shard_processes(_waits_for_idle, [("slow", free), ("quick", None)]) as (running, _):
        assert running.results(idle=idle) == [True, "quick"] and told == [True]


def test_shards_run_in_spawned_processes_where_fork_is_not_offered(monkeypatch):
    # (macOS and Windows): the job, the pipe and the shared clocks pickled to a new interpreter
    import multiprocessing
    sc = scenario.from_dict({"duration_s": 20, "topics": {"t": 2}, "groups": [
        {"name": "a", "topics": ["t"], "members": 2, "count": 3}]})
    events, summary, _ = simulate.simulate(sc, 3)
    shown = []

    @contextlib.contextmanager
    def recorded(name, end):
        yield shown.append
    monkeypatch.setattr(simulate, "progress_bar", recorded)
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    sharded, by_shards, _ = simulate.simulate(sc, 3, workers=3, progress=True)
    assert sharded == events and by_shards["workers"] == 3 and shown[-1] == sc.duration_ms
    streamed, _ = simulate.simulate_to(sc, 3, workers=2)
    assert streamed["events"] == len(events) and streamed["groups"] == summary["groups"]


def test_a_sharded_run_leaves_no_thread_behind(monkeypatch):
    # a thread left running (concurrent.futures' pool leaves its manager thread after a failure)
    # may hold a lock when the next run forks its workers: a worker then waits for it forever
    import threading
    sc = scenario.from_dict({"duration_s": 20, "topics": {"t": 2}, "groups": [
        {"name": "a", "topics": ["t"], "members": 2, "count": 3}]})
    before = set(threading.enumerate())
    simulate.simulate_to(sc, 3, workers=3, progress=False)
    simulate.simulate(sc, 3, workers=3)
    assert set(threading.enumerate()) == before
    monkeypatch.setattr(simulate, "_run_batches_to_elsewhere", _fails)
    with pytest.raises(ZeroDivisionError) as e:
        simulate.simulate_to(sc, 3, workers=2)
    assert set(threading.enumerate()) == before
    assert "_fails" in str(e.value.__cause__)      # the worker's traceback comes with its error
    monkeypatch.setattr(simulate, "_run_shard", _fails)     # the caller's own shard fails
    with pytest.raises(ZeroDivisionError):
        simulate.simulate(sc, 3, workers=3)
    assert set(threading.enumerate()) == before


def test_events_that_will_not_marshal_are_spilled_pickled(tmp_path, monkeypatch):
    path = tmp_path / "spill"
    chunks = [[{"ts_ms": 1, "x": 1}], [{"ts_ms": 2, "x": Counter(a=1)}], [{"ts_ms": 3, "x": [2]}],
              [{"ts_ms": 4, "x": i} for i in range(7)] + [{"ts_ms": 5, "x": Counter(b=2)}]]
    monkeypatch.setattr(simulate, "_FRAME_EVENTS", 3)      # a chunk in frames of at most 3 events
    with open(path, "wb") as f:
        spill = simulate._spill_into(f)
        for c in chunks:
            spill(c)
    assert list(simulate._spilled(str(path))) == [e for c in chunks for e in c]
    # what a reader holds at once: a frame
    held = []
    with open(path, "rb") as f:
        while head := f.read(simulate._FRAME.size):
            frame = simulate.marshal.loads(f.read(simulate._FRAME.unpack(head)[0]))
            held.append(len(pickle.loads(frame) if isinstance(frame, bytes) else frame))
    assert held == [1, 1, 1, 3, 3, 2]


def test_heartbeats_answered_at_once_give_the_log_of_the_whole_pipeline(monkeypatch):
    # the simulator answers a heartbeat through heartbeat.answer with its connection's kept context;
    # through the service's handle (the lane off) the log must be the same, coordinator moves included
    sc = scenario.from_dict({**tomllib.loads(SCENARIO), "events": [
        {"at_s": 12, "action": "node_down", "node": 1}, {"at_s": 16, "action": "node_up", "node": 1},
        {"at_s": 22, "action": "crash", "group": "g-1", "members": [0]}]})
    lane = simulate.Simulator(sc, 9).run()
    monkeypatch.setattr(simulate, "_HEARTBEAT", -1)
    whole = simulate.Simulator(sc, 9).run()
    assert lane == whole and sum(e["event"] == "member.expired" for e in lane) >= 1


def test_a_shard_runs_its_groups_in_batches_of_a_few_members(monkeypatch):
    sc = scenario.from_dict({"topics": {"t": 1}, "groups": [
        {"name": "a", "topics": ["t"], "members": 10, "count": 3},
        {"name": "b", "topics": ["t"], "members": 25},
        {"name": "c", "topics": ["t"], "members": 0}]})
    assert simulate.batches(sc, None) == [None] and simulate.batches(sc, ["b", "a-1"]) == [["b", "a-1"]]
    monkeypatch.setattr(simulate, "_BATCH_MEMBERS", 20)
    # consecutive groups of at most 20 members (a larger one alone; an empty one counts as one)
    assert simulate.batches(sc, None) == [["a-0", "a-1"], ["a-2"], ["b"], ["c"]]
    assert simulate.batches(sc, ["c", "a-2", "b", "a-0"]) == [["c", "a-2"], ["b"], ["a-0"]]
    monkeypatch.setattr(simulate, "_BATCH_MEMBERS", 100)
    assert simulate.batches(sc, ["b", "a-1"]) == [["b", "a-1"]]
    # producers: a shard runs whole (each batch would produce their records again)
    monkeypatch.setattr(simulate, "_BATCH_MEMBERS", 20)
    produced = scenario.from_dict({**sc.to_dict(), "produce": [{"topic": "t", "rate_per_s": 10}]})
    assert simulate.batches(produced, None) == [None] and simulate.batches(produced, ["b", "a-1"]) == [["b", "a-1"]]
    # at most _MAX_BATCHES batches a shard (a JSON-lines merge opens a file a batch): larger ones
    monkeypatch.setattr(simulate, "_MAX_BATCHES", 4)
    assert simulate.batches(sc, None) == [["a-0", "a-1", "a-2"], ["b", "c"]]       # (56 members: 38 a batch)
    for most in (2, 3, 5):
        monkeypatch.setattr(simulate, "_MAX_BATCHES", most)
        monkeypatch.setattr(simulate, "_BATCH_MEMBERS", 1)
        assert 1 <= len(simulate.batches(sc, None)) <= most


@pytest.mark.parametrize("workers", [1, 2])
def test_a_run_in_batches_writes_the_log_of_one_simulation_of_all(workers, tmp_path, monkeypatch):
    # a shard runs its groups in batches, one simulation after another (a request costs more the
    # more members a simulation holds): the log, its files and the groups' summaries must be those
    # of one simulation of every group, cluster-wide events (replayed by each batch) included
    from groupcoord.sim.eventfile import EventWriter
    from groupcoord.sim.model import write_outputs
    sc = scenario.from_dict({**tomllib.loads(SCENARIO), "events": [
        {"at_s": 20, "action": "crash", "group": "g-1", "members": [0]},
        {"at_s": 25, "action": "node_down", "node": 1}, {"at_s": 28, "action": "node_up", "node": 1},
        {"at_s": 30, "action": "add_partitions", "topic": "t", "partitions": 14}]})
    monkeypatch.setattr(EventWriter, "CHUNK", 16)          # (the workers fork with these)
    monkeypatch.setattr(EventWriter, "ROW_GROUP", 64)
    events, summary, resolved = simulate.simulate(sc, 5)
    assert simulate.batches(sc, None) == [None]
    monkeypatch.setattr(EventWriter, "PIECE", 5)            # (the merge reads the parts' chunks piece by piece)
    monkeypatch.setattr(simulate, "_FRAME_EVENTS", 3)       # (and the spilled files frame by frame)
    write_outputs(tmp_path / "whole", events, resolved, summary, event_format="both")
    monkeypatch.setattr(simulate, "_BATCH_MEMBERS", 5)
    assert simulate.batches(sc, None) == [["g-0"], ["g-1"], ["g-2"]]
    shown = []

    @contextlib.contextmanager
    def recorded(name, end):
        yield shown.append
    monkeypatch.setattr(simulate, "progress_bar", recorded)
    batched, by_batches, resolved2 = simulate.simulate(sc, 5, workers=workers, progress=workers == 1)
    assert batched == events and resolved2 == resolved and len(events) > 300
    for key in ("groups", "events", "clients", "notes"):
        assert by_batches[key] == summary[key], key
    assert list(by_batches["groups"]) == list(summary["groups"])        # (in the same order)
    assert by_batches.get("workers", 1) == workers
    if workers == 1:            # the batches move one bar on, each its third of it
        end = sc.duration_ms
        assert shown == sorted(shown) and {end // 3, 2 * end // 3, end} <= set(shown)
    for fmt in ("both", "parquet"):
        out = tmp_path / f"batched-{fmt}"
        streamed, _ = simulate.simulate_to(sc, 5, out, workers=workers, event_format=fmt)
        assert streamed["groups"] == summary["groups"] and streamed["events"] == len(events)
        files = sorted(f.name for f in (tmp_path / "whole" / "events").iterdir())
        assert files == sorted(f.name for f in (out / "events").iterdir()) and len(files) > 8
        for name in files:
            assert (out / "events" / name).read_bytes() == (tmp_path / "whole" / "events" / name).read_bytes(), name
    assert (tmp_path / "batched-both" / "events.jsonl").read_bytes() == (tmp_path / "whole" / "events.jsonl").read_bytes()


def test_shards_balance_members():
    sc = scenario.from_dict({"topics": {"t": 1}, "groups": [
        {"name": "a", "topics": ["t"], "members": 10, "count": 3},
        {"name": "b", "topics": ["t"], "members": 25}]})
    parts = simulate.shards(sc, 2)
    sizes = sorted(sum(sc.spec_of(g).members for g in part) for part in parts)
    assert sizes == [25, 30] and sorted(g for p in parts for g in p) == sorted(sc.group_ids())
    assert len(simulate.shards(sc, 8)) == 4                  # no more shards than groups
    assert simulate.shards(sc, 1) == [["b", "a-0", "a-1", "a-2"]]


def test_the_agenda_runs_each_ms_in_the_order_things_were_scheduled_for_it():
    # the timing wheel spans 8.2 s: an item scheduled further ahead waits in a heap and must still
    # run before what is scheduled later for the same ms; what an item schedules for its own ms
    # runs in that ms, after what was already due
    sim = simulate.Simulator(three("range", []), 1)
    ran = []

    def note(what):
        ran.append((sim.now, what))

    def at_15s(_):
        sim._push(20_000, note, "at 15 s for 20 s")
        sim._push(15_000, note, "at 15 s for now")

    sim._push(20_000, note, "at 0 for 20 s")
    sim._push(15_000, at_15s, None)
    sim._push(15_000, note, "at 0 for 15 s")
    sim.run()
    assert ran == [(15_000, "at 0 for 15 s"), (15_000, "at 15 s for now"),
                   (20_000, "at 0 for 20 s"), (20_000, "at 15 s for 20 s")]


def test_a_run_turns_the_cyclic_gc_off_and_back_as_it_was():
    import gc
    was = gc.isenabled()
    try:
        for state in (True, False):
            gc.enable() if state else gc.disable()
            seen = []
            sim = simulate.Simulator(three("range", []), 1)
            sim._push(1_000, lambda _: seen.append(gc.isenabled()), None)
            sim.run()
            assert seen == [False] and gc.isenabled() is state
    finally:
        gc.enable() if was else gc.disable()


def test_what_a_run_made_is_not_walked_by_the_next_young_collection():
    # made while the collector was off, it goes to the oldest generation: the allocations that
    # follow do not start a collection of the young ones (which would walk all of it)
    import gc
    was = gc.isenabled()
    starts = []

    def note(phase, info):
        if phase == "start":
            starts.append(info["generation"])
    gc.enable()
    try:
        with simulate._no_cyclic_gc():
            made = [[] for _ in range(5000)]
            gc.callbacks.append(note)
        after = [[] for _ in range(100)]
    finally:
        gc.callbacks.remove(note)
        gc.enable() if was else gc.disable()
    assert starts == [] and len(made) + len(after) == 5100


def test_a_finished_run_is_collected():
    import gc
    from groupcoord.client.member import Member

    def members() -> int:
        return sum(type(o) is Member for o in gc.get_objects())
    gc.collect()
    before = members()
    for _ in range(2):
        simulate.Simulator(three("range", []), 1).run()
    gc.collect()
    assert members() == before and gc.get_freeze_count() == 0


def test_a_round_trip_longer_than_the_heartbeat_interval_sends_the_next_heartbeat_at_once():
    """Kafka's heartbeat timer runs from the send: with 2 s each way and heartbeats every 3 s, each
    heartbeat is due when the previous one's response arrives, so they go out every 4 s (the
    simulator's shortcut after a successful heartbeat must not wait for the 5 s auto-commit)."""
    sc = scenario.from_dict({
        "duration_s": 120, "topics": {"t": 4}, "network": {"latency": {"dist": "fixed", "ms": 2000}},
        "coordinator": {"config": {"group.initial.rebalance.delay.ms": 0}},
        "groups": [{"name": "g", "topics": ["t"], "members": 2, "session_timeout_ms": 45000,
                    "heartbeat_interval_ms": 3000}]})
    sim = simulate.Simulator(sc, 1)
    arrivals: dict[str, list[int]] = {}

    def spy(ctx, body):                 # (a hook: every request goes through the service's pipeline)
        if ctx.api_key == 12:
            arrivals.setdefault(body["member_id"], []).append(sim.now)
    sim.service.before_request.append(spy)
    events = sim.run()
    assert len(of(events, "group.state_change", state_to="Stable")) >= 1
    assert len(arrivals) == 2
    for times in arrivals.values():
        gaps = Counter(b - a for a, b in zip(times, times[1:]))
        assert gaps.most_common(1)[0][0] == 4000, gaps
        assert sum(n for gap, n in gaps.items() if gap > 4000) <= 1, gaps    # the rebalance's


def test_the_next_occupied_slot_is_found_around_the_wheel():
    """_next_slot (the sparse agenda's skip-ahead) against a plain scan, near, far and wrapped."""
    import random

    rng = random.Random(7)
    size = simulate._WHEEL
    for _ in range(500):
        wheel = [[] for _ in range(size)]
        for _ in range(rng.choice([1, 2, 5, 50])):
            wheel[rng.randrange(size)].append(None)
        i = rng.choice([rng.randrange(size), size - 1, size - 200, 0])
        expect = next(k for k in range(size) if wheel[(i + k) % size])
        assert simulate._next_slot(wheel, i) == expect


def test_a_commit_acknowledged_when_the_next_is_due_does_not_cancel_that_wake_up():
    """700 ms each way and auto-commits every 1.4 s: each commit's response arrives in the very ms
    the next auto-commit is due, while the member's wake-up for it still waits in that ms. The
    simulator must poll then (a settled response keeps only a wake-up still ahead), so the member
    commits every 1.4 s rather than once the next heartbeat's response wakes it."""
    sc = scenario.from_dict({
        "duration_s": 60, "topics": {"t": 4}, "network": {"latency": {"dist": "fixed", "ms": 700}},
        "coordinator": {"config": {"group.initial.rebalance.delay.ms": 0}},
        "groups": [{"name": "g", "topics": ["t"], "members": 2, "session_timeout_ms": 45000,
                    "heartbeat_interval_ms": 3000, "auto_commit_interval_ms": 1400}]})
    events = simulate.Simulator(sc, 1).run()
    for client in ("g/m000", "g/m001"):
        times = [e["ts_ms"] for e in of(events, "client.committed", client=client) if e["ts_ms"] > 15000]
        assert len(times) > 20
        assert {b - a for a, b in zip(times, times[1:])} == {1400}, times


def test_the_hot_objects_keep_their_attributes_fast_to_reach():
    # CPython 3.11 specializes attribute access and method calls on an instance whose dict shares
    # its keys with its class's other instances, which it does up to 30 keys: the member and
    # each of its parts stay below that (the simulator keeps its attributes in slots)
    sim = simulate.Simulator(three("cooperative-sticky", [{"at_s": 20, "action": "restart", "group": "g",
                                                            "members": [0]}]), 1)
    sim.run()
    members = [c.handle.member for c in sim.clients.values()]
    assert len(members) == 3
    parts = ("net", "metadata", "discovery", "membership", "heartbeat", "commits", "offsets", "fetcher")
    for m in members:
        for obj in (m, *(getattr(m, p) for p in parts)):
            assert len(vars(obj)) <= 30, (type(obj).__name__, sorted(vars(obj)))
    assert not hasattr(sim, "__dict__")


def test_a_frozen_member_is_a_zombie_not_a_violation():
    # m001 freezes for 15 s at 20 s (no heartbeats): expired one session later, its partitions go to
    # the others while it still believes it owns them (until it wakes and finds out): zombie
    # overlaps, not ownership violations (before, the summary counted them as violations)
    ev = simulate.run(three("range", [{"at_s": 20, "action": "slow", "members": [1], "kind": "heartbeat",
                                       "duration_ms": 15000}]), 1)
    g = summarize(ev)["g"]
    assert g["expired"] == 1 and g["ownership_violations"] == 0
    assert g["zombie_overlaps"] == 2                     # m001's partitions 2 and 3
    (lost,) = of(ev, "client.lost", client="g/m001")
    assert lost["ts_ms"] == 35000 and lost["partitions"] == [["t", 2], ["t", 3]]


def test_request_faults_fire_in_virtual_time():
    # the request pipeline is the service's, so the simulator gets request faults: the first
    # heartbeat of the Stable group answered REBALANCE_IN_PROGRESS makes its member rejoin (a
    # second rebalance), a 700 ms latency holds the next heartbeat in virtual time, and a dropped
    # one breaks that member's connection
    sc = scenario.apply_overrides(three("range", []), {"duration_s": 30})
    sim = simulate.Simulator(sc, 1)
    faults = sim.service.faults
    faults.add({"api": "Heartbeat", "group": "g", "count": 1, "error": "REBALANCE_IN_PROGRESS"})
    faults.add({"api": "Heartbeat", "group": "g", "count": 1, "skip": 10, "latency_ms": 700})
    faults.add({"api": "Heartbeat", "group": "g", "count": 1, "skip": 20, "drop": True})
    ev = sim.run()
    check_all(ev)
    fired = list(faults.log)
    assert [(f["fault"], f["error"], f["latency_ms"], f["drop"]) for f in fired] == [
        ("f1", "REBALANCE_IN_PROGRESS", 0, False), ("f2", None, 700, False), ("f3", None, 0, True)]
    assert 3000 <= fired[0]["ts_ms"] < fired[1]["ts_ms"] < fired[2]["ts_ms"] <= 30000     # virtual ms
    first = fired[0]["ts_ms"]
    g = summarize(ev)["g"]
    assert g["rebalances"] == 2 and g["generation"] == 2 and g["state"] == "Stable"
    # the rejoin came right after the faulty heartbeat, in virtual time
    (second,) = [e for e in of(ev, "rebalance.started") if e["ts_ms"] >= first]
    assert second["ts_ms"] - first < 1000
    assert sim.summary(ev)["groups"]["g"]["final"]["check"] == "ok"


def test_without_faults_the_same_scenario_rebalances_once():
    g = summarize(simulate.run(scenario.apply_overrides(three("range", []), {"duration_s": 30}), 1))["g"]
    assert (g["rebalances"], g["generation"]) == (1, 1)


CONSUMER = """
duration_s = 40
[coordinator]
nodes = 2
config = { "group.consumer.min.heartbeat.interval.ms" = 500, "group.consumer.min.session.timeout.ms" = 6000 }
[network]
latency = { dist = "uniform", min_ms = 1, max_ms = 6 }
[topics]
t = 12
[[groups]]
name = "g"
count = 3
group_protocol = "consumer"
remote_assignor = "uniform"
topics = ["t"]
members = 5
session_timeout_ms = 6000
heartbeat_interval_ms = 500
[[events]]
at_s = 10
action = "crash"
count = 2
restart_after_ms = 8000
[[events]]
at_s = 20
action = "restart"
group = "g-0"
interval_ms = 300
[[events]]
at_s = 25
action = "move_coordinator"
group = "g-1"
"""


def test_consumer_protocol_groups_in_virtual_time(tmp_path):
    # KIP-848 members: the crash is noticed at the group's own session timeout (a group config),
    # the rolling restart moves only what it must, and every group ends Stable with all owned
    path = tmp_path / "c.toml"
    path.write_text(CONSUMER)
    sc = scenario.load(path)
    events, summary, _ = simulate.simulate(sc, 5)
    check_all(events)
    assert {e["protocol"] for e in of(events, "client.started")} == {"consumer"}
    fenced = of(events, "consumer.member_fenced")
    assert len(fenced) == 6 and {e["reason"] for e in fenced} == {"session_timeout"}
    assert {e["timeout_ms"] for e in fenced} == {6000}
    for e in fenced:        # fenced 6 s (at most one heartbeat interval more) after the crash at 10 s
        assert 10000 + 6000 - 500 <= e["ts_ms"] <= 10000 + 6000 + 500
    for gid in sc.group_ids():
        g = summary["groups"][gid]
        assert g["final"]["check"] == "ok" and g["final"]["state"] == "Stable", (gid, g)
        assert g["ownership_violations"] == 0 and g["rebalances"] > 0
    # the members' epochs follow the group's: the last client.state of each running member is
    # STABLE at the group's final epoch
    last = {}
    for e in of(events, "client.state"):
        last[e["client"]] = e
    for gid in sc.group_ids():
        epoch = summary["groups"][gid]["final"]["generation"]
        running = {e["client"] for e in of(events, "client.started", group=gid)}
        assert {(last[c]["state"], last[c]["generation"]) for c in running} == {("STABLE", epoch)}


def test_consumer_protocol_runs_are_deterministic_and_shard(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CONSUMER)
    a = _simulate_cli(path, tmp_path / "a", 42, 1)
    b = _simulate_cli(path, tmp_path / "b", 42, 2)
    assert a == b and len(a.splitlines()) > 500
    assert _simulate_cli(path, tmp_path / "c", 43, 1) != a
    out = tmp_path / "w2"
    subprocess.run([sys.executable, "-m", "groupcoord.cli", "simulate", str(path), "--seed", "42",
                    "--out", str(out), "--no-progress", "--workers", "2", "--events-format", "jsonl"],
                   check=True, capture_output=True, timeout=120)
    assert (out / "events.jsonl").read_bytes() == a


def test_the_summary_finds_a_classic_group_left_empty():
    # every member leaves: the classic group is Empty (an empty ClassicGroup is falsy: the summary
    # must still find it, not look for a consumer group of that id)
    sc = three("range", [{"at_s": 20, "action": "leave"}])
    events, summary, _ = simulate.simulate(sc, 2)
    final = summary["groups"]["g"]["final"]
    assert (final["state"], final["members"], final["running_clients"]) == ("Empty", 0, 0)
    assert final["generation"] == max(e["generation"] for e in events if not e["event"].startswith("client."))


def _killed(args):
    import signal
    os.kill(os.getpid(), signal.SIGKILL)       # as the out-of-memory killer ends a process


@pytest.mark.timeout(120)          # (a wait for the dead worker would be forever)
def test_a_worker_killed_ends_the_run_with_an_error_not_a_wait(tmp_path, monkeypatch, capsys):
    # a shard's process killed mid-run (no result will ever come): the run fails at once, with a
    # one-line error from the CLI, and leaves nothing behind (multiprocessing.Pool waited forever)
    _own_tmpdir(tmp_path, monkeypatch)
    sc = scenario.from_dict({"duration_s": 20, "topics": {"t": 2}, "groups": [
        {"name": "a", "topics": ["t"], "members": 2, "count": 3}]})
    monkeypatch.setattr(simulate, "_run_batches_to_elsewhere", _killed)
    with pytest.raises(simulate.WorkerDied, match="died before its end"):
        simulate.simulate_to(sc, 3, tmp_path / "out", workers=2)
    monkeypatch.setattr(simulate, "_run_shard_elsewhere", _killed)
    with pytest.raises(simulate.WorkerDied):
        simulate.simulate(sc, 3, workers=3)
    assert list((tmp_path / "tmp").iterdir()) == [] and not (tmp_path / "out").exists()
    path = tmp_path / "s.toml"
    path.write_text('duration_s = 20\n[topics]\nt = 2\n[[groups]]\nname = "a"\ntopics = ["t"]\nmembers = 2\n'
                    'count = 3\n')
    from groupcoord.cli import main
    assert main(["simulate", str(path), "--workers", "2", "--out", str(tmp_path / "cli"), "--no-progress"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("groupcoord: a process running a shard of the simulation died")


@pytest.mark.skipif(sys.platform != "linux", reason="the run's processes are found in /proc")
def test_an_interrupted_sharded_run_ends_its_shards_and_writes_nothing(tmp_path):
    # Ctrl-C at a terminal goes to the whole process group: the run ends with a one-line message
    # and status 130, no shard's process left running, no output half written
    import signal
    import time
    path = tmp_path / "s.toml"
    path.write_text('duration_s = 36000\n[topics]\nt = 8\n[[groups]]\nname = "a"\ntopics = ["t"]\n'
                    'members = 8\ncount = 4\n')
    run = subprocess.Popen([sys.executable, "-m", "groupcoord.cli", "simulate", str(path), "--workers", "2",
                            "--out", str(tmp_path / "out"), "--no-progress"],
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    children = f"/proc/{run.pid}/task/{run.pid}/children"
    deadline = time.monotonic() + 120
    while len(open(children).read().split()) < 2:       # until both shards' processes run
        assert run.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGINT)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 130, err
    assert err.splitlines() == ["groupcoord: interrupted; nothing was written"]     # (no worker's traceback)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ProcessLookupError):     # nothing of the run's left
        for _ in range(100):
            os.killpg(run.pid, 0)
            time.sleep(0.05)


def _slow_shard(args):
    import time
    time.sleep(600)


def test_a_failing_shard_here_ends_the_others_at_once(tmp_path, monkeypatch):
    # simulate() runs the first shard itself: when it fails, the error comes at once, the other
    # shards' processes ended (leaving the processes' with-block would otherwise wait for them)
    import time
    sc = scenario.from_dict({"duration_s": 20, "topics": {"t": 2}, "groups": [
        {"name": "a", "topics": ["t"], "members": 2, "count": 3}]})
    monkeypatch.setattr(simulate, "_run_shard_elsewhere", _slow_shard)
    monkeypatch.setattr(simulate, "_run_shard", _fails)
    t0 = time.monotonic()
    with pytest.raises(ZeroDivisionError):
        simulate.simulate(sc, 3, workers=3)
    assert time.monotonic() - t0 < 60


class _Unreadable(Exception):
    def __init__(self, code, message):      # (pickled with one argument: cannot be read back)
        super().__init__(message)


def _raises_unreadable(args):
    raise _Unreadable(1, "x")


def test_an_error_that_cannot_come_back_is_named_not_taken_for_a_kill(monkeypatch):
    sc = scenario.from_dict({"duration_s": 20, "topics": {"t": 2}, "groups": [
        {"name": "a", "topics": ["t"], "members": 2, "count": 2}]})
    monkeypatch.setattr(simulate, "_run_batches_to_elsewhere", _raises_unreadable)
    with pytest.raises(simulate.WorkerDied, match="could not read back") as e:
        simulate.simulate_to(sc, 3, workers=2)
    assert e.value.__cause__ is not None


@pytest.mark.parametrize("streamed", [False, True])
def test_a_sharded_runs_progress_ends_with_its_slowest_shard(streamed, monkeypatch, tmp_path):
    # the first shard (the most members) is done long before the second (heartbeats and commits
    # 40 times as often): the bar (simulate's: the slowest shard's progress; simulate_to's: its
    # batches' on average) must not reach the end before the second does
    sc = scenario.from_dict({
        "duration_s": 900, "topics": {"t": 4},
        "coordinator": {"config": {"group.min.session.timeout.ms": 1000}},
        "groups": [{"name": "quiet", "topics": ["t"], "members": 6},
                   {"name": "busy", "topics": ["t"], "members": 5, "heartbeat_interval_ms": 75,
                    "session_timeout_ms": 1000, "auto_commit_interval_ms": 125}]})
    assert simulate.shards(sc, 2) == [["quiet"], ["busy"]]
    shown = []

    @contextlib.contextmanager
    def recorded(name, end):
        yield shown.append
    monkeypatch.setattr(simulate, "progress_bar", recorded)
    if streamed:
        simulate.simulate_to(sc, 3, tmp_path / "out", workers=2, progress=True)
    else:
        simulate.simulate(sc, 3, workers=2, progress=True)
    end = sc.duration_ms
    # (the end may be shown twice: once the busy shard's simulation ends, and once it has handed
    # its log over)
    assert shown == sorted(shown) and shown[-1] == end and any(0 < v < end for v in shown), shown
    assert all(v < end for v in shown[:shown.index(end)]) and set(shown[shown.index(end):]) == {end}
