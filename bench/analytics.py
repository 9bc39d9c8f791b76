"""Benchmark: events per second through ``groupcoord analyze`` (the Spark job), against the same
per-group computation in one Python process without Spark (the peer: read, parse, group, analyse).

    .venv/bin/python bench/analytics.py [LOG_DIR ...] [--scenario FILE] [--seed N] [--master URL]
        [--engines rdd,dataframe] [--copies 1,4] [--jvm-quick-tier on|off] [--format parquet|jsonl]

Without LOG_DIR, the scenario (default examples/scenarios/crashes-and-coordinator-move.toml) is
simulated first into a temporary directory. The Spark job runs once on the logs to warm up (JVM
start, Python workers) and is then timed on a second run, report included; Spark's start-up is
reported separately. ``events_per_second(logs)`` is the function other benchmarks call.
``--engines`` runs each engine of ``analyze`` side by side in the same Spark session;
``--copies N`` gives the logs N times (named apart), to see the cost grow with the input;
``--jvm-quick-tier on`` adds -XX:TieredStopAtLevel=1 to the local driver's JVM options (off by default);
``--format parquet|jsonl`` converts the logs first (the peer then reads that format too); a log's
format is otherwise what its directory holds (events/: Parquet, else events.jsonl);
``--phases`` prints where the timed run's time went (the first table's write runs the whole pipeline,
the other writes read its kept rows; then the summary, the report); ``--without-commits`` is a probe,
not an analysis: the dataframe engine drops the commit lines by their prefix (98% of a long log; the
tables come out wrong), what is left is the cost of everything else.
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SCENARIO = ROOT / "examples" / "scenarios" / "crashes-and-coordinator-move.toml"


def python_events_per_second(logs) -> dict:
    """The peer: the analysis in one process, no Spark (no Parquet, no report)."""
    from groupcoord.analytics.eventfile import read_events
    from groupcoord.analytics.job import find_logs
    from groupcoord.analytics.model import analyze_group, group_partitions
    t0 = time.perf_counter()
    events = 0
    for source in find_logs(logs):
        by_group = defaultdict(list)
        if source.format == "parquet":
            for e in read_events(source.events_path):
                by_group[e.get("group")].append(e)
                events += 1
        else:
            with open(source.events_path, encoding="utf-8") as f:
                for line in f:
                    if line.strip():
                        e = json.loads(line)
                        by_group[e["group"]].append(e)
                        events += 1
        for group, evs in by_group.items():
            evs.sort(key=lambda e: e["ts_ms"])
            analyze_group(group, evs, group_partitions(source.scenario, group))
    seconds = time.perf_counter() - t0
    return {"events": events, "seconds": seconds, "events_per_s": events / seconds if seconds else None}


def timed_phases() -> list:
    """Record (name, seconds) of each table write, the summary and the report into the list returned."""
    from groupcoord.analytics import job, report
    phases, depth = [], [0]

    def timed(module, name, label):
        f = getattr(module, name)

        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            depth[0] += 1
            try:
                return f(*args, **kwargs)
            finally:
                depth[0] -= 1
                if not depth[0]:          # the summary's own write is within the summary
                    phases.append((label(args), time.perf_counter() - t0))
        setattr(module, name, wrapper)
    timed(job, "_write", lambda args: "write " + Path(str(args[1])).name)
    timed(job, "_write_summary", lambda args: "summary (its write and rows)")
    timed(report, "write_report", lambda args: "report")
    return phases


def drop_commits() -> None:
    """The --without-commits probe: the pipeline reads no commit line (wrong tables, a floor)."""
    from pyspark.sql import functions as F

    from groupcoord.analytics import pipeline
    read = pipeline.read_events

    def without_commits(spark, sources):
        v = F.col("value")
        return read(spark, sources).where(~v.startswith(pipeline._CLIENT_PREFIX)
                                          & ~v.startswith(pipeline._COORDINATOR_PREFIX))
    pipeline.read_events = without_commits


def events_per_second(logs, master: str | None = None, out=None, warm_up: bool = True,
                      engine: str | None = None, phases: list | None = None) -> dict:
    """Events per second ``groupcoord analyze`` processes over ``logs`` (log directories or
    events files), Parquet tables and report included, Spark already started.

    Returns ``{"events", "seconds", "events_per_s", "spark_start_s", "warm_up_s"}``."""
    from groupcoord.analytics.job import analyze, find_logs, spark_session
    t0 = time.perf_counter()
    spark = spark_session(master)
    spark.sparkContext.parallelize([0], 1).count()
    started = time.perf_counter() - t0
    sources = find_logs(logs)
    with tempfile.TemporaryDirectory(prefix="bench-analytics-") as tmp:
        out = Path(out or tmp)
        warm = 0.0
        if warm_up:
            t1 = time.perf_counter()
            analyze(sources, out / "warm-up", spark=spark, engine=engine)
            warm = time.perf_counter() - t1
        if phases is not None:
            phases.clear()
        t1 = time.perf_counter()
        analysis = analyze(sources, out / "run", spark=spark, engine=engine)
        seconds = time.perf_counter() - t1
    return {"events": analysis.events, "seconds": seconds, "events_per_s": analysis.events / seconds,
            "spark_start_s": started, "warm_up_s": warm}


def convert(logs, fmt: str, out: Path) -> list:
    """The log directories written again with their events in ``fmt`` ("parquet" or "jsonl")."""
    import shutil

    from groupcoord.analytics.eventfile import read_events
    from groupcoord.analytics.job import find_logs
    from groupcoord.sim.model import write_outputs
    converted = []
    for i, source in enumerate(find_logs(logs)):
        t0 = time.perf_counter()
        if source.format == "parquet":
            events = read_events(source.events_path)
        else:
            with open(source.events_path, encoding="utf-8") as f:
                events = [json.loads(line) for line in f if line.strip()]
        d = out / f"{i}" / source.log
        write_outputs(d, events, source.scenario or {}, None, event_format=fmt)
        summary = Path(source.events_path).parent / "summary.json"
        if summary.is_file():
            shutil.copy(summary, d / "summary.json")
        print(f"converted {source.log} to {fmt}: {len(events)} events in {time.perf_counter() - t0:.1f} s", flush=True)
        converted.append(d)
    return converted


def copied(logs, copies: int, out: Path) -> list:
    """The logs ``copies`` times: a JSON-lines log given again (Spark reads the file once per copy),
    a Parquet log's directory copied (its files would be read once for every copy: see
    eventfile.kind_frames)."""
    import shutil

    from groupcoord.analytics.job import find_logs
    result = []
    for source, path in zip(find_logs(logs), logs):
        if source.format != "parquet" or copies == 1:
            result += [path] * copies
            continue
        for n in range(copies):
            d = out / f"{n}" / source.log
            if not d.exists():
                shutil.copytree(Path(source.events_path).parent, d)
            result.append(d)
    return result


def simulate(scenario: Path, seed: int | None, out: Path) -> Path:
    from groupcoord.sim import scenario as scenario_mod
    from groupcoord.sim import simulate as simulate_mod
    t0 = time.perf_counter()
    events = simulate_mod.run(scenario_mod.load(scenario), seed, out)
    print(f"simulated {scenario.name}: {len(events)} events in {time.perf_counter() - t0:.1f} s", flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("logs", nargs="*", help="log directories or events files (default: simulate --scenario)")
    p.add_argument("--scenario", type=Path, default=DEFAULT_SCENARIO)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--master", default=None)
    p.add_argument("--engines", default="rdd,dataframe", help="comma-separated analyze engines")
    p.add_argument("--copies", default="1", help="comma-separated numbers of copies of the logs")
    p.add_argument("--jvm-quick-tier", choices=("on", "off"), default="off")
    p.add_argument("--phases", action="store_true", help="print where the timed run's time went")
    p.add_argument("--without-commits", action="store_true", help="probe: drop the commit lines (wrong tables)")
    p.add_argument("--format", choices=("parquet", "jsonl"), default=None,
                   help="convert the logs to this event format first (default: as they are)")
    args = p.parse_args(argv)
    from groupcoord.analytics import job
    if args.jvm_quick_tier == "on":
        job.LOCAL_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 " + job.LOCAL_JAVA_OPTIONS
    print(f"driver JVM options (local): {job.LOCAL_JAVA_OPTIONS}", flush=True)
    phases = timed_phases() if args.phases else None
    if args.without_commits:
        drop_commits()
        print("probe --without-commits: the dataframe engine drops every commit line (the tables are wrong)")
    with tempfile.TemporaryDirectory(prefix="bench-analytics-log-") as tmp:
        logs = args.logs or [simulate(args.scenario, args.seed, Path(tmp) / "log")]
        if args.format:
            logs = convert(logs, args.format, Path(tmp) / "converted")
        peer = python_events_per_second(logs)
        print(f"peer, one Python process without Spark: {peer['events']} events, {peer['seconds']:.2f} s, "
              f"{peer['events_per_s']:,.0f} events/s", flush=True)
        for copies in (int(c) for c in args.copies.split(",")):
            for engine in args.engines.split(","):
                r = events_per_second(copied(logs, copies, Path(tmp) / "copies"), master=args.master, engine=engine,
                                      phases=phases)
                if args.without_commits:          # the tables count only the lines read: the log's events
                    r["events"] = peer["events"] * copies
                    r["events_per_s"] = r["events"] / r["seconds"]
                print(f"groupcoord analyze --engine {engine} (Spark {args.master or 'local[2]'}), {copies} cop"
                      f"{'y' if copies == 1 else 'ies'}: {r['events']} events, {r['seconds']:.2f} s, "
                      f"{r['events_per_s']:,.0f} events/s (x{r['events_per_s'] / peer['events_per_s']:.2f} the peer; "
                      f"warm-up run {r['warm_up_s']:.1f} s, Spark start-up {r['spark_start_s']:.1f} s)", flush=True)
                if phases is not None:
                    rest = r["seconds"] - sum(s for _, s in phases)
                    print("  " + ", ".join(f"{name} {s:.2f} s" for name, s in phases) + f", the rest {rest:.2f} s",
                          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
