"""The typed event log (DIR/events/, Parquet: sim/eventfile.py writes it, analytics/eventfile.py reads
it) against JSON lines: the same runs analysed from either format give the same tables, row by row,
and the same report data, with either engine; the pipeline reads no text of a Parquet log."""
import json
from pathlib import Path

import pytest

from groupcoord.analytics import eventfile, job, pipeline, storage
from groupcoord.sim import scenario, simulate
from groupcoord.sim.model import write_outputs

from test_scenarios import SCENARIOS, short  # same directory (rootdir-relative imports, no packages)

TABLES = ("rebalances", "sessions", "groups", "invariants", "violations", "summary",
          "deliveries", "consumers", "redeliveries", "archived", "work")
#: a work queue (share group, producers, record events) besides the consumer groups
SHARE_QUEUE = {"produce.stop_s": 40, "produce.rate_per_s": 25, "duration_s": 60}


@pytest.fixture(scope="module")
def spark():
    return job.spark_session()


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """Each run written twice, as JSON lines and as Parquet, into directories of the same name."""
    root = tmp_path_factory.mktemp("formats")
    runs = {name: short(name) for name in ("crashes-and-coordinator-move", "slow-members", "hour-1000")}
    runs["share-queue"] = scenario.apply_overrides(scenario.load(SCENARIOS / "share-queue.toml"), SHARE_QUEUE)
    for name, sc in runs.items():
        events, summary, resolved = simulate.simulate(sc, 1)
        for fmt in ("jsonl", "parquet"):
            write_outputs(root / fmt / name, events, resolved, summary, event_format=fmt)
    return {fmt: sorted((root / fmt).iterdir()) for fmt in ("jsonl", "parquet")}


def tables(spark, out: Path) -> dict:
    got = {}
    for name in TABLES:
        if not (out / name).exists():
            continue
        rows = [r.asDict(recursive=True) for r in spark.read.parquet(storage.literal(out / name)).collect()]
        got[name] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return got


def report_data(a) -> dict:
    def key(r):
        return json.dumps(r, sort_keys=True, default=str)
    return {"summary": [{k: v for k, v in r.items() if k != "path"} for r in a.summary], "invariants": a.invariants, "violations": a.violations, "events": a.events,
            "rebalances": sorted(a.rebalances, key=key), "timeline": sorted(a.timeline, key=key),
            "work": a.work, "logs": [{k: v for k, v in log.items() if k != "path"} for log in a.logs]}


def without_path(t: dict) -> dict:
    return {name: [{k: v for k, v in r.items() if k != "path"} for r in rows] for name, rows in t.items()}


def test_every_event_round_trips_to_the_same_json_lines(logs):
    assert [d.name for d in logs["jsonl"]] == [d.name for d in logs["parquet"]]
    for text, typed in zip(logs["jsonl"], logs["parquet"]):
        assert not (typed / "events.jsonl").exists() and not (text / "events").exists()
        lines = "".join(eventfile.json_lines(typed / "events"))
        assert lines == (text / "events.jsonl").read_text(encoding="utf-8"), typed.name
    kinds = {eventfile.kind_of(p.name) for d in logs["parquet"] for p in (d / "events").iterdir()}
    # consumer groups, the coordinator, a share group's records and acknowledgements, producers
    assert {"client.committed", "offset.committed", "client.assigned", "client.records_polled",
            "client.acknowledged", "producer.produced", "share.records_acquired"} <= kinds


def test_tables_and_report_are_the_same_from_either_format(spark, logs, tmp_path, monkeypatch):
    text = job.find_logs([str(d) for d in logs["jsonl"]])
    typed = job.find_logs([str(d) for d in logs["parquet"]])
    assert {s.format for s in text} == {"jsonl"} and {s.format for s in typed} == {"parquet"}
    assert [s.start_ms for s in text] == [s.start_ms for s in typed]
    reference = job.analyze(text, tmp_path / "jsonl", spark=spark, report=False, engine="rdd")

    # a Parquet log's events reach the pipeline as columns: no line of text is read
    def no_text(spark, sources, kinds=None):
        assert all(s.format == "parquet" for s in sources)
        return read_events(spark, sources, kinds)
    read_events = pipeline.read_events
    monkeypatch.setattr(pipeline, "read_events", no_text)
    monkeypatch.setattr(pipeline, "_text_events", None)
    monkeypatch.setattr(pipeline, "_text_offsets", None)
    # (and Spark's expressions compiled, as for big logs: the other two run interpreted)
    monkeypatch.setattr(job, "INTERPRETED_BELOW", 0)
    dataframe = job.analyze(typed, tmp_path / "parquet", spark=spark, report=False, engine="dataframe")
    monkeypatch.undo()
    rdd = job.analyze(typed, tmp_path / "parquet-rdd", spark=spark, report=False, engine="rdd")
    assert (reference.engine, dataframe.engine, rdd.engine) == ("rdd", "dataframe", "rdd")

    expected = tables(spark, tmp_path / "jsonl")
    assert set(expected) == set(TABLES)           # the work queue's tables too
    assert sum(r["events"] for r in expected["summary"]) > 10_000
    for got in (tables(spark, tmp_path / "parquet"), tables(spark, tmp_path / "parquet-rdd")):
        assert set(got) == set(expected)
        for name in TABLES:
            assert without_path(got)[name] == without_path(expected)[name], name
        assert {r["path"] for r in got["summary"]} == {str((d / "events").resolve()) for d in logs["parquet"]}
    for a in (dataframe, rdd):
        assert report_data(a) == report_data(reference)


class _Seen(Exception):
    pass


@pytest.mark.parametrize("engine", ["dataframe", "rdd"])
def test_a_small_log_is_analysed_with_interpreted_expressions_and_the_settings_are_put_back(
        spark, logs, tmp_path, monkeypatch, engine):
    keys = sorted(job.INTERPRETED)
    before = [spark.conf.get(k) for k in keys]
    assert before != [job.INTERPRETED[k] for k in keys]
    seen = []

    def look(spark, *args):                 # the settings the tables are computed with
        seen.append([spark.conf.get(k) for k in keys])
        raise _Seen
    monkeypatch.setattr(job, "_compute_dataframe" if engine == "dataframe" else "_compute_rdd", look)
    small = job.find_logs([str(logs["parquet"][0]), str(logs["jsonl"][0])])
    assert sum(pipeline.input_bytes(spark, small)) < job.INTERPRETED_BELOW / 20
    small_below = job.INTERPRETED_BELOW
    for below in (small_below, 1):              # then every log is a big one
        monkeypatch.setattr(job, "INTERPRETED_BELOW", below)
        with pytest.raises(_Seen):
            job.analyze(small, tmp_path / str(below), spark=spark, report=False, engine=engine)
        assert [spark.conf.get(k) for k in keys] == before
    # a setting the session has (--conf, spark-defaults or a conf.set) is kept
    monkeypatch.setattr(job, "INTERPRETED_BELOW", small_below)
    spark.conf.set(keys[1], "true")
    try:
        with pytest.raises(_Seen):
            job.analyze(small, tmp_path / "given", spark=spark, report=False, engine=engine)
        assert [spark.conf.get(k) for k in keys] == [before[0], "true"]
    finally:
        spark.conf.unset(keys[1])
    assert seen == [[job.INTERPRETED[k] for k in keys], before, [job.INTERPRETED[keys[0]], "true"]]


def test_a_commit_file_the_pipeline_cannot_vouch_for_goes_to_the_rdd_job(spark, logs, tmp_path):
    # a client commit without its member: the same tables as its JSON lines (the RDD job takes both)
    name = "hour-1000"
    events = eventfile.read_events(next(d for d in logs["parquet"] if d.name == name) / "events")
    commit = next(e for e in events if e["event"] == "client.committed")
    commit["member"] = None
    resolved = json.loads((logs["jsonl"][0].parent / name / "scenario.json").read_text())
    for fmt in ("jsonl", "parquet"):
        write_outputs(tmp_path / fmt / name, events, resolved, None, event_format=fmt)
    assert not eventfile.vouched("client.committed", [str(tmp_path / "parquet" / name / "events"
                                                          / "client.committed.parquet")])
    got = {}
    for fmt in ("jsonl", "parquet"):
        a = job.analyze(job.find_logs([str(tmp_path / fmt / name)]), tmp_path / f"out-{fmt}", spark=spark,
                        report=False, engine="dataframe")
        assert a.engine == "rdd"
        got[fmt] = without_path(tables(spark, tmp_path / f"out-{fmt}"))
    assert got["parquet"] == got["jsonl"]


def test_a_log_directory_with_both_formats_is_read_as_parquet(logs, tmp_path):
    d = tmp_path / "both"
    events = eventfile.read_events(logs["parquet"][0] / "events")
    write_outputs(d, events, {}, None, event_format="both")
    (source,) = job.find_logs([str(d)])
    assert (source.format, Path(source.events_path).name) == ("parquet", "events")
    write_outputs(d, events, {}, None, event_format="jsonl")     # the Parquet log of before is gone
    (source,) = job.find_logs([str(d)])
    assert (source.format, Path(source.events_path).name, (d / "events").exists()) == ("jsonl", "events.jsonl", False)


def test_logs_named_with_quotes_are_told_apart(spark, logs, tmp_path):
    # the small kinds' files of several logs are read together and each row's log is found from its
    # file's path through a map written as SQL text: names with quotes stay exact
    import shutil
    source = next(d for d in logs["parquet"] if d.name == "crashes-and-coordinator-move")
    dirs = [tmp_path / "logs" / name for name in ("it's", "it''s", 'say "x", then \'y\'')]
    for d in dirs:
        shutil.copytree(source, d)
    sources = job.find_logs([str(d) for d in dirs])
    names = sorted(s.log for s in sources)
    assert len(set(names)) == 3 and all("'" in n or '"' in n for n in names)
    frames = eventfile.kind_frames(spark, sources, kinds=("member.joined",), with_paths=True)
    assert len(frames) == 1 and len(frames[0][2]) == 3          # the three files read together
    per_log = {r["log"]: r["count"] for r in frames[0][1].groupBy("log").count().collect()}
    assert sorted(per_log) == names and len(set(per_log.values())) == 1
    df = job.analyze(sources, tmp_path / "df", spark=spark, report=False, engine="dataframe")
    rdd = job.analyze(sources, tmp_path / "rdd", spark=spark, report=False, engine="rdd")
    assert (df.engine, rdd.engine) == ("dataframe", "rdd") and sorted(r["log"] for r in df.summary) == names
    assert without_path(tables(spark, tmp_path / "df")) == without_path(tables(spark, tmp_path / "rdd"))


@pytest.mark.parametrize("engine", ["dataframe", "rdd"])
def test_logs_under_names_with_glob_characters_are_read_as_named(spark, logs, tmp_path, engine):
    # Spark's readers take a path for a Hadoop glob: unescaped, "run[1]" names no file (PATH_NOT_FOUND),
    # "a{b,c}" "ab" or "ac", a backslash escapes what follows; each copy reads as the plain one does
    import shutil
    names = ("plain", "run[1]", "a{b,c}", "x*y?", "back\\slash")
    dirs = []
    for fmt in ("parquet", "jsonl"):
        source = next(d for d in logs[fmt] if d.name == "crashes-and-coordinator-move")
        for name in names:
            dirs.append(tmp_path / fmt / name / "log")
            shutil.copytree(source, dirs[-1])
    sources = job.find_logs([str(d) for d in dirs])
    a = job.analyze(sources, tmp_path / "out[1]", spark=spark, report=False, engine=engine)
    assert a.engine == engine and len(a.summary) == len(dirs) == 10
    assert sorted(Path(r["path"]).parent.parent.name for r in a.summary) == sorted(names * 2)
    got = tables(spark, tmp_path / "out[1]")
    by_dir = {r["log"]: Path(r["path"]).parent.parent.name for r in got["summary"]}

    def of(d):          # a table's rows of the logs under directory d, without their names
        return {name: sorted(json.dumps({k: v for k, v in r.items() if k not in ("log", "path")}, sort_keys=True,
                                        default=str) for r in rows if by_dir.get(r.get("log")) == d)
                for name, rows in got.items()}
    plain = of("plain")
    assert plain["summary"] and plain["rebalances"] and all(of(d) == plain for d in names)


def test_a_file_with_a_column_named_log_goes_to_the_rdd_job(spark, logs, tmp_path):
    # a foreign writer's field named "log" would be taken for (or replaced by) the log's name: the
    # pipeline hands such a log to the RDD job, which keeps the field as the event's own
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq
    d = tmp_path / "foreign"
    shutil.copytree(next(d for d in logs["parquet"] if d.name == "crashes-and-coordinator-move"), d)
    path = d / "events" / "member.joined.parquet"
    table = pq.read_table(path)
    pq.write_table(table.append_column("log", pa.array(["x"] * table.num_rows)), path)
    a = job.analyze(job.find_logs([str(d)]), tmp_path / "out", spark=spark, report=False, engine="dataframe")
    assert a.engine == "rdd" and a.summary and a.summary[0]["log"] == "foreign"
