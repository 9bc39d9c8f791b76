"""The DataFrame pipeline (engine "dataframe", analytics/pipeline.py) against the RDD job
(the oracle): identical tables on a short run of every shipped scenario, on the hand-made logs,
on logs with a commit gone backwards and a generation going down, and the same messages on bad
input (the pipeline hands a line it does not take to the RDD job)."""
import json
import shutil
from pathlib import Path

import pytest

from groupcoord.analytics import job
from groupcoord.sim import simulate

from test_scenarios import SHORT, short  # same directory (rootdir-relative imports, no packages)

DATA = Path(__file__).parent / "data"
TABLES = ("rebalances", "sessions", "groups", "invariants", "violations", "summary")


@pytest.fixture(scope="module")
def spark():
    return job.spark_session()


def tables(spark, out) -> dict:
    got = {}
    for name in TABLES:
        rows = [r.asDict(recursive=True) for r in spark.read.parquet(str(out / name)).collect()]
        got[name] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return got


def both(spark, logs, tmp: Path, handed_over=False):
    """The tables of each engine over the same logs; ``handed_over``: the pipeline is expected to
    hand them to the RDD job (commits it cannot take as runs)."""
    sources = job.find_logs([str(p) for p in logs])
    rdd = job.analyze(sources, tmp / "rdd", spark=spark, report=False, engine="rdd")
    df = job.analyze(sources, tmp / "df", spark=spark, report=False, engine="dataframe")
    assert df.engine == ("rdd" if handed_over else "dataframe")
    assert (rdd.invariants, rdd.violations, rdd.summary) == (df.invariants, df.violations, df.summary)
    def key(r):
        return json.dumps(r, sort_keys=True)
    assert sorted(rdd.timeline, key=key) == sorted(df.timeline, key=key)
    assert sorted(rdd.rebalances, key=key) == sorted(df.rebalances, key=key)
    return tables(spark, tmp / "rdd"), tables(spark, tmp / "df")


def write_log(d: Path, events, resolved=None) -> Path:
    d.mkdir(parents=True)
    (d / "events.jsonl").write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events))
    if resolved is not None:
        (d / "scenario.json").write_text(json.dumps(resolved))
    return d


def test_every_shipped_scenario_gives_identical_tables(spark, tmp_path):
    logs = []
    for name in sorted(SHORT):
        events, _, resolved = simulate.simulate(short(name), 1)
        logs.append(write_log(tmp_path / "logs" / name, events, resolved))
    rdd, df = both(spark, logs, tmp_path)
    for name in TABLES:
        assert rdd[name] == df[name], name
    lines = sum(len((d / "events.jsonl").read_text().splitlines()) for d in logs)
    assert sum(r["events"] for r in df["summary"]) == lines > 10_000   # the commits are counted
    assert {r["log"] for r in df["summary"]} == set(SHORT)


def test_hand_made_logs_and_invariant_failures(spark, tmp_path):
    # the eager log where a commit goes backwards (commits_kept, computed in the JVM by the
    # pipeline), a client's commit of an older generation and a coordinator's (generations_grow)
    lines = [json.loads(x) for x in (DATA / "cooperative" / "events.jsonl").read_text().splitlines() if x]
    commits = [e for e in lines if e["event"] == "client.committed"]
    assert commits
    extra = []
    for c in commits:
        back = dict(c, ts_ms=c["ts_ms"] + 1, offsets=[[t, p, off - 5] for t, p, off in c["offsets"]])
        old = dict(c, ts_ms=c["ts_ms"] + 2, generation=c["generation"] - 1)
        extra += [back, old]
    coord = [e for e in lines if e["event"] == "offset.committed"]
    extra += [dict(coord[-1], ts_ms=coord[-1]["ts_ms"] + 3, generation=0)] * 3
    broken = sorted(lines + extra, key=lambda e: e["ts_ms"])
    d = write_log(tmp_path / "logs" / "backwards", broken)
    shutil.copy(DATA / "cooperative" / "scenario.json", d / "scenario.json")
    rdd, df = both(spark, [DATA / "eager", DATA / "cooperative", DATA / "serve-events.jsonl", d], tmp_path)
    for name in TABLES:
        assert rdd[name] == df[name], name
    failed = {(r["log"], r["invariant"]): r["failed"] for r in df["invariants"] if r["failed"]}
    assert failed[("backwards", "commits_kept")] == len(commits)
    assert failed[("backwards", "generations_grow")] >= 3
    assert any(v["invariant"] == "commits_kept" for v in df["violations"])


def test_commits_gone_backwards_are_found_in_the_jvm(spark, tmp_path):
    # commits going backwards, in runs the pipeline takes (no fallback): commits_kept is counted
    # by the window over each partition's offsets and its counterexamples ride in the group's row
    lines = [json.loads(x) for x in (DATA / "cooperative" / "events.jsonl").read_text().splitlines() if x]
    commits = [e for e in lines if e["event"] == "client.committed"]
    back = [dict(c, ts_ms=c["ts_ms"] + 1, offsets=[[t, p, off - 5] for t, p, off in c["offsets"]]) for c in commits]
    d = write_log(tmp_path / "logs" / "backwards", sorted(lines + back, key=lambda e: e["ts_ms"]))
    shutil.copy(DATA / "cooperative" / "scenario.json", d / "scenario.json")
    rdd, df = both(spark, [d], tmp_path)
    for name in TABLES:
        assert rdd[name] == df[name], name
    failed = {r["invariant"]: r["failed"] for r in df["invariants"]}
    assert failed["commits_kept"] == sum(len(c["offsets"]) for c in commits) > 0
    examples = [json.loads(v["detail"]) for v in df["violations"] if v["invariant"] == "commits_kept"]
    assert examples and all(e["offset"] == e["acknowledged_before"] - 5 for e in examples)


def _backwards_events():
    """The cooperative log with every client commit made again 1 ms later, 5 offsets back."""
    lines = [json.loads(x) for x in (DATA / "cooperative" / "events.jsonl").read_text().splitlines() if x]
    commits = [e for e in lines if e["event"] == "client.committed"]
    back = [dict(c, ts_ms=c["ts_ms"] + 1, offsets=[[t, p, off - 5] for t, p, off in c["offsets"]]) for c in commits]
    return sorted(lines + back, key=lambda e: e["ts_ms"]), commits


def test_commits_gone_backwards_in_a_parquet_log_are_found_reading_its_file(spark, tmp_path):
    # the same, the log written as Parquet: its client commits are one file its footers vouch for,
    # which a Spark task reads itself (pipeline.kept_of_file), not the window
    from groupcoord.analytics import pipeline
    from groupcoord.sim.model import write_outputs
    events, commits = _backwards_events()
    d = tmp_path / "logs" / "backwards"
    write_outputs(d, events, json.loads((DATA / "cooperative" / "scenario.json").read_text()), None,
                  event_format="parquet")
    path = str(d / "events" / "client.committed.parquet")
    read, _ = pipeline._kept_by_file(spark, job.find_logs([str(d)]))
    assert read == {path}
    rdd, df = both(spark, [d], tmp_path)
    for name in TABLES:
        assert rdd[name] == df[name], name
    failed = {r["invariant"]: r["failed"] for r in df["invariants"]}
    assert failed["commits_kept"] == sum(len(c["offsets"]) for c in commits) > 0
    # a batch's first offset of a partition is held against the batches before it
    whole = pipeline.kept_of_file(path)
    assert pipeline.kept_of_file(path, batch_rows=3) == whole and whole[0][2] > 0


def test_the_file_check_tells_partitions_apart_by_group_topic_and_number(tmp_path):
    # (one number made of the three could take partition -1 of "b" for the last of "a")
    from groupcoord.analytics import pipeline
    from groupcoord.sim.model import write_outputs

    def commit(ts, group, offsets):
        return {"v": 1, "event": "client.committed", "ts_ms": ts, "group": group, "client": "c", "member": "m",
                "generation": 1, "offsets": offsets}
    events = [commit(1, "g", [["a", 0, 10], ["a", 1, 10]]), commit(2, "g", [["b", -1, 5]]),
              commit(3, "h", [["a", 1, 3]]), commit(4, "g", [["a", 1, 9]])]
    write_outputs(tmp_path / "log", events, {}, None, event_format="parquet")
    got = {g: (n, back, json.loads(cases))
           for g, n, back, cases in pipeline.kept_of_file(str(tmp_path / "log" / "events" / "client.committed.parquet"))}
    assert got == {"g": (4, 1, [{"ts": 4, "pos": 3, "idx": 0, "topic": "a", "part": 1, "off": 9, "client": "c",
                                 "prev_off": 10, "prev_client": "c", "prev_ts": 1}]),
                   "h": (1, 0, [])}


def test_a_parquet_log_out_of_time_order_has_its_commits_sorted_by_the_window(spark, tmp_path):
    from groupcoord.analytics import pipeline
    from groupcoord.sim.model import write_outputs
    events, _ = _backwards_events()
    late = next(i for i, e in enumerate(events) if e["event"] == "client.committed")
    events.append(events.pop(late))          # a commit written last, its time among the first
    d = tmp_path / "logs" / "late"
    write_outputs(d, events, json.loads((DATA / "cooperative" / "scenario.json").read_text()), None,
                  event_format="parquet")
    assert pipeline.kept_of_file(str(d / "events" / "client.committed.parquet")) is None
    assert pipeline._kept_by_file(spark, job.find_logs([str(d)]))[0] == set()
    rdd, df = both(spark, [d], tmp_path)
    for name in TABLES:
        assert rdd[name] == df[name], name


def test_bad_lines_get_the_rdd_jobs_messages(spark, tmp_path):
    good = (DATA / "eager" / "events.jsonl").read_text().splitlines()
    commit = json.loads(next(x for x in good if '"client.committed"' in x))
    cases = {"json": "{oops", "offsets": json.dumps(dict(commit, offsets=[["t", 1]])),
             "ts": json.dumps(dict(commit, ts_ms="later"))}
    for name, bad in cases.items():
        d = tmp_path / name
        d.mkdir()
        (d / "events.jsonl").write_text("\n".join(good[:3] + [bad] + good[3:]) + "\n")
        messages = []
        for engine in job.ENGINES:
            with pytest.raises(job.LogError) as e:
                job.analyze(job.find_logs([str(d)]), tmp_path / "out" / engine / name, spark=spark,
                            report=False, engine=engine)
            messages.append(str(e.value))
        assert messages[0] == messages[1] and "events.jsonl:4:" in messages[0], messages


def test_commits_that_interleave_generations_are_handed_to_the_rdd_job(spark, tmp_path):
    # a client commits generation g, then g-1, then g again, with no event of its own among them:
    # a run per (member, generation) would lose the second failure, so the RDD job takes them
    lines = [json.loads(x) for x in (DATA / "cooperative" / "events.jsonl").read_text().splitlines() if x]
    extra = []
    for c in (e for e in lines if e["event"] == "client.committed"):
        extra += [dict(c, ts_ms=c["ts_ms"] + 1, generation=c["generation"] - 1), dict(c, ts_ms=c["ts_ms"] + 2)]
    d = write_log(tmp_path / "logs" / "interleaved", sorted(lines + extra, key=lambda e: e["ts_ms"]))
    rdd, df = both(spark, [d], tmp_path, handed_over=True)
    for name in TABLES:
        assert rdd[name] == df[name], name
    assert {r["invariant"]: r["failed"] for r in df["invariants"]}["generations_grow"] > 0
