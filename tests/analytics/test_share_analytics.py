"""Work-queue analytics (analytics/share.py): share groups (KIP-932) and consumer groups used as work
queues, on logs written by hand so that every number below is known. One analysis per engine over
five logs (the RDD job's tables must equal the DataFrame pipeline's), then the tables' values:

- ``queue``: a share group with a record acknowledged, released then redelivered, rejected, one
  whose holder crashed, then closed, then released it at the delivery limit (archived), one whose
  lock expired, one never delivered (unfinished: all_settled fails), one held by two consumers at
  once (share_single_holder fails) and one delivered with a count above the limit (delivery_limit fails);
- ``jobs``: a consumer group (job_ms) with redeliveries after a crash, a rebalance and a close;
- ``late``: a share group whose producer stopped too late (all_settled not checked) and whose limit
  comes from the coordinator's config;
- ``bare.jsonl``: an events file without scenario.json (a share group known by its members' protocol);
- ``eager``: a log without work queues (tests/analytics/data): none of it in the work tables.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from groupcoord.analytics import job, share
from groupcoord.analytics.report import verdicts

DATA = Path(__file__).parent / "data"
WORK_TABLES = ("deliveries", "consumers", "redeliveries", "archived", "work")
ALL_TABLES = ("rebalances", "sessions", "groups", "invariants", "violations", "summary") + WORK_TABLES


@pytest.fixture(scope="module")
def spark():
    return job.spark_session()   # the active session when other modules made one


# ---------------------------------------------------------------- logs by hand
def member(kind, ts, group, client, gen=1, **fields):
    """A member event; a client name ending in "+" is the client started again (another member id)."""
    name = client.rstrip("+")
    return {"v": 1, "event": kind, "ts_ms": ts, "group": group, "client": name,
            "member": f"{name}-id{len(client) - len(name)}", "generation": gen, **fields}


def produced(ts, topic, partition, first, last):
    return {"v": 1, "event": "producer.produced", "ts_ms": ts, "producer": f"{topic}/p0", "topic": topic,
            "partition": partition, "first": first, "last": last}


def started(ts, group, client, protocol, gen=-1):
    return member("client.started", ts, group, client, gen, strategy=[], protocol=protocol, instance_id=None)


def stopped(ts, group, client, reason, gen=1):
    return member("client.stopped", ts, group, client, gen, reason=reason)


def polled(ts, group, client, runs, gen=1):
    return member("client.records_polled", ts, group, client, gen, records=runs)


def processed(ts, group, client, runs, started_ms, busy_ms, gen=1):
    return member("client.batch_processed", ts, group, client, gen, records=runs, started_ms=started_ms,
                  busy_ms=busy_ms)


def acked(ts, group, client, runs, error=None, gen=1):
    return member("client.acknowledged", ts, group, client, gen, records=runs, error=error)


def committed(ts, group, client, offsets, gen=1):
    return member("client.committed", ts, group, client, gen, offsets=offsets)


def write_log(path: Path, events, scenario=None) -> Path:
    events = sorted(events, key=lambda e: e["ts_ms"])       # stable: ties keep the order given
    text = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events)
    if scenario is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path
    path.mkdir(parents=True)
    (path / "events.jsonl").write_text(text)
    (path / "scenario.json").write_text(json.dumps(scenario))
    return path


M0, M1, M2 = "q/m000", "q/m001", "q/m002"


def queue_log(path: Path) -> Path:
    """Share group q on jobs (2 partitions, 4 records each, produced at 100), delivery limit 3, lock 15 s."""
    q = "q"
    events = [
        started(0, q, M0, "share"), started(0, q, M1, "share"), started(0, q, M2, "share"),
        produced(100, "jobs", 0, 0, 3), produced(100, "jobs", 1, 0, 3),
        polled(200, q, M0, [["jobs", 0, 0, 3, 1]], gen=5),
        polled(200, q, M2, [["jobs", 1, 0, 0, 1], ["jobs", 1, 2, 2, 1]]),
        polled(250, q, M1, [["jobs", 1, 2, 2, 1]]),                     # (1, 2) held twice: count 1 again
        processed(260, q, M0, [["jobs", 0, 0, 3]], 200, 50, gen=5),
        processed(270, q, M1, [["jobs", 1, 2, 2]], 250, 10),
        acked(300, q, M0, [["jobs", 0, 0, 0, "ACCEPT"], ["jobs", 0, 1, 1, "RELEASE"], ["jobs", 0, 2, 2, "REJECT"]],
              gen=5),
        acked(300, q, M1, [["jobs", 1, 2, 2, "ACCEPT"]]),
        stopped(400, q, M0, "crash", gen=5),                           # (0, 3) polled, not acknowledged
        started(500, q, M0 + "+", "share", gen=0),                    # a share member's epoch 0: joining
        polled(500, q, M1, [["jobs", 0, 1, 1, 2]]),                     # released by m0
        polled(500, q, M2, [["jobs", 1, 3, 3, 4]]),                     # above the limit (3)
        processed(560, q, M1, [["jobs", 0, 1, 1]], 520, 40),
        acked(600, q, M1, [["jobs", 0, 1, 1, "ACCEPT"]]),
        acked(600, q, M2, [["jobs", 1, 3, 3, "ACCEPT"]]),
        polled(16000, q, M1, [["jobs", 1, 0, 0, 2]]),                   # m2's lock expired
        acked(16050, q, M2, [["jobs", 1, 0, 0, "ACCEPT"]], error="INVALID_RECORD_STATE"),
        acked(16100, q, M1, [["jobs", 1, 0, 0, "ACCEPT"]]),
        polled(20500, q, M1, [["jobs", 0, 3, 3, 2]]),                   # after m0's crash
        stopped(21000, q, M1, "close"),
        polled(22000, q, M2, [["jobs", 0, 3, 3, 3]]),                   # after m1's close
        processed(22050, q, M2, [["jobs", 0, 3, 3]], 22020, 30),
        acked(22100, q, M2, [["jobs", 0, 3, 3, "RELEASE"]]),            # at the limit: archived
        stopped(30000, q, M0 + "+", "close", gen=7), stopped(30000, q, M2, "close"),
    ]
    scenario = {"name": "queue-by-hand", "seed": 3, "duration_s": 30, "topics": {"jobs": 2},
                "groups": [{"name": "q", "topics": ["jobs"], "members": 3, "group_type": "share",
                            "delivery_limit": 3, "lock_duration_ms": 15000}],
                "produce": [{"topic": "jobs", "rate_per_s": 80, "records": 8, "batch": 4}]}
    return write_log(path, events, scenario)


C0, C1 = "c/m000", "c/m001"


def jobs_log(path: Path) -> Path:
    """Consumer group c on work (1 partition) used as a work queue."""
    c = "c"
    events = [
        started(0, c, C0, "eager"), started(0, c, C1, "eager"),
        produced(100, "work", 0, 0, 5),
        polled(200, c, C0, [["work", 0, 0, 5, 0]]),
        processed(250, c, C0, [["work", 0, 0, 5]], 200, 45),
        committed(300, c, C0, [["work", 0, 3]]),
        stopped(400, c, C0, "crash"),                                  # 3..5 processed, not committed
        polled(1000, c, C1, [["work", 0, 3, 5, 0]]),
        processed(1050, c, C1, [["work", 0, 3, 5]], 1000, 30),
        committed(1100, c, C1, [["work", 0, 6]]),
        produced(1200, "work", 0, 6, 7),
        polled(1300, c, C1, [["work", 0, 6, 7, 0]]),
        started(1400, c, C0 + "+", "eager"),
        polled(1500, c, C0 + "+", [["work", 0, 6, 7, 0]], gen=2),         # moved to m0 while m1 runs
        committed(1600, c, C0 + "+", [["work", 0, 8]], gen=2),
        produced(1650, "work", 0, 8, 9),
        polled(1700, c, C1, [["work", 0, 8, 8, 0]]),
        stopped(1800, c, C1, "close"),
        polled(1900, c, C0 + "+", [["work", 0, 8, 9, 0]], gen=2),
        committed(2000, c, C0 + "+", [["work", 0, 9]], gen=2),           # 9 never committed
        stopped(60000, c, C0 + "+", "close", gen=2),
    ]
    scenario = {"name": "jobs-by-hand", "seed": 4, "duration_s": 60, "topics": {"work": 1},
                "groups": [{"name": "c", "topics": ["work"], "members": 2, "job_ms": {"dist": "constant", "ms": 10}}],
                "produce": [{"topic": "work", "rate_per_s": 5}]}
    return write_log(path, events, scenario)


def late_log(path: Path) -> Path:
    """Share group late: the log ends 5 s after its producer; limit 2 and lock 20 s from the coordinator."""
    g, m = "late", "late/m000"
    events = [
        started(0, g, m, "share"), produced(100, "in", 0, 0, 0),
        polled(200, g, m, [["in", 0, 0, 0, 1]]), acked(300, g, m, [["in", 0, 0, 0, "RELEASE"]]),
        polled(400, g, m, [["in", 0, 0, 0, 2]]), acked(500, g, m, [["in", 0, 0, 0, "RELEASE"]]),
        polled(600, g, m, [["in", 0, 0, 0, 3]]), acked(700, g, m, [["in", 0, 0, 0, "ACCEPT"]]),
        stopped(5000, g, m, "close"),
    ]
    scenario = {"name": "late-by-hand", "seed": 5, "duration_s": 5, "topics": {"in": 1},
                "coordinator": {"config": {"group.share.delivery.count.limit": 2,
                                           "group.share.record.lock.duration.ms": 20000}},
                "groups": [{"name": "late", "topics": ["in"], "group_type": "share"}],
                "produce": [{"topic": "in", "rate_per_s": 1}]}
    return write_log(path, events, scenario)


def bare_log(path: Path) -> Path:
    g, m = "s", "s/m000"
    return write_log(path, [started(0, g, m, "share"), produced(10, "t", 0, 0, 1),
                            polled(20, g, m, [["t", 0, 0, 1, 1]]), acked(30, g, m, [["t", 0, 0, 1, "ACCEPT"]])])


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("work-logs")
    return [queue_log(d / "queue"), jobs_log(d / "jobs"), late_log(d / "late"), bare_log(d / "bare.jsonl"),
            DATA / "eager"]


def read_tables(spark, out: Path) -> dict:
    got = {}
    for name in ALL_TABLES:
        rows = [r.asDict(recursive=True) for r in spark.read.parquet(str(out / name)).collect()]
        got[name] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return got


@pytest.fixture(scope="module")
def analysed(spark, logs, tmp_path_factory):
    """Both engines over the five logs: (the DataFrame pipeline's Analysis, its tables, the RDD job's tables)."""
    out = tmp_path_factory.mktemp("work-out")
    sources = job.find_logs([str(p) for p in logs])
    df = job.analyze(sources, out / "df", spark=spark, report=True, engine="dataframe")
    rdd = job.analyze(sources, out / "rdd", spark=spark, report=False, engine="rdd")
    assert (df.engine, rdd.engine) == ("dataframe", "rdd")
    assert (df.invariants, df.violations, df.summary, df.work) == (rdd.invariants, rdd.violations, rdd.summary,
                                                                   rdd.work)
    return df, read_tables(spark, out / "df"), read_tables(spark, out / "rdd")


def by_record(rows, log):
    return {(r["partition"], r["offset"]): r for r in rows if r["log"] == log}


# ---------------------------------------------------------------- the engines agree, the counts
def test_both_engines_write_the_same_tables(analysed):
    _, df, rdd = analysed
    for name in ALL_TABLES:
        assert df[name] == rdd[name], name
    assert set(analysed[0].tables) == set(ALL_TABLES)


def test_events_count_producers_and_record_events(analysed, logs):
    analysis, t, _ = analysed
    lines = {p.name.split(".")[0]: len((p / "events.jsonl" if p.is_dir() else p).read_text().splitlines())
             for p in logs}
    assert {s["log"]: s["events"] for s in t["summary"]} == lines
    groups = {(g["log"], g["group"]): g for g in t["groups"]}
    q = groups[("queue", "q")]          # 29 lines: 2 of producers, 8 starts and stops, 19 record events
    assert (q["events"], q["member_events"], q["first_ms"], q["last_ms"]) == (27, 27, 0, 30000)
    assert analysis.events == sum(lines.values())


# ---------------------------------------------------------------- deliveries
def test_share_deliveries(analysed):
    rows = by_record(analysed[1]["deliveries"], "queue")
    assert len(rows) == 8 and {r["group"] for r in rows.values()} == {"q"}
    cols = ("produced_ms", "deliveries", "consumers", "first_delivery_ms", "last_delivery_ms", "max_delivery_count",
            "acknowledged_ms", "outcome", "archived_ms", "latency_ms", "duplicates")
    expect = {
        (0, 0): (100, 1, 1, 200, 200, 1, 300, "acknowledged", None, 200, 0),
        (0, 1): (100, 2, 2, 200, 500, 2, 600, "acknowledged", None, 500, 1),
        (0, 2): (100, 1, 1, 200, 200, 1, None, "archived", 300, None, 0),               # rejected
        (0, 3): (100, 3, 3, 200, 22000, 3, None, "archived", 22100, None, 2),           # released at the limit
        (1, 0): (100, 2, 2, 200, 16000, 2, 16100, "acknowledged", None, 16000, 1),      # a failed ACCEPT first
        (1, 1): (100, 0, 0, None, None, None, None, "unfinished", None, None, 0),
        (1, 2): (100, 2, 2, 200, 250, 1, 300, "acknowledged", None, 200, 1),
        (1, 3): (100, 1, 1, 500, 500, 4, 600, "acknowledged", None, 500, 0),
    }
    assert {k: tuple(r[c] for c in cols) for k, r in rows.items()} == expect
    r = rows[(0, 0)]
    assert (r["scenario"], r["seed"], r["cell"], r["topic"]) == ("queue-by-hand", 3, None, "jobs")


def test_consumer_group_deliveries_are_acknowledged_by_commits(analysed):
    rows = by_record(analysed[1]["deliveries"], "jobs")
    assert sorted(o for _, o in rows) == list(range(10))
    got = {o: (r["deliveries"], r["consumers"], r["acknowledged_ms"], r["latency_ms"], r["outcome"],
               r["max_delivery_count"]) for (_, o), r in rows.items()}
    assert got == {0: (1, 1, 300, 200, "acknowledged", 0), 1: (1, 1, 300, 200, "acknowledged", 0),
                   2: (1, 1, 300, 200, "acknowledged", 0), 3: (2, 2, 1100, 1000, "acknowledged", 0),
                   4: (2, 2, 1100, 1000, "acknowledged", 0), 5: (2, 2, 1100, 1000, "acknowledged", 0),
                   6: (2, 2, 1600, 400, "acknowledged", 0), 7: (2, 2, 1600, 400, "acknowledged", 0),
                   8: (2, 2, 2000, 350, "acknowledged", 0), 9: (1, 1, None, None, "unfinished", 0)}


# ---------------------------------------------------------------- redeliveries and their causes
def test_redelivery_causes(analysed):
    rows = analysed[1]["redeliveries"]
    got = sorted((r["log"], r["partition"], r["offset"], r["delivery"], r["delivery_count"], r["from_client"],
                  r["to_client"], r["from_ms"], r["ts_ms"], r["gap_ms"], r["cause"]) for r in rows)
    assert got == sorted([
        ("queue", 0, 1, 2, 2, M0, M1, 200, 500, 300, "release"),
        ("queue", 0, 3, 2, 2, M0, M1, 200, 20500, 20300, "crash"),
        ("queue", 0, 3, 3, 3, M1, M2, 20500, 22000, 1500, "close"),
        ("queue", 1, 0, 2, 2, M2, M1, 200, 16000, 15800, "lock_expiry"),
        ("queue", 1, 2, 2, 1, M2, M1, 200, 250, 50, "lock_expiry"),
        *[("jobs", 0, o, 2, 0, C0, C1, 200, 1000, 800, "crash") for o in (3, 4, 5)],
        *[("jobs", 0, o, 2, 0, C1, C0, 1300, 1500, 200, "rebalance") for o in (6, 7)],
        ("jobs", 0, 8, 2, 0, C1, C0, 1700, 1900, 200, "close"),
        ("late", 0, 0, 2, 2, "late/m000", "late/m000", 200, 400, 200, "release"),
        ("late", 0, 0, 3, 3, "late/m000", "late/m000", 400, 600, 200, "release"),
    ])


def test_archived_records(analysed):
    got = sorted((r["log"], r["partition"], r["offset"], r["reason"], r["archived_ms"], r["client"],
                  r["delivery_count"], r["deliveries"], r["produced_ms"]) for r in analysed[1]["archived"])
    # late's record reached its limit (2) and was released, then delivered again and accepted: acknowledged
    assert got == [("queue", 0, 2, "rejected", 300, M0, 1, 1, 100),
                   ("queue", 0, 3, "delivery_limit", 22100, M2, 3, 3, 100)]


# ---------------------------------------------------------------- consumers
def test_consumers(analysed):
    rows = {(r["log"], r["client"]): r for r in analysed[1]["consumers"]}
    assert set(rows) == {("queue", M0), ("queue", M1), ("queue", M2), ("jobs", C0), ("jobs", C1),
                         ("late", "late/m000"), ("bare", "s/m000")}
    cols = ("protocol", "sessions", "crashes", "alive_ms", "busy_ms", "idle_ms", "polls", "records_polled",
            "records_processed", "redeliveries_received", "records_accepted", "acknowledgements_failed")
    got = {k[1]: tuple(r[c] for c in cols) for k, r in rows.items() if k[0] in ("queue", "jobs")}
    assert got == {
        M0: ("share", 2, 1, 400 + 29500, 50, 29850, 1, 4, 4, 0, 1, 0),
        M1: ("share", 1, 0, 21000, 50, 20950, 4, 4, 2, 3, 3, 0),
        M2: ("share", 1, 0, 30000, 30, 29970, 3, 4, 1, 2, 1, 1),
        C0: ("eager", 2, 1, 400 + 58600, 45, 58955, 3, 10, 6, 0, None, None),
        C1: ("eager", 1, 0, 1800, 30, 1770, 3, 6, 3, 0, None, None),
    }
    assert rows[("queue", M0)]["utilisation"] == pytest.approx(50 / 29900)
    bare = rows[("bare", "s/m000")]          # no stop: alive to the log's end
    assert (bare["alive_ms"], bare["records_accepted"], bare["protocol"]) == (30, 2, "share")


# ---------------------------------------------------------------- per group
def test_work_totals(analysed):
    analysis, t, _ = analysed
    work = {(r["log"], r["group"]): r for r in t["work"]}
    assert set(work) == {("queue", "q"), ("jobs", "c"), ("late", "late"), ("bare", "s")}
    assert [{k: v for k, v in r.items()} for r in analysis.work] == sorted(t["work"], key=lambda r: (r["log"], r["group"]))
    q = work[("queue", "q")]
    cols = ("group_type", "clients", "records", "records_produced", "acknowledged", "archived", "archived_rejected",
            "archived_delivery_limit", "unfinished", "deliveries", "duplicate_deliveries", "redeliveries",
            "redeliveries_release", "redeliveries_crash", "redeliveries_close", "redeliveries_lock_expiry",
            "redeliveries_rebalance", "active_ms", "delivery_limit", "lock_duration_ms", "last_produced_ms",
            "log_end_ms", "all_settled_checked")
    assert tuple(q[c] for c in cols) == ("share", 3, 8, 8, 5, 2, 1, 1, 1, 12, 5, 5, 1, 1, 1, 2, 0, 16000, 3, 15000,
                                         100, 30000, True)
    # latencies 200, 200, 500, 500, 16000: p99 interpolates between the last two
    assert (q["latency_p50_ms"], q["latency_p99_ms"]) == (500.0, pytest.approx(500 + 0.96 * 15500))
    assert q["throughput_per_s"] == pytest.approx(5 / 16.0)
    assert q["mean_utilisation"] == pytest.approx((50 / 29900 + 50 / 21000 + 30 / 30000) / 3)
    assert (q["busy_worker_s"], q["idle_worker_s"]) == (pytest.approx(0.13), pytest.approx(80.77))
    c = work[("jobs", "c")]
    assert tuple(c[k] for k in cols) == ("consumer", 2, 10, 10, 9, 0, 0, 0, 1, 16, 6, 6, 0, 3, 1, 0, 2, 1900, None,
                                         None, 1650, 60000, True)
    assert (c["latency_p50_ms"], c["latency_p99_ms"]) == (400.0, 1000.0)
    late = work[("late", "late")]
    assert (late["delivery_limit"], late["lock_duration_ms"], late["all_settled_checked"]) == (2, 20000, False)
    bare = work[("bare", "s")]
    assert (bare["group_type"], bare["records"], bare["acknowledged"], bare["delivery_limit"],
            bare["lock_duration_ms"]) == ("share", 2, 2, 5, 30000)
    # the workers that processed nothing, as the consumers table says (at least one log has one)
    idle = {key: sum(1 for x in t["consumers"] if (x["log"], x["group"]) == key and not x["records_processed"])
            for key in work}
    assert {key: r["idle_workers"] for key, r in work.items()} == idle and any(idle.values()), idle


# ---------------------------------------------------------------- invariants
def test_invariants_pass_fail_and_skip(analysed):
    t = analysed[1]
    got = {(r["log"], r["group"], r["invariant"]): (r["status"], r["checked"], r["failed"])
           for r in t["invariants"] if r["invariant"] in share.WORK_INVARIANTS}
    assert got == {
        ("queue", "q", "share_single_holder"): ("fail", 12, 1),
        ("queue", "q", "all_settled"): ("fail", 8, 1),
        ("queue", "q", "delivery_limit"): ("fail", 12, 1),
        ("jobs", "c", "all_settled"): ("fail", 10, 1),            # a consumer group: all_settled only
        ("late", "late", "share_single_holder"): ("pass", 3, 0),
        ("late", "late", "all_settled"): ("skipped", 0, 0),      # the log ends 4.9 s after its producer
        ("late", "late", "delivery_limit"): ("fail", 3, 1),      # count 3, limit 2 (the coordinator's)
        ("bare", "s", "share_single_holder"): ("pass", 2, 0),
        ("bare", "s", "all_settled"): ("skipped", 0, 0),
        ("bare", "s", "delivery_limit"): ("pass", 2, 0),
    }
    # a share member's epoch 0 when it starts again is joining, not a generation going down
    gens = {r["log"]: r["status"] for r in t["invariants"] if r["invariant"] == "generations_grow"}
    assert gens["queue"] == "pass"
    details = {(v["log"], v["invariant"]): (v["ts_ms"], json.loads(v["detail"])) for v in t["violations"]
               if v["invariant"] in share.WORK_INVARIANTS}
    assert details == {
        ("queue", "share_single_holder"): (250, {"client": M1, "delivery": 2, "delivery_count": 1, "offset": 2,
                                                 "partition": 1, "previous_client": M2,
                                                 "previous_delivery_count": 1, "previous_ms": 200, "topic": "jobs"}),
        ("queue", "delivery_limit"): (500, {"client": M2, "delivery": 1, "delivery_count": 4, "limit": 3,
                                            "offset": 3, "partition": 1, "topic": "jobs"}),
        ("queue", "all_settled"): (100, {"deliveries": 0, "offset": 1, "partition": 1, "topic": "jobs"}),
        ("jobs", "all_settled"): (1650, {"deliveries": 1, "last_client": C0, "last_delivery_ms": 1900,
                                         "max_delivery_count": 0, "offset": 9, "partition": 0, "topic": "work"}),
        ("late", "delivery_limit"): (600, {"client": "late/m000", "delivery": 3, "delivery_count": 3, "limit": 2,
                                           "offset": 0, "partition": 0, "topic": "in"}),
    }
    assert {s["log"]: s["violations"] for s in t["summary"]} == {"queue": 3, "jobs": 1, "late": 1, "bare": 0,
                                                                 "eager": 0}


def test_verdicts_and_report(analysed):
    analysis = analysed[0]
    lines = {v.log: v.line() for v in verdicts(analysis)}
    assert lines["eager"] == "PASS: eager (eager-by-hand, seed 7): every invariant held; 3 rebalances, p95 25 ms"
    assert lines["queue"].startswith("FAIL: queue (queue-by-hand, seed 3): 3 violations of "
                                     "'no share-group record held by two consumers at once' (1), ")
    assert lines["bare"] == ("PASS: bare: 6 invariants held; not checked (producers not stopped long enough before "
                             "the log's end): every record produced acknowledged or archived; 0 rebalances")
    page = (Path(analysis.out) / "report.html").read_text()
    section = page[page.index("<h2>Work queues</h2>"):page.index("<h2>Invariants</h2>")]
    assert section.count("<tr>") == 1 + 4 and "<td class='l'>queue</td><td class='l'>q</td>" in section
    assert "<td class='l w'>release 1, crash 1, close 1, lock expiry 2</td>" in section
    assert "<td class='l w'>crash 3, close 1, rebalance 2</td>" in section
    assert "late/late" in section and "bare/s" in section and "queue/q" not in section   # all_settled not checked


# ---------------------------------------------------------------- without Spark
def test_logs_without_work_queues_are_not_read_again():
    eager = job.find_logs([str(DATA / "eager")])
    assert share.work_queues(None, eager, None, []) is None      # no Spark job at all: nothing to look at
    assert share.may_have_work(None) and not share.may_have_work({"groups": [{"name": "g", "topics": ["t"]}]})
    assert share.may_have_work({"groups": [{"name": "g", "count": 2, "group_type": "share"}]})
    assert share.may_have_work({"groups": [], "produce": [{"topic": "t", "rate_per_s": 1}]})


def test_group_settings_come_from_the_group_then_the_coordinator_then_kafka():
    sc = {"coordinator": {"config": {"share.delivery.count.limit": 7, "group.share.record.lock.duration.ms": 40000,
                                     "group.consumer.session.timeout.ms": 50000}},
          "groups": [{"name": "a", "group_type": "share", "delivery_limit": 4},
                     {"name": "b", "count": 2, "group_type": "share"},
                     {"name": "c", "group_protocol": "consumer"}, {"name": "d", "session_timeout_ms": 10000}]}
    assert share.group_settings(sc, "a", True) == {"delivery_limit": 4, "lock_duration_ms": 40000, "grace_ms": 40000}
    assert share.group_settings(sc, "b-1", True)["delivery_limit"] == 7
    assert share.group_settings(None, "x", True) == {"delivery_limit": 5, "lock_duration_ms": 30000,
                                                     "grace_ms": 30000}
    assert share.group_settings(sc, "c", False)["grace_ms"] == 50000
    assert share.group_settings(sc, "d", False)["grace_ms"] == 10000
    assert share.group_settings(None, "e", False)["grace_ms"] == 45000


@pytest.mark.parametrize("event, problem", [
    (polled(1, "g", "g/m0", [["t", 0, 5, 4, 1]]), "first <= last"),
    (polled(1, "g", "g/m0", [["t", 0, 1, 2]]), "delivery_count"),
    (acked(1, "g", "g/m0", [["t", 0, 1, 2, "MAYBE"]]), "type"),
    (acked(1, "g", "g/m0", [["t", 0, 1, 2, "ACCEPT"]], error=5), "\"error\""),
    (processed(1, "g", "g/m0", [["t", 0, 1, 2]], None, 5), "started_ms"),
    (dict(produced(1, "t", 0, 3, 2)), "first"),
    ({k: v for k, v in produced(1, "t", 0, 0, 2).items() if k != "producer"}, "producer"),
    ({"v": 1, "event": "client.started", "ts_ms": 1}, "group"),
])
def test_bad_record_and_producer_events_are_named(event, problem):
    assert problem in (job.event_problem(event) or "")
    assert job.event_problem(produced(1, "t", 0, 0, 2)) is None
    assert job.event_problem(polled(1, "g", "g/m0", [["t", 0, 1, 2, 1]])) is None


def test_a_record_event_the_jvm_cannot_vouch_for_gets_the_rdd_jobs_message(spark, tmp_path):
    d = tmp_path / "bad"
    bad = polled(300, "s", "s/m000", [["t", "zero", 0, 1, 1]])
    log = bare_log(tmp_path / "good.jsonl").read_text().splitlines()
    d.mkdir()
    (d / "events.jsonl").write_text("\n".join(log[:2] + [json.dumps(bad)] + log[2:]) + "\n")
    with pytest.raises(job.LogError) as e:
        job.analyze(job.find_logs([str(d)]), tmp_path / "out", spark=spark, report=False, engine="dataframe")
    assert "events.jsonl:3: client.records_polled: \"records\" must be" in str(e.value)
