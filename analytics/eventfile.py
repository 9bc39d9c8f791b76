"""Reading the typed event log, ``DIR/events/`` (Parquet, one file per event kind; the writer is
``groupcoord.sim.eventfile``, whose docstring describes the format): the kinds' files, the events as
dicts or JSON lines (exactly the lines events.jsonl would hold), and the Spark views the analysis
reads (:mod:`.pipeline`, :mod:`.share`, the RDD job).

The Parquet schema tells how each field is stored: a ``list<struct>`` is a list of tuples (the
struct's fields are the positions), a ``struct<json: string>`` a value as JSON text, any other
column the value itself.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

EVENTS_DIR = "events"
POS = "_pos"
_KIND = re.compile(r"^(.*?)(~\d+)?\.parquet$")


def is_events_dir(path: Path) -> bool:
    return path.is_dir() and any(path.glob("*.parquet"))


def kind_of(file_name: str) -> str:
    """The event kind of one of the log's files (``client.committed~2.parquet``: client.committed)."""
    m = _KIND.match(file_name)
    return m.group(1) if m else file_name


def kind_files(events_path: str, spark=None) -> list[tuple[str, str]]:
    """(kind, path) of each file of a log's events directory (a path, or a URI through ``spark``)."""
    from . import storage
    if storage.is_uri(events_path):
        names = storage.HadoopFs(spark, events_path).list()
        return sorted((kind_of(n), storage.join(events_path, n)) for n in names if n.endswith(".parquet"))
    return sorted((kind_of(p.name), str(p)) for p in Path(events_path).glob("*.parquet"))


# ---------------------------------------------------------------- values
def _decoder(arrow_type):
    """value -> the event's value, for a column of this Arrow type (None: the value as it is)."""
    import pyarrow as pa
    if pa.types.is_struct(arrow_type) and [f.name for f in arrow_type] == ["json"]:
        return lambda v: None if v is None else json.loads(v["json"])
    if pa.types.is_list(arrow_type) and pa.types.is_struct(arrow_type.value_type):
        return lambda v: None if v is None else [list(t.values()) for t in v]
    return None


def read_events(events_path) -> list[dict]:
    """Every event of a local events directory, in the log's order (pyarrow, in this process)."""
    import pyarrow.parquet as pq
    positioned = []
    for _, path in kind_files(str(events_path)):
        table = pq.read_table(path)
        names = [n for n in table.column_names if n != POS]
        columns = []
        for n in names:
            values = table.column(n).to_pylist()
            decode = _decoder(table.schema.field(n).type)
            columns.append(values if decode is None else [decode(v) for v in values])
        for pos, row in zip(table.column(POS).to_pylist(), zip(*columns)):
            positioned.append((pos, dict(zip(names, row))))
    positioned.sort(key=lambda p: p[0])
    return [e for _, e in positioned]


def first_event(events_path) -> dict | None:
    """The log's first event (the first row of each file read, with pyarrow), or None: no events."""
    import pyarrow.parquet as pq
    first = None
    for _, path in kind_files(str(events_path)):
        batch = next(pq.ParquetFile(path).iter_batches(batch_size=1), None)
        if batch is None or not batch.num_rows:
            continue
        row = batch.to_pylist()[0]
        if first is None or row[POS] < first[0]:
            names = [n for n in batch.schema.names if n != POS]
            event = {}
            for n in names:
                decode = _decoder(batch.schema.field(n).type)
                event[n] = row[n] if decode is None else decode(row[n])
            first = (row[POS], event)
    return None if first is None else first[1]


def json_lines(events_path):
    """The log as the JSON lines of events.jsonl (the same bytes, line by line, with their newlines)."""
    for e in read_events(events_path):
        yield json.dumps(e, separators=(",", ":")) + "\n"


def untuple(ev: dict) -> dict:
    """An event from Spark's ``to_json`` of its columns (:func:`json_frame` with ``tuples="objects"``):
    tuples back to lists, JSON-text values back to values."""
    for k, v in ev.items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            ev[k] = [list(t.values()) for t in v]
        elif isinstance(v, dict):
            ev[k] = json.loads(v["json"])
    return ev


# ---------------------------------------------------------------- Spark
def is_parquet(source) -> bool:
    """Whether a LogSource's events are this format (else JSON lines)."""
    return getattr(source, "format", "jsonl") == "parquet"


def q(name: str) -> str:
    """A column name quoted for Spark SQL."""
    return "`" + name.replace("`", "``") + "`"


# (the expressions below are SQL text: one call to the JVM each, where Column objects built
# field by field took 17,000 calls and 2 s of planning for one log's 16 files)
def to_json(df) -> str:
    """SQL: the event of each row of one file as JSON (Spark's ``to_json``; nulls kept), its tuples
    as objects: :func:`untuple` makes them lists again."""
    fields = ", ".join(q(n) for n in df.columns if n not in (POS, "log"))
    return f"to_json(struct({fields}), map('ignoreNullFields', 'false'))"


def general(df, schema) -> str:
    """SQL: a struct of ``schema``'s fields (string, long, or array of string arrays: tuples) from
    one file's columns, as ``from_json`` of its JSON line with that schema would give (null: a field
    the file does not have, or of another shape)."""
    from pyspark.sql import types as T
    have = {f.name: f.dataType for f in df.schema.fields}
    fields = []
    for f in schema.fields:
        t, target = have.get(f.name), f.dataType
        expr = f"cast(null as {target.simpleString()})"
        if t is not None and isinstance(target, T.ArrayType):
            if isinstance(t, T.ArrayType) and isinstance(t.elementType, T.StructType):
                items = ", ".join(f"cast(r.{q(x.name)} as string)" for x in t.elementType.fields)
                expr = f"transform({q(f.name)}, r -> array({items}))"
        elif t is not None and type(t) is type(target):
            expr = q(f.name)
        fields.append(f"'{f.name}', {expr}")
    return f"named_struct({', '.join(fields)})"


#: The kinds whose files are read one by one (their rows are most of a log: naming each row's log
#: from its file path costs more than the planning of one scan per file)
BIG_KINDS = ("client.committed", "offset.committed")


def kind_frames(spark, sources, kinds=None, with_paths: bool = False):
    """[(kind, DataFrame)] (and the files read, ``with_paths``): the events of the Parquet logs among
    ``sources`` by kind (only ``kinds`` when given), each frame with ``log`` and the files' columns.
    The files of one kind and schema are read together, whatever the number of logs (one scan, one
    plan: a log's dozen small files each read on its own cost more than the events in them), but for
    :data:`BIG_KINDS`; a file given as two logs gives its rows twice."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    from . import storage
    groups: dict = {}         # (kind, schema) -> (Spark schema or None, {path: [log, ...]})
    for s in sources:
        for kind, path in kind_files(s.events_path, spark):
            if kinds is not None and kind not in kinds:
                continue
            if storage.is_uri(path):          # read on its own, its schema found by Spark
                key, schema = ("uri", path), None
            else:                             # the footer, read here: Spark does not infer the schema
                import pyarrow.parquet as pq
                schema = from_arrow_schema(pq.read_schema(path))
                key = ("local", schema.json(), path if kind in BIG_KINDS else None)
            groups.setdefault((kind, key), (schema, {}))[1].setdefault(path, []).append(s.log)
    frames = []
    for (kind, _), (schema, files) in groups.items():
        reader = spark.read if schema is None else spark.read.schema(schema)
        df = reader.parquet(*map(storage.literal, files))
        logs = _file_logs(df, files) if len(files) > 1 else None
        if "log" in df.columns:       # (a foreign writer's field: it would be taken for the log's name)
            from .pipeline import FALLBACK_MARK, Fallback
            raise Fallback(f"{FALLBACK_MARK} a {kind} file with a column named log")
        # (withColumn: a call to the JVM, where a select names every column, a call each)
        if logs is None:
            for path, names in files.items():
                one = df if len(files) == 1 else reader.parquet(storage.literal(path))
                for log in names:
                    frames.append((kind, one.withColumn("log", F.lit(log)), [path]))
        else:
            frames.append((kind, df.withColumn("log", F.explode(F.expr(
                f"element_at({logs}, regexp_replace(_metadata.file_path, '^file:/*', '/'))"))), list(files)))
    return frames if with_paths else [(kind, df) for kind, df, _ in frames]


def _file_logs(df, files: dict) -> str | None:
    """SQL: a map from each file's path (as ``_metadata.file_path`` gives it, "file:" taken off) to
    its logs, or None when Spark's names of the files are not recognised (the files then read one by one)."""
    from urllib.parse import unquote
    by_path = {str(Path(p).resolve()): logs for p, logs in files.items()}
    pairs = []
    names = df.inputFiles()
    for name in names:
        key = re.sub(r"^file:/*", "/", name)
        logs = by_path.get(unquote(key))
        if logs is None or not name.startswith("file:"):
            return None
        pairs += [sql_string(key), f"array({', '.join(sql_string(log) for log in logs)})"]
    if len(names) != len(files):
        return None
    return f"map({', '.join(pairs)})"


def sql_string(text: str) -> str:
    """SQL: the string text, as its UTF-8 bytes in hex (no quote or escape for the parser to read
    otherwise: spark.sql.parser.escapedStringLiterals, ${...} substitution)."""
    return f"decode(unhex('{text.encode('utf-8').hex()}'), 'UTF-8')"


#: The columns a commit kind's events must all hold (no null) to be taken as commits.
REQUIRED = {"client.committed": ("ts_ms", "group", "generation", "client", "member"),
            "offset.committed": ("ts_ms", "group", "generation")}


def vouched(kind: str, paths) -> bool:
    """Whether the footers of these files of a commit kind (local files) show that every row is a
    well-formed commit: ``v`` 1 and ``event`` the kind in every row group, no null in the
    :data:`REQUIRED` columns, and the offsets' tuples declared without nulls. The pipeline then
    checks none of their rows (else it checks each)."""
    import pyarrow.parquet as pq

    from . import storage
    for path in paths:
        if storage.is_uri(path):
            return False
        meta = pq.ParquetFile(path).metadata
        schema = meta.schema.to_arrow_schema()
        if kind == "client.committed":
            offsets = schema.field("offsets").type if "offsets" in schema.names else None
            if offsets is None or any(f.nullable for f in offsets.value_type):
                return False
        index = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
        if not all(n in index for n in ("v", "event", *REQUIRED[kind])):
            return False
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)

            def stats(name):
                st = rg.column(index[name]).statistics
                return st if st is not None and st.has_min_max else None
            v, event = stats("v"), stats("event")
            if v is None or event is None or (v.min, v.max) != (1, 1) or (event.min, event.max) != (kind, kind):
                return False
            # no null anywhere (in the offsets' leaves, a null or an empty list counts as one too)
            leaves = [i for name, i in index.items() if name.startswith("offsets.")]
            for i in [index["v"], index["event"], *(index[n] for n in REQUIRED[kind]), *leaves]:
                st = rg.column(i).statistics
                if st is None or not st.has_null_count or st.null_count:
                    return False
    return True


def union(frames):
    if not frames:
        return None
    df = frames[0]
    for f in frames[1:]:
        df = df.unionAll(f)
    return df


def json_frame(spark, sources, kinds=None):
    """(log, pos, value) of the events of the Parquet logs among ``sources`` (only ``kinds`` when
    given), ``value`` the event as JSON by Spark's ``to_json``, its tuples as arrays of strings (what
    a text reader's schema of string arrays takes: :mod:`.share`); None without any such event."""
    frames = []
    for _, df in kind_frames(spark, sources, kinds=kinds):
        fields = []
        tuples = spark_decoders(df.schema)
        for f in df.schema.fields:
            if f.name in (POS, "log"):
                continue
            t = f.dataType
            if tuples.get(f.name) == "tuples":
                items = ", ".join(f"cast(r.{q(x.name)} as string)" for x in t.elementType.fields)
                fields.append(f"transform({q(f.name)}, r -> array({items})) AS {q(f.name)}")
            else:
                fields.append(q(f.name))
        frames.append(df.selectExpr("log", f"{POS} AS pos",
                                    f"to_json(struct({', '.join(fields)}), map('ignoreNullFields', 'false')) AS value"))
    return union(frames)


def keyed_lines(log: str, rows, decoders: dict):
    """The RDD job's ((log, group), (ts_ms, (0, line number), line)) of Spark Rows of one file,
    each rebuilt as its events.jsonl line. ``decoders``: field -> "tuples" | "json"."""
    for row in rows:
        d = row.asDict(recursive=True)
        pos = d.pop(POS)
        for k, how in decoders.items():
            v = d[k]
            if v is not None:
                d[k] = [list(t.values()) for t in v] if how == "tuples" else json.loads(v["json"])
        line = json.dumps(d, separators=(",", ":"))
        group, ts = d.get("group"), d.get("ts_ms")
        if isinstance(group, str) and isinstance(ts, int):
            yield (log, group), (ts, (0, pos + 1), line)
        else:           # let the parser say what is wrong
            yield (log, None), (0, (0, pos + 1), line)


def spark_decoders(schema) -> dict:
    """field -> "tuples" | "json" of the columns of a Spark schema that hold encoded values."""
    from pyspark.sql import types as T
    out = {}
    for f in schema.fields:
        t = f.dataType
        if isinstance(t, T.ArrayType) and isinstance(t.elementType, T.StructType):
            out[f.name] = "tuples"
        elif isinstance(t, T.StructType) and [x.name for x in t.fields] == ["json"]:
            out[f.name] = "json"
    return out
