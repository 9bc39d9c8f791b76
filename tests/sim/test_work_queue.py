"""Work queues in virtual time: share groups (KIP-932) and consumer groups whose members process the
records of [[produce]] producers (sim/work.py), checked from the log: everything produced is
delivered and acknowledged, a crashed share worker's records go to others at once (its connections
close), a hang longer than the acquisition lock sends its records to others and its late
acknowledgements fail, a consumer group waits for the session timeout; the same seed gives the same
log across processes and with --workers 2."""
from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from collections import defaultdict

from groupcoord.sim import scenario
from groupcoord.sim.events import check_event
from groupcoord.sim.simulate import simulate


def run(text: str, seed: int = 1) -> tuple[list[dict], dict]:
    sc = scenario.from_dict(tomllib.loads(text))
    events, summary, _ = simulate(sc, seed)
    for e in events:
        if e["event"].startswith(("client.", "producer.")):
            check_event(e)
    return events, summary


def produced(events) -> set[tuple[int, int]]:
    return {(e["partition"], o) for e in events if e["event"] == "producer.produced"
            for o in range(e["first"], e["last"] + 1)}


def deliveries(events, group: str) -> dict[tuple[int, int], list[tuple[int, str, int]]]:
    """(partition, offset) -> [(ts_ms, client, delivery count)] of every poll that got it."""
    out = defaultdict(list)
    for e in events:
        if e["event"] == "client.records_polled" and e["group"] == group:
            for _, p, first, last, count in e["records"]:
                for o in range(first, last + 1):
                    out[(p, o)].append((e["ts_ms"], e["client"], count))
    return out


def accepted(events, group: str) -> dict[tuple[int, int], list[str]]:
    out = defaultdict(list)
    for e in events:
        if e["event"] == "client.acknowledged" and e["group"] == group and e["error"] is None:
            for _, p, first, last, kind in e["records"]:
                if kind == "ACCEPT":
                    for o in range(first, last + 1):
                        out[(p, o)].append(e["client"])
    return out


SHARE = """
duration_s = 40
[coordinator]
config = {{ "group.initial.rebalance.delay.ms" = 0, "group.share.min.record.lock.duration.ms" = 1000 }}
[topics]
jobs = 2
[[groups]]
name = "q"
group_type = "share"
topics = ["jobs"]
members = 4
job_ms = {job}
max_poll_records = {max_poll}
lock_duration_ms = 5000
[[produce]]
topic = "jobs"
rate_per_s = {rate}
stop_s = 20
{events}
"""


def test_every_record_is_delivered_once_and_accepted_and_a_crashed_worker_s_records_come_back_at_once():
    events, summary = run(SHARE.format(job='{ dist = "exponential", mean_ms = 20 }', max_poll=5, rate=100, events="""
[[events]]
at_s = 10
action = "crash"
members = [1]
"""))
    everything = produced(events)
    assert len(everything) == 2000
    got = deliveries(events, "q")
    assert set(got) == everything
    ok = accepted(events, "q")
    assert set(ok) == everything and all(len(c) == 1 for c in ok.values())
    # the crashed worker's unacknowledged records: polled again by another worker with delivery count
    # 2, well before their 5 s locks would have expired (its connections closed: released at once)
    crash_ms = 10_000
    again = {k: d for k, d in got.items() if len(d) > 1}
    assert again, "the crashed worker held nothing"
    for k, d in again.items():
        (t1, c1, n1), (t2, c2, n2) = d
        assert (c1, n1, n2) == ("q/m001", 1, 2) and c2 != c1, (k, d)
        assert t1 < crash_ms < t2 < crash_ms + 1000, (k, d)
    assert all(n == 1 for k, d in got.items() if k not in again for _, _, n in d)
    work = summary["groups"]["q"]["work"]
    assert (work["records_polled"], work["accepted"], work["records_redelivered"]) == (
        2000 + len(again), 2000, len(again))


def test_a_hang_longer_than_the_lock_sends_the_records_to_another_and_its_late_acknowledgements_fail():
    """Each record takes 2 s; a worker hangs 8 s in the middle of one (its lock: 5 s): another worker
    gets it (delivery count 2), and the hung worker's acknowledgement of it fails when it resumes."""
    events, summary = run(SHARE.format(job='{ dist = "constant", ms = 2000 }', max_poll=1, rate=2, events="""
[[events]]
at_ms = 9000
action = "slow"
kind = "poll"
members = [0]
duration_ms = 8000
"""))
    got = deliveries(events, "q")
    hung = [k for k, d in got.items() if d[0][1] == "q/m000" and d[0][0] < 9000 <= d[0][0] + 2000]
    assert len(hung) == 1, {k: d for k, d in got.items() if d[0][1] == "q/m000"}
    [key] = hung
    (t1, _, n1), (t2, c2, n2) = got[key][:2]
    assert (n1, n2) == (1, 2) and c2 != "q/m000"
    assert t1 + 5000 <= t2 < 9000 + 8000                # its lock expired, before the worker came back
    failed = [e for e in events if e["event"] == "client.acknowledged" and e["client"] == "q/m000" and e["error"]]
    assert [(r[1], r[2], r[4]) for e in failed for r in e["records"]] == [(key[0], key[1], "ACCEPT")]
    assert failed[0]["error"] == "INVALID_RECORD_STATE" and failed[0]["ts_ms"] >= 9000 + 8000
    assert set(accepted(events, "q")) == produced(events)
    assert summary["groups"]["q"]["work"]["acknowledgements_failed"] == 1


CONSUMER = """
duration_s = 90
[coordinator]
config = { "group.initial.rebalance.delay.ms" = 0 }
[topics]
jobs = 2
[[groups]]
name = "c"
topics = ["jobs"]
members = 2
strategy = "cooperative-sticky"
session_timeout_ms = 10000
heartbeat_interval_ms = 1000
auto_commit = false
job_ms = { dist = "constant", ms = 5 }
max_poll_records = 10
[[produce]]
topic = "jobs"
rate_per_s = 20
stop_s = 30
[[events]]
at_s = 10
action = "crash"
members = [1]
"""


def test_a_consumer_group_work_queue_processes_everything_and_a_crashed_worker_s_partition_waits_for_its_session():
    events, summary = run(CONSUMER)
    everything = produced(events)
    got = deliveries(events, "c")
    assert set(got) == everything
    commits = defaultdict(int)
    for e in events:
        if e["event"] == "client.committed" and e["group"] == "c":
            for _, p, offset in e["offsets"]:
                commits[p] = max(commits[p], offset)
    assert dict(commits) == {p: max(o for q, o in everything if q == p) + 1 for p in (0, 1)}
    # the crashed worker's partition: nothing of it polled between the crash and the session's end
    crashed = {p for (p, _), d in got.items() for t, c, _ in d if c == "c/m001" and t < 10_000}
    assert len(crashed) == 1
    [p] = crashed
    gap = [t for (q, _), d in got.items() if q == p for t, c, _ in d if 10_000 <= t]
    assert min(gap) >= 10_000 + 10_000 - 1500, min(gap)    # (the session counts from its last heartbeat)
    assert summary["groups"]["c"]["work"]["records_processed"] >= len(everything)


TWO = """
duration_s = 25
[coordinator]
config = { "group.initial.rebalance.delay.ms" = 0 }
[topics]
jobs = 3
[[groups]]
name = "q"
group_type = "share"
topics = ["jobs"]
members = 5
job_ms = { dist = "pareto", scale_ms = 5, alpha = 1.5 }
max_poll_records = 5
[[groups]]
name = "c"
topics = ["jobs"]
members = 3
job_ms = { dist = "lognormal", median_ms = 10, sigma = 1 }
[[produce]]
topic = "jobs"
rate_per_s = 60
stop_s = 15
batch = 3
[[events]]
at_s = 5
action = "crash"
members = [1]
restart_after_ms = 3000
[[events]]
at_s = 8
action = "slow"
kind = "poll"
members = [2]
duration_ms = 4000
"""


def test_a_share_scenario_gives_the_same_log_across_processes_and_with_two_workers(tmp_path):
    path = tmp_path / "two.toml"
    path.write_text(TWO)
    logs = []
    for i, workers in enumerate(("1", "1", "2")):
        out = tmp_path / f"out{i}"
        subprocess.run([sys.executable, "-m", "groupcoord.cli", "simulate", str(path), "--seed", "7", "--workers",
                        workers, "--out", str(out), "--no-progress", "--events-format", "jsonl"], check=True, capture_output=True)
        logs.append((out / "events.jsonl").read_bytes())
    assert logs[0] == logs[1] == logs[2]
    events = [json.loads(line) for line in logs[0].splitlines()]
    kinds = {e["event"] for e in events}
    assert {"client.records_polled", "client.acknowledged", "producer.produced", "client.committed"} <= kinds
    assert len({e["client"] for e in events if e["event"] == "client.records_polled"}) == 8


def test_an_explicit_share_worker_leaving_in_the_middle_of_a_job_closes_cleanly():
    # the job under way ends after close() began: nothing is acknowledged then (before: IllegalStateError
    # out of the simulator, the member being closed)
    for at in range(5000, 5600, 30):
        events, _ = run(f"""
duration_s = 8
[coordinator]
config = {{ "group.initial.rebalance.delay.ms" = 0 }}
[network]
latency = 20
[topics]
t = 2
[[groups]]
name = "w"
group_type = "share"
acknowledgement_mode = "explicit"
topics = ["t"]
members = 2
job_ms = 300
max_poll_records = 1
[[produce]]
topic = "t"
rate_per_s = 20
[[events]]
at_ms = {at}
action = "leave"
members = [0]
""")
        stops = [e for e in events if e["event"] == "client.stopped"]
        assert [(e["client"], e["reason"]) for e in stops] == [("w/m000", "close")], at
