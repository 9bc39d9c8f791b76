"""The Spark job end to end (local mode, one session for the module): ``groupcoord analyze`` over
the hand-made logs, its Parquet tables against the values computed by hand, the report, bad input,
and ``groupcoord sweep`` over a small grid of simulations."""
import json
import shutil
from pathlib import Path

import pytest

from groupcoord.analytics import job
from groupcoord.analytics.model import analyze_group, group_partitions
from groupcoord.cli import main

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def spark():
    return job.spark_session()   # shared: the CLI below finds it active and uses it


@pytest.fixture(scope="module")
def broken_log(tmp_path_factory):
    """The eager log where A takes 0,1,2 in generation 2: partition 2 then has two owners."""
    d = tmp_path_factory.mktemp("broken")
    shutil.copy(DATA / "eager" / "scenario.json", d / "scenario.json")
    lines = []
    for line in (DATA / "eager" / "events.jsonl").read_text().splitlines():
        e = json.loads(line)
        if e["event"] == "client.assigned" and e["ts_ms"] == 1032:
            e["partitions"] = e["owned"] = [["t", 0], ["t", 1], ["t", 2]]
        lines.append(json.dumps(e))
    (d / "events.jsonl").write_text("\n".join(lines) + "\n")
    return d


@pytest.fixture(scope="module")
def analyzed(spark, broken_log, tmp_path_factory):
    out = tmp_path_factory.mktemp("analysis")
    code = main(["analyze", str(DATA / "eager"), str(DATA / "cooperative"), str(DATA / "serve-events.jsonl"),
                 str(broken_log), "--out", str(out)])
    assert code == 0
    return out


def table(spark, out, name):
    return [r.asDict(recursive=True) for r in spark.read.parquet(str(out / name)).collect()]


def test_rebalances_table(spark, analyzed):
    rows = {(r["log"], r["generation"]): r for r in table(spark, analyzed, "rebalances")}
    assert len(rows) == 3 + 4 + 3 + 3
    r = rows[("eager", 2)]
    assert (r["scenario"], r["seed"], r["cell"], r["group"]) == ("eager-by-hand", 7, None, "g")
    assert (r["trigger"], r["start_ms"], r["end_ms"], r["duration_ms"], r["members"]) == \
        ("new_member", 1005, 1030, 25, 2)
    assert (r["partitions_moved"], r["min_moves"], r["partitions_revoked"], r["balance"]) == (2, 2, 4, 0)
    assert r["member_idle_ms"] == {"g/m0": 22, "g/m1": 35} and r["unowned_partition_ms"] == 104
    r = rows[("cooperative", 2)]   # first cooperative round: A gives up 3,4; B gets nothing yet
    assert (r["partitions_moved"], r["min_moves"], r["partitions_revoked"], r["balance"]) == (2, 2, 2, 3)
    assert r["member_idle_ms"] == {"c/m0": 0, "c/m1": 24}
    r = rows[("cooperative", 4)]
    assert (r["trigger"], r["trigger_member"], r["duration_ms"], r["unowned_partition_ms"]) == \
        ("member_expired", "B-1", 30, 66)
    r = rows[("serve-events", 3)]  # coordinator events only: what they allow
    assert (r["trigger"], r["duration_ms"], r["members"], r["member_events"]) == ("member_left", 23, 1, False)
    assert r["partitions_moved"] is None and r["member_idle_ms"] is None and r["balance"] is None


def test_sessions_table(spark, analyzed):
    rows = {(r["log"], r["member"]): r for r in table(spark, analyzed, "sessions")}
    a = rows[("eager", "A-1")]
    assert (a["client"], a["source"], a["start_ms"], a["end_ms"], a["end_reason"]) == \
        ("g/m0", "client", 0, 3000, "close")
    assert (a["partitions_assigned"], a["partitions_revoked"], a["time_without_partitions_ms"]) == (6, 6, 49)
    b = rows[("cooperative", "B-1")]
    assert (b["end_reason"], b["duration_ms"], b["time_without_partitions_ms"]) == ("crash", 2500, 46)
    s = rows[("serve-events", "A-1")]
    assert (s["source"], s["client"], s["start_ms"], s["end_ms"], s["end_reason"]) == \
        ("coordinator", None, 10, 3002, "left")


def test_summary_table(spark, analyzed, broken_log):
    rows = {r["log"]: r for r in table(spark, analyzed, "summary")}
    assert set(rows) == {"eager", "cooperative", "serve-events", broken_log.name}
    c = rows["cooperative"]
    # durations 15, 20, 10, 30: p50 = (15 + 20) / 2, p95 = 20 + 0.85 * (30 - 20)
    assert (c["rebalances"], c["duration_p50_ms"], c["duration_max_ms"]) == (4, 17.5, 30)
    assert c["duration_p95_ms"] == pytest.approx(28.5)
    assert c["partition_seconds_unowned"] == pytest.approx(20.214)
    assert (c["partitions_moved"], c["min_moves"], c["movement_ratio"], c["max_balance"]) == (11, 11, 1.0, 3)
    assert (c["groups"], c["events"], c["member_events"], c["violations"]) == (1, 34, True, 0)
    e = rows["eager"]
    assert (e["duration_p50_ms"], e["duration_max_ms"], e["partition_seconds_unowned"]) == (23, 25, 0.312)
    assert e["duration_p95_ms"] == pytest.approx(24.8)   # 23 + 0.9 * (25 - 23)
    s = rows["serve-events"]
    assert (s["member_events"], s["partition_seconds_unowned"], s["movement_ratio"], s["rebalances"]) == \
        (False, None, None, 3)
    assert rows[broken_log.name]["violations"] == 1


def test_invariant_tables(spark, analyzed, broken_log):
    inv = {(r["log"], r["invariant"]): r for r in table(spark, analyzed, "invariants")}
    broken = broken_log.name
    assert inv[(broken, "single_owner")]["status"] == "fail" and inv[(broken, "single_owner")]["failed"] == 1
    assert inv[("eager", "single_owner")]["status"] == "pass"
    assert inv[("serve-events", "commits_kept")]["status"] == "skipped"
    (v,) = table(spark, analyzed, "violations")
    assert (v["log"], v["invariant"], v["ts_ms"]) == (broken, "single_owner", 1040)
    assert json.loads(v["detail"])["owners"] == ["g/m0", "g/m1"]


def test_report(analyzed):
    page = (analyzed / "report.html").read_text()
    for picture in ("durations.png", "movement.png", "timeline-1.svg"):
        assert (analyzed / picture).stat().st_size > 1000 and f"src='{picture}'" in page
    assert "Coordinator events only" in page and "serve-events" in page
    assert "no partition owned by two members at once" in page
    assert page.count("class='l fail'") == 1 and "Counterexamples" in page
    assert "&quot;taken_by&quot;: &quot;g/m1&quot;" in page


def test_bad_input(spark, tmp_path, capsys):
    d = tmp_path / "bad"
    d.mkdir()
    (d / "events.jsonl").write_text((DATA / "eager" / "events.jsonl").read_text().splitlines()[0] + "\n{oops\n")
    assert main(["analyze", str(d), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "events.jsonl:2: not valid JSON" in err
    assert main(["analyze", str(tmp_path / "missing"), "--out", str(tmp_path / "out")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_sweep(spark, tmp_path, capsys):
    grid = tmp_path / "grid.toml"
    scenario = (DATA / "sweep" / "tiny.toml").resolve()
    shutil.copy(scenario, tmp_path / "tiny.toml")
    grid.write_text('scenario = "tiny.toml"\nseeds = [1]\n[grid]\nstrategy = ["range", "cooperative-sticky"]\n')
    out = tmp_path / "out"
    assert main(["sweep", str(grid), "--out", str(out)]) == 0
    cells = json.loads((out / "cells.json").read_text())["cells"]
    assert cells == {"c000": {"strategy": "range", "seed": 1}, "c001": {"strategy": "cooperative-sticky", "seed": 1}}
    summary = {r["cell"]: r for r in table(spark, out, "summary")}
    assert set(summary) == {"c000", "c001"} and all(r["violations"] == 0 for r in summary.values())
    # each cell's rebalances as Spark wrote them = the Python analysis of that cell's log
    rebalances = table(spark, out, "rebalances")
    for cell in ("c000", "c001"):
        log = out / "cells" / cell
        events = [json.loads(x) for x in (log / "events.jsonl").read_text().splitlines() if x]
        sc = json.loads((log / "scenario.json").read_text())
        expected = analyze_group("g", [e for e in events if e["group"] == "g"], group_partitions(sc, "g"))
        got = sorted((r for r in rebalances if r["cell"] == cell), key=lambda r: r["start_ms"])
        assert [(r["start_ms"], r["duration_ms"], r["partitions_moved"], r["min_moves"]) for r in got] == \
            [(r["start_ms"], r["duration_ms"], r["partitions_moved"], r["min_moves"]) for r in expected["rebalances"]]
        assert got and summary[cell]["events"] == len(events)
    protocols = {r["cell"]: r["protocol"] for r in table(spark, out, "sessions")}
    assert protocols == {"c000": "eager", "c001": "cooperative"}
    page = (out / "report.html").read_text()
    assert "Grid cells side by side" in page and "cooperative-sticky" in page and (out / "cells.png").exists()


def test_consumer_group_tables_in_both_engines(spark, tmp_path):
    """The consumer-protocol log of test_consumer_rebalances.py (values worked out there by hand)
    through Spark: the DataFrame pipeline and the RDD job agree with them."""
    for engine in ("dataframe", "rdd"):
        out = tmp_path / engine
        assert main(["analyze", str(DATA / "consumer"), "--out", str(out), "--engine", engine]) == 0
        rows = sorted(table(spark, out, "rebalances"), key=lambda r: r["generation"])
        assert [(r["generation"], r["trigger"], r["start_ms"], r["duration_ms"], r["partitions_moved"],
                 r["min_moves"], r["unowned_partition_ms"], r["protocol"]) for r in rows] == [
            (1, "member_joined", 7, 1, None, None, 4, "consumer"), (2, "member_joined", 7, 1003, 4, 4, 2004, "consumer"),
            (3, "member_joined", 10007, 1003, 1, 1, 998, "consumer"), (4, "member_left", 20001, 11, 1, 1, 11, "consumer")]
        summary = table(spark, out, "summary")[0]
        assert (summary["rebalances"], summary["partition_seconds_unowned"], summary["violations"]) == (4, 3.042, 0)
        # p50 of 1, 11, 1003, 1003 (linear interpolation): 507
        assert summary["duration_p50_ms"] == 507
        assert {r["protocol"] for r in table(spark, out, "sessions")} == {"consumer"}


def test_classic_vs_consumer_sweep_on_a_small_grid(spark, tmp_path):
    """The shipped sweep, its grid cut down (4 members, one session timeout, shorter runs): six
    cells (two scenarios, three protocols), every invariant held, and the report's comparison."""
    grid = Path(__file__).resolve().parents[2] / "examples" / "sweeps" / "classic-vs-consumer.toml"
    out = tmp_path / "out"
    assert main(["sweep", str(grid), "--out", str(out), "--axis", "members=[4]",
                 "--axis", "session_timeout_ms=[10000]", "--set", "duration_s=320"]) == 0
    cells = json.loads((out / "cells.json").read_text())
    assert cells["compare"] == "protocol" and len(cells["cells"]) == 6
    labels = {c["protocol"] for c in cells["cells"].values()}
    assert labels == {"eager (range)", "cooperative-sticky", "consumer (uniform)"}
    summary = {r["cell"]: r for r in table(spark, out, "summary")}
    assert all(r["violations"] == 0 and r["rebalances"] > 0 for r in summary.values())
    by = {(c["scenario"], c["protocol"]): summary[cell] for cell, c in cells["cells"].items()}
    sessions = table(spark, out, "sessions")
    assert {r["protocol"] for r in sessions if by[("rolling-restart", "consumer (uniform)")]["log"] == r["log"]} == \
        {"consumer"}
    # a rolling restart leaves partitions without an owner for less time with the consumer protocol
    # than with eager rebalancing, where every restart revokes everything
    assert by[("rolling-restart", "consumer (uniform)")]["partition_seconds_unowned"] < \
        by[("rolling-restart", "eager (range)")]["partition_seconds_unowned"]
    page = (out / "report.html").read_text()
    assert "protocol side by side" in page and "consumer (uniform)" in page and (out / "compare.png").exists()
