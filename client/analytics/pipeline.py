"""The DataFrame pipeline (``engine="dataframe"``): the same tables as the RDD job, with the
per-event work in the JVM.

* Each log is read as text with its position in the file, and parsed with ``from_json`` and an
  explicit schema of the few fields needed; blank lines are dropped.
* One window over (log, group) ordered by (time, position) numbers the stretches between
  non-commit events (``epoch``) and between offset resets (``group.deleted``, ``offsets.*``).
* Commit lines (``client.committed`` and ``offset.committed``, 98% of a long log) stop in the
  JVM: each run of commits of one client (or of the coordinator) with one member and generation
  within an epoch becomes one row with its count and first and last time (the model takes it as
  one event, :data:`~groupcoord.client.analytics.model.RUN`); the ``commits_kept`` invariant is
  computed from the exploded offsets with ``lag`` over (log, group, reset epoch, partition):
  counts per group and the first counterexamples.
* The other lines (2%), the runs and the ``commits_kept`` results go, grouped by (log, group),
  through Arrow (``applyInPandas``) to the sequential model, which returns every table's rows as
  JSON; these are kept (small) and each table is read from them with ``from_json``.

A line the JVM cannot vouch for (not JSON, a missing field, a commit with odd offsets) is sent to
Python as text; any problem there raises :class:`Fallback`, and :func:`job.analyze` then runs the
RDD job, whose messages name the file and line.
"""
from __future__ import annotations

import json
import os

from .model import INVARIANTS, MAX_COUNTEREXAMPLES, RUN, RUN_LAST_TS, analyze_group, group_partitions

COMMITS = ("client.committed", "offset.committed")
RESETS = ("group.deleted", "offsets.expired", "offsets.deleted")
TABLES = ("rebalances", "sessions", "groups", "invariants", "violations")
_FALLBACK = "groupcoord-analytics-fallback:"


class Fallback(Exception):
    """The pipeline met a line it does not take: the RDD job says what is wrong with it."""


def _event_schema():
    from pyspark.sql import types as T
    S, L = T.StringType(), T.LongType()
    return T.StructType([T.StructField(n, t, True) for n, t in (
        ("v", L), ("event", S), ("ts_ms", L), ("group", S), ("client", S), ("member", S),
        ("generation", L), ("offsets", T.ArrayType(T.ArrayType(S))))])


def _input_schema():
    from pyspark.sql import types as T
    S, L = T.StringType(), T.LongType()
    return T.StructType([T.StructField(n, t, True) for n, t in (
        ("log", S), ("group", S), ("kind", S), ("ts", L), ("pos", L), ("value", S), ("client", S),
        ("member", S), ("gen", L), ("n", L), ("last_ts", L), ("topic", S), ("part", L), ("off", L),
        ("prev_off", L), ("prev_client", S), ("prev_ts", L))])


def read_events(spark, sources):
    """(log, pos, value) of every non-blank line; pos grows with the position in the file."""
    from pyspark.sql import functions as F
    frames = []
    for s in sources:
        frames.append(spark.read.text(s.events_path)
                      .select(F.lit(s.log).alias("log"), F.monotonically_increasing_id().alias("pos"), "value")
                      .where(F.trim("value") != ""))
    df = frames[0]
    for f in frames[1:]:
        df = df.unionAll(f)
    return df


def model_input(spark, sources, cached: list):
    """The rows the per-group model reads, all in one DataFrame (see the module docstring);
    ``cached``: gets the DataFrames persisted on the way (to unpersist when done)."""
    from pyspark.sql import Window
    from pyspark.storagelevel import StorageLevel
    from pyspark.sql import functions as F
    cols = [f.name for f in _input_schema().fields]
    types = {f.name: f.dataType for f in _input_schema().fields}

    def shape(df, **given):
        return df.select(*[given[c].alias(c) if c in given else
                           (F.col(c) if c in df.columns else F.lit(None).cast(types[c]).alias(c)) for c in cols])

    e = F.from_json("value", _event_schema()).alias("e")
    parsed = read_events(spark, sources).select("log", "pos", "value", e)
    ev = F.col("e.event")
    offsets = F.col("e.offsets")
    ok_commit = (F.col("e").isNotNull() & ev.isin(*COMMITS) & F.col("e.ts_ms").isNotNull()
                 & F.col("e.group").isNotNull() & (F.col("e.v").isNull() | (F.col("e.v") == 1))
                 & F.when(ev == "client.committed",
                          F.col("e.client").isNotNull()
                          & (offsets.isNull() | F.forall(offsets, lambda o: F.size(o) == 3)))
                  .otherwise(F.col("e.generation").isNotNull()))
    x = parsed.select(
        "log", "pos", F.col("e.group").alias("group"), F.col("e.ts_ms").alias("ts"),
        F.when(ok_commit, ev).alias("commit"),
        F.when(ok_commit, F.lit(None)).otherwise(F.col("value")).alias("value"),
        F.col("e.client").alias("client"), F.col("e.member").alias("member"), F.col("e.generation").alias("gen"),
        F.when(ok_commit & (ev == "client.committed"), offsets).alias("offsets"),
        ev.isin(*RESETS).alias("reset"))
    w = Window.partitionBy("log", "group").orderBy("ts", "pos").rowsBetween(Window.unboundedPreceding, 0)
    x = x.select("*", F.sum(F.col("commit").isNull().cast("int")).over(w).alias("epoch"),
                 F.sum(F.col("reset").cast("int")).over(w).alias("reset_epoch"))
    # read three times below (lines, runs, offsets): parsed and sorted once (else once each)
    x = x.persist(StorageLevel.MEMORY_AND_DISK)
    cached.append(x)

    lines = shape(x.where(F.col("commit").isNull()), kind=F.lit("line"))
    first = F.min(F.struct("ts", "pos"))
    runs = (x.where(F.col("commit").isNotNull())
            .groupBy("log", "group", "epoch", "commit", "client", "member", "gen")
            .agg(first.alias("first"), F.count(F.lit(1)).alias("n"), F.max("ts").alias("last_ts")))
    runs = shape(runs, kind=F.col("commit"), ts=F.col("first.ts"), pos=F.col("first.pos"))

    exploded = (x.where(F.col("offsets").isNotNull())
                .select("log", "group", "reset_epoch", "ts", "pos", "client",
                        F.posexplode("offsets").alias("idx", "o"))
                .select("log", "group", "reset_epoch", "ts", "pos", "client", "idx",
                        F.col("o")[0].alias("topic"), F.col("o")[1].cast("long").alias("part"),
                        F.col("o")[2].cast("long").alias("off")))
    wp = Window.partitionBy("log", "group", "reset_epoch", "topic", "part").orderBy("ts", "pos", "idx")
    kept = exploded.select("*", F.lag("off").over(wp).alias("prev_off"), F.lag("client").over(wp).alias("prev_client"),
                           F.lag("ts").over(wp).alias("prev_ts"))
    kept = kept.withColumn("fail", F.col("prev_off").isNotNull() & (F.col("off") < F.col("prev_off")))
    stats = shape(kept.groupBy("log", "group").agg(F.count(F.lit(1)).alias("n"),
                                                   F.sum(F.col("fail").cast("long")).alias("gen")),
                  kind=F.lit("kept"))
    wf = Window.partitionBy("log", "group").orderBy("ts", "pos", "idx")
    examples = kept.where("fail").select("*", F.row_number().over(wf).alias("rn")) \
        .where(F.col("rn") <= MAX_COUNTEREXAMPLES)
    examples = shape(examples, kind=F.lit("kept_example"))
    return lines.unionAll(runs).unionAll(stats).unionAll(examples)


def _group_rows(key, pdf, metas):
    """The model over one group's rows (a pandas frame): every table's rows as (tag, JSON)."""
    import pandas as pd

    from .job import _problem
    log, group = key
    meta = metas[log]
    if group is None:
        raise Fallback(f"{_FALLBACK} an event without a group")
    pdf = pdf.sort_values(["ts", "pos"], kind="stable")
    events, kept_checked, kept_failed, kept_examples = [], 0, 0, []
    for r in pdf.itertuples(index=False):
        kind = r.kind
        if kind == "line":
            try:
                ev = json.loads(r.value)
            except (json.JSONDecodeError, TypeError):
                raise Fallback(f"{_FALLBACK} not JSON") from None
            if _problem(ev) or ev["event"] in COMMITS:
                raise Fallback(f"{_FALLBACK} a line to check")
            events.append(ev)
        elif kind == "kept":
            kept_checked, kept_failed = int(r.n), int(r.gen)
        elif kind == "kept_example":
            kept_examples.append((int(r.ts), int(r.pos), {
                "group": group, "invariant": "commits_kept", "ts_ms": int(r.ts),
                "detail": {"partition": [r.topic, int(r.part)], "offset": int(r.off), "client": r.client,
                           "acknowledged_before": int(r.prev_off), "by": r.prev_client, "at_ms": int(r.prev_ts)}}))
        else:
            ev = {"event": kind, "ts_ms": int(r.ts), "group": group, "generation": _int(r.gen),
                  RUN: int(r.n), RUN_LAST_TS: int(r.last_ts)}
            if kind == "client.committed":
                ev["client"], ev["member"] = r.client, r.member
            events.append(ev)
    result = analyze_group(group, events, group_partitions(meta["scenario_doc"], group), meta["start_ms"])
    inv = result["invariants"]
    inv["checked"]["commits_kept"] += kept_checked
    inv["failed"]["commits_kept"] += kept_failed
    if inv["status"]["commits_kept"] != "skipped":
        inv["status"]["commits_kept"] = "fail" if inv["failed"]["commits_kept"] else "pass"
    head = {"log": log, "cell": meta["cell"], "scenario": meta["scenario"], "seed": meta["seed"]}
    out = []

    def add(tag, row):
        out.append((tag, json.dumps({**head, **row})))
    for row in result["rebalances"]:
        add("rebalances", row)
    for row in result["sessions"]:
        add("sessions", row)
    add("groups", result["group"])
    for name in INVARIANTS:
        add("invariants", {"group": group, "invariant": name, "status": inv["status"][name],
                           "checked": inv["checked"][name], "failed": inv["failed"][name]})
    for ex in inv["examples"] + [e for _, _, e in sorted(kept_examples, key=lambda x: (x[0], x[1]))]:
        add("violations", {"group": group, "invariant": ex["invariant"], "ts_ms": ex["ts_ms"],
                           "detail": json.dumps(ex["detail"], sort_keys=True)})
    for row in result["timeline"]:
        add("timeline", row)
    return pd.DataFrame(out, columns=["tag", "payload"])


def _int(v):
    return None if v is None or v != v else int(v)   # NaN: a null in a pandas column


def model_output(spark, sources):
    """(tag, payload) rows of every table, computed (and kept) in one Spark job, and the
    DataFrames persisted on the way (unpersist them once the rows are kept)."""
    from pyspark.storagelevel import StorageLevel
    metas = {s.log: {"cell": s.cell, "scenario": s.scenario_name, "seed": s.seed, "scenario_doc": s.scenario,
                     "start_ms": s.start_ms} for s in sources}
    cached = []
    rows = (model_input(spark, sources, cached).groupBy("log", "group")
            .applyInPandas(lambda key, pdf: _group_rows(key, pdf, metas), "tag string, payload string"))
    rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
    return rows, cached


def table(rows, name, fields):
    """One table from the tagged rows, with the RDD job's schema and column order."""
    from pyspark.sql import functions as F

    from .job import _struct
    return (rows.where(F.col("tag") == name).select(F.from_json("payload", _struct(fields)).alias("r"))
            .select(*[F.col("r")[n].alias(n) for n, _ in fields]))


def split_size(sources, parallelism: int) -> int:
    """Bytes per input split: each core gets two or more splits of a big log (at least 4 MiB)."""
    total = sum(os.path.getsize(s.events_path) for s in sources)
    return max(4 << 20, total // max(1, 2 * parallelism) + 1)
