"""The Spark job: event logs in, Parquet tables out.

Each log file is read as text (blocks in file order), each line keyed by (log, group); the
lines of a group are gathered (``groupByKey``), sorted by time then position in the file, parsed
and analysed in Python (:func:`~groupcoord.analytics.model.analyze_group`), rebalances being sequential
per group. The per-scenario summary is computed with DataFrame aggregations. Tables (Parquet,
one directory each under OUT): ``rebalances``, ``sessions``, ``groups``, ``invariants``,
``violations``, ``summary``. A producer's events and the transaction coordinator's (no group)
are counted in the summary's ``events``. Work queues (:mod:`.share`, the same for both engines)
add ``deliveries``, ``consumers``, ``redeliveries``, ``archived`` and ``work``, and their
invariants' rows.

That is the "rdd" engine, which takes every line on its own. The default, "dataframe"
(:mod:`.pipeline`), computes the same tables with the per-line work in the JVM and hands a log it
cannot take to the RDD job (``analyze(engine=...)``, ``--engine`` or GROUPCOORD_ANALYTICS_ENGINE).
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import eventfile, storage
from .model import INVARIANTS, RECORD_EVENTS, analyze_group, group_partitions
from .share import ACK_TYPES, PRODUCER_EVENTS, TRANSACTION_PREFIX, WORK_INVARIANTS

EVENTS_FILE = "events.jsonl"
SCENARIO_FILE = "scenario.json"
_MARK = "groupcoord-analytics:"
LOCAL_JAVA_OPTIONS = "-XX:+UseSerialGC"
#: The driver's log4j2 configuration: errors only, on stderr. Spark's default profile (and its notes
#: on stderr: the profile, a loopback host name, the native Hadoop library, "Setting default log
#: level", taken for a shell's because of PySpark's gateway) would come before a command's result.
LOG4J2_PROPERTIES = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""
_log4j2_file: str | None = None


class LogError(ValueError):
    """A log that cannot be read: the message names the file (and line)."""


@dataclass
class LogSource:
    """One event log: a run of a scenario (or a coordinator's events file)."""
    log: str                  # unique name in this analysis
    events_path: str
    scenario: dict | None = None
    cell: str | None = None
    start_ms: int | None = None   # ts_ms of the log's first event (logs are written in time order)
    format: str = "jsonl"         # "jsonl" (events_path: a file) or "parquet" (a directory: :mod:`.eventfile`)

    @property
    def scenario_name(self) -> str | None:
        return (self.scenario or {}).get("name")

    @property
    def seed(self) -> int | None:
        seed = (self.scenario or {}).get("seed")
        return seed if isinstance(seed, int) else None


def find_logs(paths, cells=None, spark=None) -> list[LogSource]:
    """Each path: a directory holding events/ (Parquet) or events.jsonl (and scenario.json), or an events file (e.g.
    from ``groupcoord serve --events FILE``). ``cells``: a cell id per path (sweeps). A Hadoop
    filesystem URI (``hdfs://``...) is looked at through ``spark``'s Hadoop configuration."""
    sources: list[LogSource] = []
    used: set[str] = set()
    for i, raw in enumerate(paths):
        if storage.is_uri(raw):
            if spark is None:
                raise LogError(f"{raw}: a URI needs the Spark session (find_logs(..., spark=...))")
            events, scenario, name, start_ms, fmt = _find_uri_log(spark, str(raw))
        else:
            events, scenario, name = _find_local_log(Path(storage.local(raw)))
            fmt = "parquet" if events.is_dir() else "jsonl"
            start_ms = _check_first_parquet_event(events) if fmt == "parquet" else _check_first_event(events)
            events = str(events.resolve())
        cell = cells[i] if cells is not None else None
        log = cell or name
        base, n = log, 1
        while log in used:
            n += 1
            log = f"{base}-{n}"
        used.add(log)
        sources.append(LogSource(log, events, scenario, cell, start_ms, fmt))
    if not sources:
        raise LogError("no logs given")
    return sources


def _find_local_log(path: Path):
    """(events path, scenario, name): a log directory's events/ (Parquet, read first when both are
    there) or events.jsonl, or an events file."""
    if path.is_dir():
        events = path / eventfile.EVENTS_DIR
        if not eventfile.is_events_dir(events):
            events = path / EVENTS_FILE
        if not events.is_file() and not events.is_dir():
            raise LogError(f"{path}: no {EVENTS_FILE} or {eventfile.EVENTS_DIR}/ in this directory")
        scenario = None
        sc_path = path / SCENARIO_FILE
        if sc_path.is_file():
            scenario = _scenario(sc_path, sc_path.read_text(encoding="utf-8"))
        return events, scenario, path.resolve().name
    if path.is_file():
        return path, None, path.stem
    raise LogError(f"{path}: no such file or directory")


def _scenario(where, text: str) -> dict:
    try:
        scenario = json.loads(text)
    except json.JSONDecodeError as e:
        raise LogError(f"{where}: not valid JSON: {e}") from None
    if not isinstance(scenario, dict):
        raise LogError(f"{where}: expected a JSON object")
    return scenario


def _find_uri_log(spark, uri: str):
    """A log at a Hadoop filesystem URI: (events URI, scenario, name, start_ms)."""
    uri = uri.rstrip("/")
    try:
        fs = storage.HadoopFs(spark, uri)
        if not fs.exists():
            raise LogError(f"{uri}: no such file or directory")
        scenario, events_fs, events, name = None, fs, uri, uri.rsplit("/", 1)[-1]
        parquet = False
        if fs.is_dir():
            parquet = fs.exists(eventfile.EVENTS_DIR) and fs.is_dir(eventfile.EVENTS_DIR) and any(
                n.endswith(".parquet") for n in fs.list(eventfile.EVENTS_DIR))
            if not parquet and not fs.exists(EVENTS_FILE):
                raise LogError(f"{uri}: no {EVENTS_FILE} or {eventfile.EVENTS_DIR}/ in this directory")
            if fs.exists(SCENARIO_FILE):
                scenario = _scenario(f"{uri}/{SCENARIO_FILE}", fs.read_bytes(SCENARIO_FILE).decode("utf-8"))
            events = f"{uri}/{eventfile.EVENTS_DIR if parquet else EVENTS_FILE}"
            events_fs = storage.HadoopFs(spark, events)
        else:
            name = name.rsplit(".", 1)[0] if "." in name else name
        if parquet:
            return events, scenario, name, _first_parquet_event(spark, events), "parquet"
        head = events_fs.read_bytes(limit=1 << 20)
    except LogError:
        raise
    except Exception as e:   # py4j: the Hadoop exception's first line
        text = str(e).strip().splitlines()
        raise LogError(f"{uri}: cannot read it: {_java_line(text)}") from None
    return events, scenario, name, _first_event(events, head), "jsonl"


def _first_parquet_event(spark, events: str) -> int | None:
    """The ts_ms of a Parquet log's first event, read through Spark (a log at a URI)."""
    from pyspark.sql import functions as F
    firsts = [spark.read.parquet(storage.literal(path)).where(F.col(eventfile.POS) == 0).select("ts_ms")
              for _, path in eventfile.kind_files(events, spark)]
    rows = eventfile.union(firsts).collect() if firsts else []
    return rows[0]["ts_ms"] if rows else None


def _check_first_parquet_event(path: Path) -> int | None:
    """:func:`_check_first_event` of a Parquet log: its first event (position 0), read with pyarrow."""
    try:
        first = eventfile.first_event(path)
    except Exception as e:       # pyarrow: not Parquet, a column it cannot read
        raise LogError(f"{path}: not an event log ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") \
            from None
    if first is None:
        return None
    problem = event_problem(first)
    if problem:
        raise LogError(f"{path}: not an event log: {problem}")
    return first["ts_ms"]


def _java_line(lines) -> str:
    for line in lines:
        if "Exception" in line and ":" in line:
            return line.split(": ", 1)[-1] if line.startswith(("java.", "org.")) else line
    return lines[0] if lines else "unknown error"


def _first_event(where, head: bytes) -> int | None:
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 4:    # not just a character cut by the limit
            raise LogError(f"{where}: not an event log (not text)") from None
        text = head[:e.start].decode("utf-8")
    first = next((line for line in text.splitlines() if line.strip()), None)
    if first is None:
        return None
    return _check_event_line(where, first)


def _check_first_event(path: Path) -> int | None:
    """Look at the first line of an events file before Spark starts: a file that is not an event
    log (a scenario, a report...) is named at once. The Spark job checks every line. Returns the
    first event's ts_ms (None for an empty log)."""
    try:
        with open(path, encoding="utf-8") as f:
            first = next((line for line in f if line.strip()), None)
    except UnicodeDecodeError:
        raise LogError(f"{path}: not an event log (not text)") from None
    except OSError as e:
        raise LogError(f"{path}: cannot read it: {e.strerror}") from None
    if first is None:
        return None               # an empty log: no events
    return _check_event_line(path, first)


def _check_event_line(path, first: str) -> int:
    try:
        event = json.loads(first)
        problem = event_problem(event)
    except json.JSONDecodeError as e:
        problem = f"not valid JSON ({e.msg})"
    if problem:
        raise LogError(f"{path}:1: not an event log: {problem}")
    return event["ts_ms"]


def check_java() -> None:
    """PySpark's driver runs in a JVM: ``$JAVA_HOME/bin/java``, or ``java`` on PATH without
    JAVA_HOME (as Spark's launcher looks for it). Raise LogError in one line when there is none,
    before PySpark would fail with a page of output."""
    import shutil
    home = os.environ.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        if not (os.path.isfile(java) and os.access(java, os.X_OK)):
            raise LogError(f"the analysis runs on Spark, which needs Java 17 or newer: JAVA_HOME={home} "
                           f"has no bin/java (fix JAVA_HOME or unset it to use java on PATH)")
    else:
        java = shutil.which("java")
        if java is None:
            raise LogError("the analysis runs on Spark, which needs Java 17 or newer: no java on PATH "
                           "and JAVA_HOME is not set")
    major = java_version(java)
    if major is not None and major < JAVA_MIN:
        raise LogError(f"the analysis runs on Spark, which needs Java {JAVA_MIN} or newer: {java} is Java {major} "
                       f"(set JAVA_HOME to a Java {JAVA_MIN}+ installation)")


#: The oldest Java that PySpark 4 runs on.
JAVA_MIN = 17


def java_version(java: str) -> int | None:
    """The major version ``java -version`` prints (8 for "1.8.0_392", 17 for "17.0.15"), or None
    when it prints none (Spark then tries it, and a failure is still one line). A java that cannot
    be run at all (not an executable, a broken link) raises LogError."""
    import subprocess
    try:
        r = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        raise LogError(f"the analysis runs on Spark, which needs Java {JAVA_MIN} or newer: cannot run {java}: "
                       f"{getattr(e, 'strerror', None) or e}") from None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', r.stderr + r.stdout)
    if m is None:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def check_out(out) -> None:
    """Before Spark starts: OUT must be a directory or creatable as one (nothing is created here)."""
    path = Path(out)
    if path.exists():
        if not path.is_dir():
            raise LogError(f"--out {out}: exists and is not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise LogError(f"--out {out}: not writable")
        return
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise LogError(f"--out {out}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise LogError(f"--out {out}: cannot create it in {parent} (not writable)")


def spark_session(master: str | None = None, app: str = "groupcoord-analytics", conf: dict | None = None):
    """A SparkSession (the active one if there is one): local[2] by default, small shuffles, no
    UI, the driver logging errors only (:data:`LOG4J2_PROPERTIES`), and in local mode
    :data:`LOCAL_JAVA_OPTIONS` for the driver's JVM; ``conf``: more Spark settings. Workers run
    this interpreter (its path, on every node) unless PYSPARK_PYTHON or ``spark.pyspark.python`` in
    ``conf`` says otherwise. On a cluster the groupcoord package is shipped to the executors
    (:func:`storage.ship_code`)."""
    python = (conf or {}).get("spark.pyspark.python")
    if python:          # read by PySpark from the environment only, when not launched by spark-submit
        os.environ["PYSPARK_PYTHON"] = python
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise LogError("the analysis runs on PySpark, which is not installed: "
                       "run `make install-dev` in groupcoord's clone, or `pip install -e '.[analytics]'` there "
                       "(it needs Java 17 or newer)") from None
    active = SparkSession.getActiveSession()
    if active is not None and (master is None or active.sparkContext.master == master):
        storage.ship_code(active)
        return active
    check_java()
    builder = SparkSession.builder
    if (master or "local").startswith("local"):
        # the serial GC: one process on two cores (the quick JIT tier alone, tried too, made the
        # JVM-side parsing slower and the tests no faster: bench/README.md)
        builder = builder.config("spark.driver.extraJavaOptions", LOCAL_JAVA_OPTIONS)
        # everything stays in this process: on loopback, whatever the host name resolves to
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
    builder = (builder.appName(app).master(master or "local[2]")
               # the driver's JVM options before any of spark.driver.extraJavaOptions
               .config("spark.driver.defaultJavaOptions", f"-Dlog4j2.configurationFile={log4j2_config()}")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.log.level", "FATAL")
               .config("spark.sql.adaptive.enabled", "false")
               .config("spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version", "2")
               .config("spark.sql.parquet.summary.metadata.level", "NONE"))
    for key, value in (conf or {}).items():     # last: --conf overrides the defaults above
        builder = builder.config(key, value)
    from pyspark.errors import PySparkRuntimeError
    try:
        spark = builder.getOrCreate()
    except PySparkRuntimeError as e:      # e.g. JAVA_GATEWAY_EXITED: a java that does not start
        raise LogError(f"Spark did not start (its JVM, {_java_named()}, failed): "
                       f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    spark.sparkContext.setLogLevel("FATAL")
    storage.ship_code(spark)         # on a cluster: executors get groupcoord from the driver
    return spark


def log4j2_config() -> str:
    """The URI of a file of this process holding :data:`LOG4J2_PROPERTIES` (log4j2 reads its
    configuration from a file or URL), written once and removed when the process exits."""
    global _log4j2_file
    if _log4j2_file is None or not os.path.exists(_log4j2_file):
        import atexit
        import tempfile
        fd, path = tempfile.mkstemp(prefix="groupcoord-log4j2-", suffix=".properties")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(LOG4J2_PROPERTIES)
        atexit.register(lambda: Path(path).unlink(missing_ok=True))
        _log4j2_file = path
    return Path(_log4j2_file).as_uri()


def _java_named() -> str:
    home = os.environ.get("JAVA_HOME")
    return os.path.join(home, "bin", "java") if home else "java on PATH"


# ---------------------------------------------------------------- tables
def _schemas():
    from pyspark.sql import types as T
    S, L, I, B = T.StringType(), T.LongType(), T.IntegerType(), T.BooleanType()
    meta = [("log", S), ("cell", S), ("scenario", S), ("seed", L)]
    return {
        "rebalances": meta + [("group", S), ("generation", L), ("trigger", S), ("trigger_member", S),
                              ("client_reason", S), ("start_ms", L), ("start_ms_from_log_start", L),
                              ("end_ms", L), ("duration_ms", L),
                              ("rounds", I), ("outcome", S), ("protocol", S), ("members", I),
                              ("member_events", B), ("settled", B), ("settle_ms", L),
                              ("partitions_moved", I), ("min_moves", I), ("partitions_revoked", I),
                              ("partitions_lost", I), ("member_idle_ms", T.MapType(S, L)),
                              ("max_member_idle_ms", L), ("unowned_partition_ms", L), ("balance", I)],
        "sessions": meta + [("group", S), ("source", S), ("client", S), ("member", S),
                            ("member_ids", T.ArrayType(S)), ("instance_id", S), ("strategy", S),
                            ("protocol", S), ("start_ms", L), ("end_ms", L), ("duration_ms", L),
                            ("end_reason", S), ("generations", I), ("assignments", I),
                            ("partitions_assigned", I), ("partitions_revoked", I), ("partitions_lost", I),
                            ("commits", I), ("max_owned", I), ("time_without_partitions_ms", L)],
        "groups": meta + [("group", S), ("events", L), ("member_events", L), ("coordinator_events", L),
                          ("first_ms", L), ("last_ms", L), ("partitions", I), ("unowned_partition_ms", L),
                          ("rebalances", I), ("zombie_overlaps", L)],
        "invariants": meta + [("group", S), ("invariant", S), ("status", S), ("checked", L), ("failed", L)],
        "violations": meta + [("group", S), ("invariant", S), ("ts_ms", L), ("detail", S)],
        "logs": meta + [("path", S)],
    }


def struct_type(fields):
    """The Spark StructType of a table's ``(name, type)`` fields (:func:`_schemas`), all nullable."""
    from pyspark.sql import types as T
    return T.StructType([T.StructField(n, t, True) for n, t in fields])


# ---------------------------------------------------------------- worker side
_GROUP = re.compile(r'"group"\s*:\s*"((?:[^"\\]|\\.)*)"')
_TS = re.compile(r'"ts_ms"\s*:\s*(-?\d+)')


def _keyed_lines(log: str, block: int, lines):
    """((log, group), (ts_ms, (block, line), text)) per line of one block of a log file, in order.
    Only the group and the time are picked out here; the line is parsed after grouping."""
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        g, t = _GROUP.search(line), _TS.search(line)
        if g is not None and t is not None:
            group = json.loads(f'"{g.group(1)}"') if "\\" in g.group(1) else g.group(1)
            yield (log, group), (int(t.group(1)), (block, n), line)
        else:   # let the parser say what is wrong
            yield (log, None), (0, (block, n), line)


def _parquet_keyed_lines(spark, source):
    """:func:`_keyed_lines` of a Parquet log: each event rebuilt as its JSON line (line numbers:
    its position in the log, from 1)."""
    rdds = []
    for _, path in eventfile.kind_files(source.events_path, spark):
        df = spark.read.parquet(storage.literal(path))
        decoders = eventfile.spark_decoders(df.schema)
        rdds.append(df.rdd.mapPartitions(lambda rows, d=decoders: eventfile.keyed_lines(source.log, rows, d)))
    return spark.sparkContext.union(rdds) if rdds else spark.sparkContext.emptyRDD()


def _events(path: str, values):
    """Parse and check a group's lines in time order (ties: order in the file)."""
    for _, (block, n), line in sorted(values, key=lambda v: (v[0], v[1])):
        where = f"{path}:{n}" if block == 0 else f"{path}: line {n} of block {block}"
        try:
            ev = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{_MARK} {where}: not valid JSON ({e.msg})") from None
        problem = event_problem(ev)
        if problem:
            raise ValueError(f"{_MARK} {where}: {problem}")
        yield ev


def event_problem(ev) -> str | None:
    """What keeps a parsed line from being an event this analyser reads (schema v1: an object
    with a type, an integer ts_ms, a group, and the fields the model reads well-formed), or None.
    Without a group: a producer's ``producer.produced`` and the transaction coordinator's
    ``transaction.*`` (with its ``transactional_id``), counted in the summary and read no further."""
    if not isinstance(ev, dict):
        return "expected a JSON object"
    kind = ev.get("event")
    if not isinstance(kind, str):
        return "no \"event\" type"
    if ev.get("v", 1) != 1:
        return f"{kind}: schema version {ev.get('v')!r} (this analyser reads version 1)"
    if not isinstance(ev.get("ts_ms"), int) or isinstance(ev.get("ts_ms"), bool):
        return f"{kind}: \"ts_ms\" must be an integer"
    group = ev.get("group")
    if not isinstance(group, str):
        if group is None and kind in PRODUCER_EVENTS:     # a producer's: no group
            if not isinstance(ev.get("producer"), str) or not isinstance(ev.get("topic"), str):
                return f"{kind}: \"producer\" and \"topic\" must be strings"
            if not all(_is_int(ev.get(k)) for k in ("partition", "first", "last")) or ev["first"] > ev["last"]:
                return f"{kind}: \"partition\", \"first\" <= \"last\" must be integers"
            return None
        if group is None and kind.startswith(TRANSACTION_PREFIX):     # the transaction coordinator's
            if not isinstance(ev.get("transactional_id"), str):
                return f"{kind}: \"transactional_id\" must be a string"
            return None
        return f"{kind}: \"group\" must be a string"
    if kind.startswith("client."):
        if not isinstance(ev.get("client"), str):
            return f"{kind}: \"client\" must be a string"
        for key in ("partitions", "owned"):
            if key in ev and not all(isinstance(tp, list) and len(tp) == 2 for tp in ev[key] or ()):
                return f"{kind}: \"{key}\" must be [[topic, partition], ...]"
        if kind == "client.committed" and not all(isinstance(o, list) and len(o) == 3
                                                  for o in ev.get("offsets") or ()):
            return f"{kind}: \"offsets\" must be [[topic, partition, offset], ...]"
        if kind in RECORD_EVENTS:
            return _records_problem(ev, kind)
    elif not isinstance(ev.get("generation"), int):
        return f"{kind}: \"generation\" must be an integer"
    return None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


#: The runs of a record event: their width and what the last field is ("dc": delivery count).
_RUNS = {"client.records_polled": (5, "dc"), "client.batch_processed": (4, None),
         "client.acknowledged": (5, "type")}


def _records_problem(ev, kind: str) -> str | None:
    """What is wrong with a record event's runs (and its other fields), or None."""
    width, last = _RUNS[kind]
    runs = ev.get("records")
    if not isinstance(runs, list) or not all(
            isinstance(r, list) and len(r) == width and isinstance(r[0], str)
            and all(_is_int(x) for x in r[1:4]) and r[2] <= r[3]
            and (last != "dc" or _is_int(r[4])) and (last != "type" or r[4] in ACK_TYPES) for r in runs):
        tail = {"dc": ", delivery_count", "type": ", type"}.get(last, "")
        return f"{kind}: \"records\" must be [[topic, partition, first, last{tail}], ...] with first <= last"
    if kind == "client.batch_processed" and not (_is_int(ev.get("started_ms")) and _is_int(ev.get("busy_ms"))):
        return f"{kind}: \"started_ms\" and \"busy_ms\" must be integers"
    if kind == "client.acknowledged" and not (ev.get("error") is None or isinstance(ev.get("error"), str)):
        return f"{kind}: \"error\" must be null or a string"
    return None


def _analyze(item, metas):
    (log, group), values = item
    meta = metas[log]
    events = _events(meta[4], values)
    head = (log, meta[1], meta[2], meta[5])
    if group is None:           # events without a group (producers', transactions'), or a line the parser raises on
        n, grouped = 0, False
        for ev in events:
            n += 1
            kind = ev["event"]
            grouped |= ev.get("group") is not None or not (kind in PRODUCER_EVENTS or kind.startswith(TRANSACTION_PREFIX))
        if grouped or not n:
            raise ValueError(f"{_MARK} {meta[4]}: an event without \"group\" or \"ts_ms\"")
        yield "ungrouped", head, {"events": n}
        return
    scenario = json.loads(meta[3]) if meta[3] else None
    result = analyze_group(group, events, group_partitions(scenario, group), meta[6])
    for row in result["rebalances"]:
        yield "rebalances", head, row
    for row in result["sessions"]:
        yield "sessions", head, row
    yield "groups", head, result["group"]
    inv = result["invariants"]
    for name in INVARIANTS:
        yield "invariants", head, {"group": group, "invariant": name, "status": inv["status"][name],
                                   "checked": inv["checked"][name], "failed": inv["failed"][name]}
    for ex in inv["examples"]:
        yield "violations", head, {"group": group, "invariant": ex["invariant"], "ts_ms": ex["ts_ms"],
                                   "detail": json.dumps(ex["detail"], sort_keys=True)}
    for row in result["timeline"]:
        yield "timeline", head, row


# ---------------------------------------------------------------- driver side
@dataclass
class Analysis:
    """What :func:`analyze` wrote and what the report needs (small tables collected)."""
    out: str
    tables: dict             # table name -> Parquet directory
    summary: list[dict]
    invariants: list[dict]   # per log and invariant: status, checked, failed
    violations: list[dict]
    rebalances: list[dict]   # a few columns of every rebalance (plots)
    timeline: list[dict]
    logs: list[dict]
    events: int
    seconds: float
    engine: str = "rdd"      # the engine that computed the tables (the RDD job when the pipeline handed over)
    work: list[dict] = field(default_factory=list)   # the work table's rows (work queues: :mod:`.share`)


#: How the tables are computed: "rdd" (lines keyed and grouped in Python, this module) or
#: "dataframe" (:mod:`.pipeline`: parsing, commits and commits_kept in the JVM, the model through
#: Arrow). ``analyze(engine=...)`` or the environment variable GROUPCOORD_ANALYTICS_ENGINE choose.
ENGINES = ("rdd", "dataframe")
DEFAULT_ENGINE = "dataframe"

#: An analysis of logs under this size in all (bytes of JSON lines, a Parquet log's bytes counted
#: 20 times: about the text it stands for) runs with Spark's expressions interpreted where Spark
#: can: compiling the plans' code costs small logs more than it saves (bench/README.md). A setting
#: the session has (--conf, spark-defaults, conf.set) is kept.
INTERPRETED_BELOW = 64 << 20
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


def analyze(sources: list[LogSource], out, spark=None, report: bool = True,
            cell_params: dict | None = None, engine: str | None = None) -> Analysis:
    """Analyse the logs with Spark, write the Parquet tables (and report.html) under ``out``."""
    t0 = time.perf_counter()
    engine = engine or os.environ.get("GROUPCOORD_ANALYTICS_ENGINE") or DEFAULT_ENGINE
    if engine not in ENGINES:
        raise LogError(f"unknown analytics engine {engine!r} (one of {', '.join(ENGINES)})")
    spark = spark or spark_session()
    out = storage.location(out)
    storage.check_shared(spark, out, [s.events_path for s in sources])   # a cluster: before the job
    if not storage.is_uri(out):
        Path(out).mkdir(parents=True, exist_ok=True)
    from . import pipeline
    sizes = pipeline.input_bytes(spark, sources)
    computed = None
    interpreted = sizes[0] + 20 * sizes[1] < INTERPRETED_BELOW
    with _session_settings(spark.conf, INTERPRETED if interpreted else {}):
        if engine == "dataframe":
            try:
                computed = _compute_dataframe(spark, sources, out, sizes)
            except pipeline.Fallback:
                computed = None
            except Exception as e:     # raised in a Python worker: the RDD job names the line
                if pipeline.FALLBACK_MARK not in str(e):
                    raise
        used = engine
        if computed is None:
            computed, used = _compute_rdd(spark, sources, out), "rdd"
    tables, summary, small = computed
    by_tag = {"invariants": [], "violations": [], "timeline": [], "rebalances": [], "work": []}
    for tag, row in small:
        by_tag[tag].append(row)
    analysis = Analysis(
        out=str(out), tables=tables, summary=sorted(summary, key=lambda r: r["log"]),
        invariants=_invariant_totals(by_tag["invariants"]),
        violations=sorted(by_tag["violations"], key=lambda r: (r["log"], r["group"], r["invariant"], r["ts_ms"])),
        rebalances=by_tag["rebalances"], timeline=by_tag["timeline"],
        logs=[{"log": s.log, "cell": s.cell, "scenario": s.scenario_name, "seed": s.seed,
               "path": s.events_path, "scenario_doc": s.scenario, "start_ms": s.start_ms} for s in sources],
        events=sum(r["events"] or 0 for r in summary), seconds=0.0, engine=used,
        work=sorted(by_tag["work"], key=lambda r: (r["log"], r["group"])))
    analysis.seconds = time.perf_counter() - t0
    if report:
        from .report import write_report
        write_report(analysis, cell_params=cell_params)
    return analysis


@contextlib.contextmanager
def _session_settings(conf, settings: dict):
    """The SQL settings in the session for a while, but for those it has (from --conf,
    spark-defaults or a conf.set): unset again after."""
    taken = [k for k in settings if conf.get(k, None) is None]
    try:
        for k in taken:
            conf.set(k, settings[k])
        yield
    except BaseException:
        with contextlib.suppress(Exception):     # (a JVM gone: the error to see is the first)
            for k in taken:
                conf.unset(k)
        raise
    for k in taken:
        conf.unset(k)


def _compute_dataframe(spark, sources, out: str, sizes: tuple[int, int]):
    """The tables by :mod:`.pipeline`: (tables, summary rows, small rows for the report).
    ``sizes``: the logs' (:func:`.pipeline.input_bytes`)."""
    from pyspark.sql import functions as F

    from . import pipeline
    schemas = _schemas()
    conf = spark.conf
    # from_json is parsed once per line: the JSON optimiser would give each field read from it its
    # own from_json with a one-field schema (a parse per field: 2.3x slower on hour-1000)
    parallelism = spark.sparkContext.defaultParallelism
    settings = {"spark.sql.files.maxPartitionBytes": str(pipeline.split_size(sources, parallelism, sizes)),
                "spark.sql.optimizer.enableJsonExpressionOptimization": "false"}
    saved = {k: conf.get(k) for k in settings}
    for k, v in settings.items():
        conf.set(k, v)
    rows, tables, frames, work = None, {}, {}, None
    try:
        rows = pipeline.model_output(spark, sources)
        for name in MODEL_TABLES:
            frames[name] = pipeline.table(rows, name, schemas[name])
        work = _work_queues(spark, sources, frames)
        for name in MODEL_TABLES:
            tables[name] = _write(frames[name], storage.join(out, name))
        ungrouped = {}
        for (payload,) in rows.where(F.col("tag") == "ungrouped").select("payload").collect():
            row = json.loads(payload)
            ungrouped[row["log"]] = ungrouped.get(row["log"], 0) + row["events"]
        small = _write_work(work, out, tables)
        logs_df = spark.createDataFrame([(s.log, s.cell, s.scenario_name, s.seed, s.events_path) for s in sources],
                                        struct_type(schemas["logs"]))
        tables["summary"], summary = _write_summary(frames, logs_df, out, ungrouped)
        for tag, payload in rows.where(F.col("tag").isin(*_REPORT_COLUMNS)).collect():
            row = json.loads(payload)
            small.append((tag, {"log": row["log"], "cell": row["cell"],
                                **{k: row.get(k) for k in _REPORT_COLUMNS[tag]}}))
    finally:
        if rows is not None:
            rows.unpersist()
        if work is not None:
            work.unpersist()
        for k, v in saved.items():
            conf.set(k, v)
    return tables, summary, small


def _compute_rdd(spark, sources, out: str):
    """The tables by the RDD job: (tables, summary rows, small rows for the report)."""
    sc = spark.sparkContext
    schemas = _schemas()
    metas = {}
    for s in sources:
        metas[s.log] = (s.log, s.cell, s.scenario_name, json.dumps(s.scenario) if s.scenario else None,
                        s.events_path, s.seed, s.start_ms)
    metas_b = sc.broadcast(metas)
    parts = max(sc.defaultParallelism, min(len(sources), 4 * sc.defaultParallelism))
    events = sc.union([_parquet_keyed_lines(spark, s) if s.format == "parquet" else
                       sc.textFile(storage.literal(s.events_path), minPartitions=1).mapPartitionsWithIndex(
                           lambda i, lines, log=s.log: _keyed_lines(log, i, lines)) for s in sources])
    rows = (events.groupByKey(parts)
            .flatMap(lambda item: _analyze(item, metas_b.value))
            .cache())
    tables, frames, work = {}, {}, None
    try:
        for name in MODEL_TABLES:
            fields = schemas[name]
            names = [n for n, _ in fields[4:]]
            part = rows.filter(lambda r, name=name: r[0] == name).map(
                lambda r, names=names: tuple(r[1]) + tuple(r[2].get(n) for n in names))
            frames[name] = spark.createDataFrame(part, struct_type(fields))
        work = _work_queues(spark, sources, frames)
        for name in MODEL_TABLES:
            tables[name] = _write(frames[name], storage.join(out, name))
        ungrouped = {}
        for head, row in rows.filter(lambda r: r[0] == "ungrouped").map(lambda r: (r[1], r[2])).collect():
            ungrouped[head[0]] = ungrouped.get(head[0], 0) + row["events"]
        small = _write_work(work, out, tables)
        logs_df = spark.createDataFrame([(s.log, s.cell, s.scenario_name, s.seed, s.events_path) for s in sources],
                                        struct_type(schemas["logs"]))
        tables["summary"], summary = _write_summary(frames, logs_df, out, ungrouped)
        small += rows.filter(lambda r: r[0] in ("invariants", "violations", "timeline", "rebalances")).map(
            _for_report).collect()
    except Exception as e:  # a bad log raises in a Spark task: surface its message
        text = str(e)
        if _MARK in text:
            line = text[text.index(_MARK) + len(_MARK):].splitlines()[0].strip()
            raise LogError(line) from None
        missing = _missing_input(text)
        if missing:
            raise LogError(missing) from None
        raise
    finally:
        if rows is not None:
            rows.unpersist()
        if work is not None:
            work.unpersist()
    return tables, summary, small


#: The tables the rebalance model gives (both engines), in the order they are written.
MODEL_TABLES = ("rebalances", "sessions", "groups", "invariants", "violations")


def _work_queues(spark, sources, frames):
    """The work-queue tables (:mod:`.share`), None without work queues; their invariants and
    counterexamples join the model's in ``frames`` (written once, counted by the summary)."""
    from .share import work_queues
    schemas = _schemas()
    work = work_queues(spark, sources, frames["groups"], schemas["logs"][:4])
    if work is not None:
        for name in ("invariants", "violations"):
            names = [n for n, _ in schemas[name]]
            rows = [tuple(r.get(n) for n in names) for r in getattr(work, name)]
            if rows:
                frames[name] = frames[name].unionByName(spark.createDataFrame(rows, struct_type(schemas[name])))
    return work


def _write_work(work, out: str, tables: dict) -> list:
    """Write the work-queue tables; their small rows for the report: the work table's, and the
    invariants and counterexamples of the work-queue groups."""
    if work is None:
        return []
    from .share import WORK_TABLES, schemas as work_schemas
    schemas = _schemas()
    fields = work_schemas(schemas["logs"][:4])
    for name in WORK_TABLES:
        tables[name] = _write(_conform(work.tables[name], fields[name]), storage.join(out, name))
    small = [("work", dict(r)) for r in work.work]
    for tag in ("invariants", "violations"):
        small += [(tag, {"log": r["log"], "cell": r.get("cell"), **{k: r.get(k) for k in _REPORT_COLUMNS[tag]}})
                  for r in getattr(work, tag)]
    return small


def _conform(df, fields):
    """``df`` with exactly the columns and types of a table's ``(name, type)`` fields."""
    from pyspark.sql import functions as F
    return df.select(*[F.col(n).cast(t).alias(n) for n, t in fields])


def _write_summary(frames, logs_df, out: str, ungrouped: dict | None = None):
    """The summary table written, and its rows (computed once: kept for the collect).
    ``ungrouped``: per log, its events without a group (producers', transactions'), counted in ``events``."""
    from pyspark.sql import functions as F
    summary_df = _summary(frames, logs_df, F)
    if ungrouped:
        columns = summary_df.columns
        extra = logs_df.sparkSession.createDataFrame(list(ungrouped.items()), "log string, ungrouped long")
        summary_df = (summary_df.join(F.broadcast(extra), "log", "left")
                      .withColumn("events", F.when(F.col("ungrouped").isNull(), F.col("events"))
                                  .otherwise(F.coalesce(F.col("events"), F.lit(0)) + F.col("ungrouped")))
                      .select(*columns).orderBy("log"))
    summary_df = summary_df.coalesce(1).cache()
    try:
        path = _write(summary_df, storage.join(out, "summary"))
        return path, [r.asDict() for r in summary_df.collect()]
    finally:
        summary_df.unpersist()


def _write(df, path) -> str:
    df.write.mode("overwrite").parquet(str(path))
    storage.check_written(df.sparkSession, str(path))   # on a cluster: not only _SUCCESS on the driver
    return str(path)


def _missing_input(text: str) -> str | None:
    """An input that a task could not open (a log only the driver sees): one line naming it."""
    m = re.search(r"FileNotFoundException: File (\S+) does not exist|Input path does not exist: (\S+)", text)
    if m is None:
        return None
    return (f"{m.group(1) or m.group(2)}: the executors cannot read it (the driver can): with a cluster, give logs "
            f"every node sees (a shared filesystem, hdfs://, s3a://)")


_REPORT_COLUMNS = {"rebalances": ("group", "start_ms", "start_ms_from_log_start", "duration_ms", "partitions_moved", "min_moves", "trigger"),
                   "invariants": ("group", "invariant", "status", "checked", "failed"),
                   "violations": ("group", "invariant", "ts_ms", "detail"),
                   "timeline": ("group", "ts_ms", "members", "unowned")}


def _for_report(r):
    tag, head, row = r
    out = {"log": head[0], "cell": head[1]}
    for k in _REPORT_COLUMNS[tag]:
        out[k] = row.get(k)
    return tag, out


def _invariant_totals(rows) -> list[dict]:
    """Per log and invariant: checks, violations, and pass / fail / skipped (no group checkable)."""
    totals = {}
    for r in rows:
        t = totals.setdefault((r["log"], r["invariant"]), {"log": r["log"], "cell": r["cell"],
                                                           "invariant": r["invariant"], "checked": 0,
                                                           "failed": 0, "groups_checked": 0})
        t["checked"] += r["checked"]
        t["failed"] += r["failed"]
        t["groups_checked"] += r["status"] != "skipped"
    for t in totals.values():
        t["status"] = "skipped" if not t["groups_checked"] else "fail" if t["failed"] else "pass"
    order = INVARIANTS + WORK_INVARIANTS
    return sorted(totals.values(), key=lambda t: (t["log"], order.index(t["invariant"])))


def _summary(frames, logs_df, F):
    """One row per log (scenario run): rebalance durations, unowned partition-seconds, movement."""
    reb = frames["rebalances"].groupBy("log").agg(
        F.count(F.lit(1)).alias("rebalances"),
        F.percentile("duration_ms", F.lit(0.5)).alias("duration_p50_ms"),
        F.percentile("duration_ms", F.lit(0.95)).alias("duration_p95_ms"),
        F.max("duration_ms").alias("duration_max_ms"),
        F.sum("partitions_moved").alias("partitions_moved"),
        F.sum("min_moves").alias("min_moves"),
        F.sum("partitions_revoked").alias("partitions_revoked"),
        F.max("balance").alias("max_balance"),
        F.max("max_member_idle_ms").alias("max_member_idle_ms"))
    grp = frames["groups"].groupBy("log").agg(
        F.count(F.lit(1)).alias("groups"),
        F.sum("events").alias("events"),
        (F.sum("member_events") > 0).alias("member_events"),
        (F.sum("unowned_partition_ms") / F.lit(1000.0)).alias("partition_seconds_unowned"),
        F.sum("zombie_overlaps").alias("zombie_overlaps"))
    inv = frames["invariants"].groupBy("log").agg(F.sum("failed").alias("violations"))
    return (logs_df.join(grp, "log", "left").join(reb, "log", "left").join(inv, "log", "left")
            .fillna(0, subset=["rebalances"])
            .withColumn("movement_ratio", F.when(F.col("min_moves") > 0,
                                                 F.col("partitions_moved") / F.col("min_moves")))
            .orderBy("log"))
