"""The DataFrame pipeline (``engine="dataframe"``): the same tables as the RDD job, with the
per-event work in the JVM.

* A JSON-lines log is read as text with its position in the file. A commit line (``client.committed``,
  ``offset.committed``: 98% of a long log) written as groupcoord writes it is checked by one
  regular expression and its few fields cut out of the text; any other line is parsed with
  ``from_json`` (group and time) and kept whole for the model.
* A Parquet log (``events/``, :mod:`.eventfile`) is read as columns, one file per event kind, the
  files of a kind read together across logs: no text is parsed. A commit kind's rows are taken as
  commits without a look at each when the files' footers vouch for them (:func:`.eventfile.vouched`),
  else each is checked; any other event goes to the model as the JSON of its columns (``to_json``).
* Commits never reach Python one by one: they are counted per run (one client's commits with one
  member and generation, or the coordinator's of one generation) in one aggregation, partial
  before the shuffle. ``commits_kept`` is a ``lag`` over each partition's offsets in time order,
  counted per group, the first counterexamples riding along as JSON; but a Parquet log whose client
  commits are one local file its footers vouch for, its rows in time order (as the simulator writes
  it), has that file checked by a Spark task reading it itself (:func:`kept_of_file`: pyarrow and
  numpy, a partition's offsets in the file's order; no row goes from the JVM to Python, no Spark
  shuffle or sort).
* Record events of work queues (``client.records_polled``, ``client.batch_processed``,
  ``client.acknowledged``), producers' events (``producer.produced``, no group) and the transaction
  coordinator's (``transaction.*``, no group) that the JVM can vouch for are counted there too: per
  group, one event for the model (it counts them and reads them no further:
  :data:`~.model.RECORDS_RUN`); per log, the events without a group (``ungrouped`` rows, added to
  the summary's ``events``).
* The other lines (2%), the runs and the ``commits_kept`` counts go, grouped by (log, group),
  through Arrow (``applyInPandas``) to the sequential model, which returns every table's rows as
  JSON; these are kept (small) and each table is read from them with ``from_json``. Each run is
  taken as one event at its first commit, which is exact when nothing among its commits could tell
  (:func:`_check_runs`).

A line the JVM cannot vouch for (not JSON, a missing field, a commit written otherwise), or runs
that do not stand for their commits, raise :class:`Fallback`, and :func:`job.analyze` then runs the
RDD job, which takes each line on its own and whose messages name the file and line.
"""
from __future__ import annotations

import json
import os
import re

from . import eventfile, storage
from .eventfile import untuple
from .model import (INVARIANTS, MAX_COUNTEREXAMPLES, RECORD_EVENTS, RECORDS_RUN, RUN, RUN_LAST_TS, RunOutOfOrder,
                    analyze_group, group_partitions)

COMMITS = ("client.committed", "offset.committed")
RESETS = ("group.deleted", "offsets.expired", "offsets.deleted")
#: starts the message of every Fallback, by which job.analyze knows one raised in a Python worker
FALLBACK_MARK = "groupcoord-analytics-fallback:"


class Fallback(Exception):
    """The pipeline met a line it does not take: the RDD job says what is wrong with it."""


def _event_schema():
    """What the JVM reads of a line other than a commit (the model parses the rest): the group and
    time, and what tells a record event, a producer's or a transaction's event it counts without Python."""
    from pyspark.sql import types as T
    S, L = T.StringType(), T.LongType()
    return T.StructType([T.StructField(n, t, True) for n, t in (
        ("ts_ms", L), ("group", S), ("event", S), ("client", S), ("records", T.ArrayType(T.ArrayType(S))),
        ("started_ms", L), ("busy_ms", L), ("producer", S), ("topic", S), ("partition", L), ("first", L),
        ("last", L), ("transactional_id", S), ("v", L))])


def _counted(general):
    """(a record event, an event without a group: a producer's or the transaction coordinator's) as
    the JVM can vouch for them (the fields :func:`job.event_problem` checks, but for the type of a
    string field): counted, never sent to Python. Any other such line goes to Python, which checks it."""
    from pyspark.sql import functions as F

    from .job import _RUNS
    from .share import ACK_TYPES, PRODUCER_EVENTS, TRANSACTION_PREFIX
    kind = general["event"]
    record = F.lit(False)
    def checker(width, last):
        def run_ok(r):
            ok = ((F.size(r) == width) & r[0].isNotNull() & r[1].try_cast("long").isNotNull()
                  & (r[2].try_cast("long") <= r[3].try_cast("long")))
            if last == "dc":
                ok = ok & r[4].try_cast("long").isNotNull()
            elif last == "type":
                ok = ok & r[4].isin(*ACK_TYPES)
            return ok
        return run_ok
    for name, (width, last) in _RUNS.items():
        ok = (kind == name) & general["records"].isNotNull() & F.forall(general["records"], checker(width, last))
        if name == "client.batch_processed":
            ok = ok & general["started_ms"].isNotNull() & general["busy_ms"].isNotNull()
        record = record | ok
    record = record & general["group"].isNotNull() & general["ts_ms"].isNotNull() & general["client"].isNotNull()
    producer = (kind.isin(*PRODUCER_EVENTS) & general["producer"].isNotNull() & general["topic"].isNotNull()
                & general["partition"].isNotNull() & (general["first"] <= general["last"]))
    transaction = kind.startswith(TRANSACTION_PREFIX) & general["transactional_id"].isNotNull()
    ungrouped = ((producer | transaction) & general["group"].isNull() & general["ts_ms"].isNotNull()
                 & (F.coalesce(general["v"], F.lit(1)) == 1))
    return F.coalesce(record, F.lit(False)), F.coalesce(ungrouped, F.lit(False))


def _input_schema():
    from pyspark.sql import types as T
    S, L = T.StringType(), T.LongType()
    return T.StructType([T.StructField(n, t, True) for n, t in (
        ("log", S), ("group", S), ("kind", S), ("ts", L), ("pos", L), ("value", S), ("client", S),
        ("member", S), ("gen", L), ("n", L), ("last_ts", L), ("last_pos", L))])


def read_events(spark, sources, kinds=None):
    """(log, pos, value) of every line of JSON-lines logs; pos grows with the position in the file.
    A Parquet log's events come as JSON (:func:`.eventfile.json_frame`; only those of ``kinds``, when
    given: a JSON-lines log is read whole)."""
    from pyspark.sql import functions as F
    frames = []
    for s in sources:
        if eventfile.is_parquet(s):
            df = eventfile.json_frame(spark, [s], kinds=kinds)
            if df is not None:
                frames.append(df)
            continue
        frames.append(spark.read.text(storage.literal(s.events_path))
                      .select(F.lit(s.log).alias("log"), F.monotonically_increasing_id().alias("pos"), "value"))
    if not frames:                # Parquet logs without an event of those kinds
        return spark.createDataFrame([], "log string, pos long, value string")
    return eventfile.union(frames)


# A commit line exactly as groupcoord writes it (compact JSON, fields in this order, strings without
# escapes). Such a line is checked by one match and its fields cut out between their names (cheaper
# than parsing it as JSON: 98% of a long log); any other line is parsed with from_json.
_S = r'"[^"\\]*"'
_TOPIC = r'"[a-zA-Z0-9._-]{1,249}"'     # Kafka's legal topic names
_CLIENT_COMMIT = re.compile(
    r'^\{"v":1,"event":"client\.committed","ts_ms":\d{1,18},"group":' + _S + ',"client":' + _S
    + ',"member":' + _S + r',"generation":-?\d{1,9},"offsets":\[(\[' + _TOPIC + r',\d{1,9},-?\d{1,18}\]'
    r'(,\[' + _TOPIC + r',\d{1,9},-?\d{1,18}\])*)\]\}$')
_COORDINATOR_COMMIT = re.compile(
    r'^\{"v":1,"event":"offset\.committed","ts_ms":\d{1,18},"group":' + _S + r',"generation":-?\d{1,9},'
    r'"state":' + _S + r',"members":\d{1,9},"member":' + _S + r',"instance_id":(null|' + _S + r'),'
    r'"partitions":\d{1,9},"errors":\d{1,9},"topics":\d{1,9}\}$')


def _between(value, after: str, before: str):
    """The text between the first ``after`` and the next ``before`` (the fields before them hold
    no quote: the patterns above checked it)."""
    from pyspark.sql import functions as F
    return F.substring_index(F.substring_index(value, after, -1), before, 1)


def _cut(value, fields: list[tuple[str, str, str]]) -> dict:
    """The fields of a line checked by one of the patterns above: name, the text before, the text after."""
    return {name: _between(value, after, before) for name, after, before in fields}


_CLIENT_PREFIX = '{"v":1,"event":"client.committed","ts_ms":'
_COORDINATOR_PREFIX = '{"v":1,"event":"offset.committed","ts_ms":'
_CLIENT_FIELDS = [("ts", '"ts_ms":', ','), ("group", ',"group":"', '","'), ("client", ',"client":"', '","'),
                  ("member", ',"member":"', '","'), ("gen", ',"generation":', ','), ("offsets", '"offsets":', ']}')]
_COORDINATOR_FIELDS = [("ts", '"ts_ms":', ','), ("group", ',"group":"', '","'), ("gen", ',"generation":', ',')]


def model_input(spark, sources):
    """The rows the per-group model reads, all in one DataFrame (see the module docstring)."""
    shape = _shaper()
    # the Parquet logs' files, read once for both (a DataFrame a big file: planning grows with them)
    files = eventfile.kind_frames(spark, [s for s in sources if eventfile.is_parquet(s)], with_paths=True)
    rows, kept = _lines_and_runs(spark, sources, shape, files), _kept(spark, sources, shape, files)
    return rows if kept is None else rows.unionAll(kept)


def _shaper():
    """shape(df, **columns): df's rows in the model input's columns (given, or df's, or null)."""
    from pyspark.sql import functions as F
    cols = [f.name for f in _input_schema().fields]
    types = {f.name: f.dataType for f in _input_schema().fields}

    def shape(df, **given):
        return df.select(*[given[c].alias(c) if c in given else
                           (F.col(c) if c in df.columns else F.lit(None).cast(types[c]).alias(c)) for c in cols])
    return shape


def _lines_and_runs(spark, sources, shape, files):
    """One row per line other than a commit, and one per run of commits (``files``: the Parquet
    logs' :func:`.eventfile.kind_frames`, with their paths)."""
    from pyspark.sql import functions as F
    text = [s for s in sources if not eventfile.is_parquet(s)]
    parquet = [s for s in sources if eventfile.is_parquet(s)]
    frames = [_rows(_text_events(spark, text))] if text else []
    if parquet:
        commits, others = _parquet_events(files)
        if others:
            frames.append(_rows(eventfile.union(others)))
        if commits:       # a Parquet log's commits: runs counted straight from their columns
            frames.append(eventfile.union(commits).groupBy("log", "group", "kind", "client", "member", "gen").agg(
                *_run_aggregates()))
    return eventfile.union([shape(f, kind=F.coalesce("kind", F.lit("line"))) for f in frames])


def _run_aggregates():
    from pyspark.sql import functions as F
    return (F.count(F.lit(1)).alias("n"), F.min("ts").alias("ts"), F.max("ts").alias("last_ts"),
            F.min("pos").alias("pos"), F.max("pos").alias("last_pos"))


def _rows(x):
    """The rows of :func:`_lines_and_runs` of events in :data:`_EVENT_COLUMNS`."""
    from pyspark.sql import functions as F
    form = F.col("form")
    commit, client_commit, line = form > 0, form == 1, form == 0
    record, ungrouped = _counted(F.col("general"))
    x = x.select("*", record.alias("record"), ungrouped.alias("ungrouped"))
    line = line & ~F.col("record") & ~F.col("ungrouped")
    x = x.select(
        "log", "pos",
        F.when(commit, F.col("c_group")).otherwise(F.col("general.group")).alias("group"),
        F.when(commit, F.col("c_ts")).otherwise(F.col("general.ts_ms")).alias("ts"),
        F.when(client_commit, F.lit("client.committed")).when(commit, F.lit("offset.committed"))
        .when(F.col("record"), F.lit(RECORDS_RUN)).when(F.col("ungrouped"), F.lit("ungrouped")).alias("kind"),
        F.when(client_commit, F.col("c_client")).alias("client"),
        F.when(client_commit, F.col("c_member")).alias("member"),
        F.col("c_gen").alias("gen"),
        F.when(line, F.col("value")).alias("value"), F.when(line, F.col("pos")).alias("line"))
    # one row per line, and one per run of commits (partial counts before the shuffle)
    return x.groupBy("log", "group", "kind", "client", "member", "gen", "value", "line").agg(*_run_aggregates())


#: The columns every source's events come in to :func:`_lines_and_runs`: form (1: a client's commit,
#: 2: the coordinator's, 0: any other event), the commit's fields, and the other events' JSON and
#: :func:`_event_schema` struct.
_EVENT_COLUMNS = ("log", "pos", "form", "value", "general", "c_group", "c_ts", "c_client", "c_member", "c_gen")


def _text_events(spark, sources):
    """Events of JSON-lines logs: a commit line checked by its pattern and its fields cut out, any
    other line parsed with from_json."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    L = T.LongType()
    v = F.col("value")
    form = (F.when(v.startswith(_CLIENT_PREFIX) & v.rlike(_CLIENT_COMMIT.pattern), 1)
            .when(v.startswith(_COORDINATOR_PREFIX) & v.rlike(_COORDINATOR_COMMIT.pattern), 2)
            .otherwise(0))
    x = (read_events(spark, sources).select("log", "pos", "value", form.alias("form"))
         .where((F.col("form") > 0) | (F.trim("value") != "")))     # blank lines skipped (trim: only for the 2%)
    commit, client_commit, line = F.col("form") > 0, F.col("form") == 1, F.col("form") == 0
    cc, oc = _cut(v, _CLIENT_FIELDS), _cut(v, _COORDINATOR_FIELDS)

    def either(name):
        return F.when(client_commit, cc[name]).when(commit, oc[name])
    general = F.from_json("value", _event_schema())   # any other line: 2% of a long log, or a foreign writer
    return x.select("log", "pos", "form", F.when(line, v).alias("value"), F.when(line, general).alias("general"),
                    either("group").alias("c_group"), either("ts").cast(L).alias("c_ts"),
                    F.when(client_commit, cc["client"]).alias("c_client"),
                    F.when(client_commit, cc["member"]).alias("c_member"), either("gen").cast(L).alias("c_gen"))


#: The columns (and Spark types' simple strings) a commit kind's Parquet file must have for its
#: rows to be taken as commits (any other file of the kind: the RDD job takes the log).
_PARQUET_COMMITS = {
    "client.committed": {"v": "bigint", "event": "string", "ts_ms": "bigint", "group": "string", "client": "string",
                         "member": "string", "generation": "bigint",
                         "offsets": "array<struct<topic:string,partition:bigint,offset:bigint>>"},
    "offset.committed": {"v": "bigint", "event": "string", "ts_ms": "bigint", "group": "string",
                         "generation": "bigint"},
}


def _parquet_commits(df, kind: str):
    """A commit kind's file, or Fallback when its columns are not the commits' (the RDD job says more)."""
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    if any(types.get(n) != t for n, t in _PARQUET_COMMITS[kind].items()):
        raise Fallback(f"{FALLBACK_MARK} a {kind} file with other columns")
    return df


def _parquet_events(files):
    """Events of Parquet logs (:mod:`.eventfile`; ``files``: their kind_frames with paths), read from
    their columns (no text is parsed): (commits, others): the commits as (log, pos, kind, group, ts,
    client, member, gen), any other event in :data:`_EVENT_COLUMNS`. A commit with a null field (or
    of another schema version) is an other event (the model then hands the log to the RDD job). (SQL
    text: one call to the JVM per column, where Column objects built field by field took 17,000
    calls and 2 s for one log.)"""
    commits, others = [], []
    for kind, df, paths in files:
        value, general = eventfile.to_json(df), eventfile.general(df, _event_schema())
        ok = "true"
        if kind in COMMITS:
            df = _parquet_commits(df, kind)
            client = kind == "client.committed"
            if eventfile.vouched(kind, paths):    # (the footers say it: no row to check, 2x less CPU)
                ok = "true"
            else:
                ok = " AND ".join([f"v = 1 AND event = '{kind}'"] + [f"{eventfile.q(n)} IS NOT NULL"
                                                                     for n in eventfile.REQUIRED[kind]])
                if client:
                    ok += (" AND forall(offsets, o -> o.topic IS NOT NULL AND o.partition IS NOT NULL"
                           " AND o.offset IS NOT NULL)")
            commits.append(df.where(ok).selectExpr(
                "log", f"{eventfile.POS} AS pos", f"'{kind}' AS kind", "`group`", "ts_ms AS ts",
                "client" if client else "cast(null AS string) AS client",
                "member" if client else "cast(null AS string) AS member", "generation AS gen"))
            if ok == "true":
                continue
            ok = f"NOT coalesce({ok}, false)"     # (a null in a row: not a commit, to be checked)
        others.append(df.where(ok).selectExpr(
            "log", f"{eventfile.POS} AS pos", "0 AS form", f"{value} AS value", f"{general} AS general",
            "cast(null AS string) AS c_group", "cast(null AS bigint) AS c_ts", "cast(null AS string) AS c_client",
            "cast(null AS string) AS c_member", "cast(null AS bigint) AS c_gen"))
    return commits, others


def _kept(spark, sources, shape, files):
    """``commits_kept``: per group, the offsets checked and gone backwards, and the first cases
    (``files``: the Parquet logs' :func:`.eventfile.kind_frames`)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    L = T.LongType()
    # commits_kept: each partition's offsets in time order (the lines of the run above vouch for
    # the commit lines: one that fails them sends everything to the RDD job)
    text = [s for s in sources if not eventfile.is_parquet(s)]
    frames = [_text_offsets(spark, text)] if text else []
    read, by_file = _kept_by_file(spark, sources)
    commits = [_parquet_commits(df, kind).selectExpr("log", "`group`", "ts_ms AS ts", f"{eventfile.POS} AS pos",
                                                     "client", "offsets")
               for kind, df, paths in files if kind == "client.committed" and not set(paths) <= read]
    if commits:         # (the files' commits together, then their offsets: a plan the files' number does not grow)
        frames.append(eventfile.union(commits).selectExpr("log", "`group`", "ts", "pos", "client",
                                                          "posexplode(offsets) AS (idx, o)")
                      .selectExpr("log", "`group`", "ts", "pos", "client", "idx", "o.topic AS topic",
                                  "o.partition AS part", "o.offset AS off"))
    if not frames:
        return None if by_file is None else shape(by_file, kind=F.lit("kept"))
    c = eventfile.union(frames)
    # the window keyed by each log's number, not its name: a long compares in one step where names
    # (paths of one prefix) were compared whole at each step of the sort (bench/README.md)
    names = [eventfile.sql_string(n) for n in sorted({s.log for s in sources})]
    to_number = "map(" + ", ".join(f"{n}, {i}" for i, n in enumerate(names)) + ")"
    to_name = "map(" + ", ".join(f"{i}, {n}" for i, n in enumerate(names)) + ")"
    c = c.selectExpr(f"element_at({to_number}, log) AS log_n", "`group`", "ts", "pos", "idx", "topic", "part", "off",
                     "client")
    wp = Window.partitionBy("log_n", "group", "topic", "part").orderBy("ts", "pos", "idx")
    kept = c.select("*", F.lag("off").over(wp).alias("prev_off"), F.lag("client").over(wp).alias("prev_client"),
                    F.lag("ts").over(wp).alias("prev_ts"))
    fail = F.col("prev_off").isNotNull() & (F.col("off") < F.col("prev_off"))
    # the first counterexamples ride along as JSON in the group's row (one pass over the commits)
    example = F.struct("ts", "pos", "idx", "topic", "part", "off", "client", "prev_off", "prev_client", "prev_ts")
    stats = kept.groupBy("log_n", "group").agg(
        F.count(F.lit(1)).alias("n"), F.sum(fail.cast(L)).alias("gen"),
        F.to_json(F.slice(F.sort_array(F.collect_list(F.when(fail, example))), 1, MAX_COUNTEREXAMPLES)).alias("value"))
    stats = stats.selectExpr(f"element_at({to_name}, log_n) AS log", "`group`", "n", "gen", "value")
    return shape(stats if by_file is None else stats.unionAll(by_file), kind=F.lit("kept"))


def _kept_by_file(spark, sources):
    """``commits_kept`` of the Parquet logs whose client commits are one local file the footers
    vouch for, each file checked by a Spark task that reads it itself (pyarrow, numpy): no row
    crosses from the JVM to Python, nor goes through a shuffle and a sort (bench/README.md).
    Returns (the files so checked, their (log, group, n, gen, value) rows or None)."""
    from pyspark.sql import types as T
    logs: dict[str, list] = {}
    for s in sources:
        if not eventfile.is_parquet(s) or storage.is_uri(s.events_path):
            continue
        paths = [p for kind, p in eventfile.kind_files(s.events_path) if kind == "client.committed"]
        if len(paths) == 1 and eventfile.vouched("client.committed", paths):
            logs.setdefault(paths[0], []).append(s.log)
    if not logs:
        return set(), None
    files = sorted(logs)
    results = spark.sparkContext.parallelize(files, len(files)).map(kept_of_file).collect()
    rows = [(log, group, n, back, value) for path, result in zip(files, results) if result is not None
            for log in logs[path] for group, n, back, value in result]
    read = {path for path, result in zip(files, results) if result is not None}
    S, L = T.StringType(), T.LongType()
    schema = T.StructType([T.StructField(n, t, True) for n, t in (
        ("log", S), ("group", S), ("n", L), ("gen", L), ("value", S))])
    return read, spark.createDataFrame(rows, schema) if read else None


def kept_of_file(path: str, batch_rows: int = 1 << 20):
    """``commits_kept`` of one client.committed file: [(group, offsets checked, offsets gone back,
    the first cases as JSON)], each partition's offsets taken in the file's order; or None when the
    file's rows are not in time order, or it cannot be read so (the window then takes it). The
    cases are those of the window's JSON, with the same fields (:func:`_kept`)."""
    try:
        return _kept_of_file(path, batch_rows)
    except Exception:           # (whatever this file holds, the window's reading of it stands)
        return None


def _kept_of_file(path: str, batch_rows: int):
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    f = pq.ParquetFile(path)
    counts: dict[str, list] = {}        # group -> [offsets checked, gone back, the first cases]
    last: dict = {}                     # (group, topic, partition) -> (offset, row in the file): the batches before
    base, prev_ts, prev_pos = 0, -1, -1
    for batch in f.iter_batches(batch_size=batch_rows, columns=["group", "ts_ms", eventfile.POS, "offsets"]):
        if not batch.num_rows:
            continue
        if batch.column(1).null_count or batch.column(2).null_count:
            return None
        ts, pos = batch.column(1).to_numpy(), batch.column(2).to_numpy()
        if ts[0] < prev_ts or pos[0] <= prev_pos or (np.diff(ts) < 0).any() or (np.diff(pos) <= 0).any():
            return None
        prev_ts, prev_pos = ts[-1], pos[-1]
        offsets = batch.column(3)
        per_row = pc.list_value_length(offsets).to_numpy()
        flat = offsets.flatten()
        if not len(flat):
            base += len(ts)
            continue
        groups, topics = batch.column(0).dictionary_encode(), flat.field("topic").dictionary_encode()
        gnames, tnames = groups.dictionary.to_pylist(), topics.dictionary.to_pylist()
        part, off = flat.field("partition").to_numpy(), flat.field("offset").to_numpy()
        row = np.repeat(np.arange(len(ts)), per_row)
        idx = np.arange(len(off)) - np.repeat(np.cumsum(per_row) - per_row, per_row)
        g, t = groups.indices.to_numpy()[row], topics.indices.to_numpy()
        for i, n in enumerate(np.bincount(g, minlength=len(gnames)).tolist()):
            if n:
                counts.setdefault(gnames[i], [0, 0, []])[0] += n
        # by (group, topic, partition), a stable sort: the file's order kept within each (its rows
        # in time order, a row's offsets in theirs: the window's order)
        order = np.lexsort((part, t, g))
        gs, ts_, ps, o = g[order], t[order], part[order], off[order]
        same = (gs[1:] == gs[:-1]) & (ts_[1:] == ts_[:-1]) & (ps[1:] == ps[:-1])
        found = [(order[j], base + int(row[order[j - 1]]), int(o[j - 1]))
                 for j in (np.flatnonzero(same & (o[1:] < o[:-1])) + 1).tolist()]
        firsts = np.flatnonzero(np.r_[True, ~same])
        for a, z in zip(firsts.tolist(), np.r_[firsts[1:] - 1, len(o) - 1].tolist()):
            i, z = order[a], order[z]       # each partition's first offset here against the batches' before
            tp = (gnames[g[i]], tnames[t[i]], int(part[i]))
            before = last.get(tp)
            if before is not None and off[i] < before[0]:
                found.append((i, before[1], before[0]))
            last[tp] = (int(off[z]), base + int(row[z]))
        # the first cases of each group (a later batch's come after an earlier one's: its rows are later)
        for i, prev_row, prev_off in sorted(found, key=lambda c: (row[c[0]], idx[c[0]])):
            group = counts[gnames[g[i]]]
            group[1] += 1
            if len(group[2]) < MAX_COUNTEREXAMPLES:
                r = int(row[i])
                group[2].append({"ts": int(ts[r]), "pos": int(pos[r]), "idx": int(idx[i]), "topic": tnames[t[i]],
                                 "part": int(part[i]), "off": int(off[i]), "client": base + r,
                                 "prev_off": prev_off, "prev_client": prev_row, "prev_ts": prev_row})
        base += len(ts)
    if any(c[2] for c in counts.values()):      # the cases' clients and times, by their rows
        rows = f.read(columns=["client", "ts_ms"])
        client, at = rows.column(0), rows.column(1)
        for _, _, cases in counts.values():
            for x in cases:
                x["client"], x["prev_client"], x["prev_ts"] = (
                    client[x["client"]].as_py(), client[x["prev_client"]].as_py(), at[x["prev_ts"]].as_py())
    return [(group, n, back, json.dumps(cases)) for group, (n, back, cases) in counts.items()]


def _text_offsets(spark, sources):
    """(log, group, ts, pos, client, idx, topic, part, off) of each offset of the client commit lines."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    L = T.LongType()
    v = F.col("value")
    c = read_events(spark, sources).where(v.startswith(_CLIENT_PREFIX))
    cc = _cut(v, _CLIENT_FIELDS)
    # the entries cut at "],[" and "," (topic names have neither): 2.3x faster than from_json here
    entries = F.split(F.expr("substring(o, 3, length(o) - 3)"), r"\],\[")
    c = c.select("log", "pos", cc["group"].alias("group"), cc["ts"].try_cast(L).alias("ts"),
                 cc["client"].alias("client"), cc["offsets"].alias("o"))
    return (c.select("log", "group", "ts", "pos", "client", F.posexplode(entries).alias("idx", "o"))
            .select("log", "group", "ts", "pos", "client", "idx", F.split("o", ",").alias("o"))
            .select("log", "group", "ts", "pos", "client", "idx", F.expr("substring(o[0], 2, length(o[0]) - 2)").alias("topic"),
                    F.col("o")[1].try_cast(L).alias("part"), F.col("o")[2].try_cast(L).alias("off")))


def _group_rows(key, pdf, metas):
    """The model over one group's rows (a pandas frame): every table's rows as (tag, JSON)."""
    import pandas as pd

    from .job import event_problem
    log, group = key
    meta = metas[log]
    head = {"log": log, "cell": meta["cell"], "scenario": meta["scenario"], "seed": meta["seed"]}
    if group is None:             # producers' and transactions' events (counted in the JVM), or a line to check
        if not (pdf["kind"] == "ungrouped").all():
            raise Fallback(f"{FALLBACK_MARK} an event without a group")
        return pd.DataFrame([("ungrouped", json.dumps({**head, "events": int(pdf["n"].sum())}))],
                            columns=["tag", "payload"])
    pdf = pdf.sort_values(["ts", "pos"], kind="stable")
    parquet = meta["format"] == "parquet"
    events, kept_checked, kept_failed, kept_examples = [], 0, 0, []
    lines, runs = [], []          # ((ts, pos), event)
    records = None                # the group's record events, as one event (RECORDS_RUN)
    for r in pdf.itertuples(index=False):
        kind = r.kind
        if kind == "line":
            try:
                ev = json.loads(r.value)
            except (json.JSONDecodeError, TypeError):
                raise Fallback(f"{FALLBACK_MARK} not JSON") from None
            if parquet:
                ev = untuple(ev)
            if event_problem(ev) or ev["event"] in COMMITS:
                raise Fallback(f"{FALLBACK_MARK} a line to check")
            if ev["event"] in RECORD_EVENTS:      # one the JVM did not vouch for: counted the same
                records = _more_records(records, events, int(r.ts), int(r.ts), 1)
                continue
            lines.append(((int(r.ts), int(r.pos)), ev))
            events.append(ev)
        elif kind == RECORDS_RUN:
            records = _more_records(records, events, int(r.ts), int(r.last_ts), int(r.n))
        elif kind == "kept":
            kept_checked, kept_failed = int(r.n), int(r.gen)
            for x in json.loads(r.value):
                kept_examples.append({
                    "group": group, "invariant": "commits_kept", "ts_ms": x["ts"],
                    "detail": {"partition": [x["topic"], x["part"]], "offset": x["off"], "client": x["client"],
                               "acknowledged_before": x["prev_off"], "by": x["prev_client"], "at_ms": x["prev_ts"]}})
        else:
            ev = {"event": kind, "ts_ms": int(r.ts), "group": group, "generation": _int(r.gen),
                  RUN: int(r.n), RUN_LAST_TS: int(r.last_ts)}
            if kind == "client.committed":
                ev["client"], ev["member"] = r.client, r.member
            runs.append(((int(r.ts), int(r.pos)), (int(r.last_ts), int(r.last_pos)), ev))
            events.append(ev)
    _check_runs(lines, runs)
    resets = [at for at, ev in lines if ev["event"] in RESETS]
    if resets and kept_failed:
        raise Fallback(f"{FALLBACK_MARK} offsets reset in a group whose commits went backwards")
    try:
        result = analyze_group(group, events, group_partitions(meta["scenario_doc"], group), meta["start_ms"])
    except RunOutOfOrder:
        raise Fallback(f"{FALLBACK_MARK} a run of commits to take commit by commit") from None
    inv = result["invariants"]
    inv["checked"]["commits_kept"] += kept_checked
    inv["failed"]["commits_kept"] += kept_failed
    if inv["status"]["commits_kept"] != "skipped":
        inv["status"]["commits_kept"] = "fail" if inv["failed"]["commits_kept"] else "pass"
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
    for ex in inv["examples"] + kept_examples:
        add("violations", {"group": group, "invariant": ex["invariant"], "ts_ms": ex["ts_ms"],
                           "detail": json.dumps(ex["detail"], sort_keys=True)})
    for row in result["timeline"]:
        add("timeline", row)
    return pd.DataFrame(out, columns=["tag", "payload"])


def _more_records(records, events: list, first_ts: int, last_ts: int, n: int) -> dict:
    """The group's one RECORDS_RUN event (made and put among the events at its first), with n more
    record events from first_ts to last_ts."""
    if records is None:
        records = {"event": RECORDS_RUN, "ts_ms": first_ts, RUN: 0, RUN_LAST_TS: last_ts}
        events.append(records)
    records[RUN] += n
    records["ts_ms"] = min(records["ts_ms"], first_ts)
    records[RUN_LAST_TS] = max(records[RUN_LAST_TS], last_ts)
    return records


def _check_runs(lines, runs) -> None:
    """A run stands for its commits only if no other event among them could tell: none of its
    client's own events that start or stop it or change its member or generation falls among a
    client's commits, no coordinator event of another generation among the coordinator's, no group
    deletion among either, and the runs of one stream do not interleave. Else: Fallback (the RDD
    job takes the commits one by one)."""
    import bisect
    keys = [at for at, _ in lines]
    ends = {}       # stream (client, or None: the coordinator) -> where its previous run ended
    for first, last, run in sorted(runs, key=lambda r: r[0]):
        client = run.get("client")
        if ends.get(client, first) > first:        # runs of one stream that interleave (A B A)
            raise Fallback(f"{FALLBACK_MARK} runs of commits of one stream that interleave")
        ends[client] = last
        for _, ev in lines[bisect.bisect_left(keys, first):bisect.bisect_right(keys, last)]:
            kind = ev["event"]
            if kind == "group.deleted":
                clash = True
            elif client is not None:      # its own events, unless they keep its session, member and generation
                gen = ev.get("generation")
                clash = kind.startswith("client.") and ev.get("client") == client and (
                    kind in ("client.started", "client.stopped") or ev.get("member") not in ("", None, run["member"])
                    or (gen is not None and gen >= 0 and gen != run["generation"]))
            else:
                clash = not kind.startswith("client.") and ev.get("generation") not in (None, run["generation"])
            if clash:
                raise Fallback(f"{FALLBACK_MARK} an event among a run of commits that sees their order")


def _int(v):
    return None if v is None or v != v else int(v)   # NaN: a null in a pandas column


def model_output(spark, sources):
    """(tag, payload) rows of every table, computed in one Spark job and kept (persisted)."""
    from pyspark.storagelevel import StorageLevel
    metas = {s.log: {"cell": s.cell, "scenario": s.scenario_name, "seed": s.seed, "scenario_doc": s.scenario,
                     "start_ms": s.start_ms, "format": s.format} for s in sources}
    rows = (model_input(spark, sources).groupBy("log", "group")
            .applyInPandas(lambda key, pdf: _group_rows(key, pdf, metas), "tag string, payload string"))
    return rows.persist(StorageLevel.MEMORY_AND_DISK)


def table(rows, name, fields):
    """One table from the tagged rows, with the RDD job's schema and column order."""
    from pyspark.sql import functions as F

    from .job import struct_type
    return (rows.where(F.col("tag") == name).select(F.from_json("payload", struct_type(fields)).alias("r"))
            .select(*[F.col("r")[n].alias(n) for n, _ in fields]))


def input_bytes(spark, sources) -> tuple[int, int]:
    """The logs' sizes in bytes: (JSON lines, Parquet)."""
    from . import storage

    def size(path):
        return storage.HadoopFs(spark, path).size() if storage.is_uri(path) else os.path.getsize(path)
    text = parquet = 0
    for s in sources:
        if eventfile.is_parquet(s):
            parquet += sum(size(p) for _, p in eventfile.kind_files(s.events_path, spark))
        else:
            text += size(s.events_path)
    return text, parquet


def split_size(sources, parallelism: int, sizes: tuple[int, int]) -> int:
    """Bytes per input split: each core gets two or more splits of a big log (at least 4 MiB).
    ``sizes``: the logs' (:func:`input_bytes`)."""
    text, parquet = sizes
    # (Parquet: 20x smaller than the text, hence the lower floor)
    return max(1 << 20 if any(eventfile.is_parquet(s) for s in sources) else 4 << 20,
               (text + parquet) // max(1, 2 * parallelism) + 1)
