"""Work queues: share groups (KIP-932, Kafka's queues) and consumer groups used as work queues.

The tables ``deliveries``, ``consumers``, ``redeliveries``, ``archived`` and ``work``, and the
invariants ``share_single_holder``, ``all_settled`` and ``delivery_limit`` (rows of the
``invariants`` and ``violations`` tables), from the member events ``client.records_polled``,
``client.batch_processed``, ``client.acknowledged``, ``client.committed``, ``client.started`` and
``client.stopped``, the producers' ``producer.produced`` and scenario.json. The definitions are in
the package docstring (:mod:`groupcoord.analytics`).

All in DataFrames: the lines of those kinds are read again (a ``contains`` filter before
``from_json``) and kept; runs of offsets are exploded with ``sequence``; a client's sessions come
from a window over its starts and stops, and each poll finds the one it fell in (a broadcast join);
a consumer group's commits become the offsets each newly covers (a running maximum per partition,
exploded). Each record's production, polls, successful acknowledgements and covering commit are
then one stream, grouped by record in one shuffle: plain aggregates give its production and
acknowledgement, and its polls and acknowledgements, collected in time order, give its deliveries
(the holder's own next acknowledgement of each, the delivery before it) through higher-order
functions, only for the records delivered more than once (the others from their one poll). The
per-record result is kept flat (later deliveries and broken ones as small arrays, null for most).
The driver collects one small aggregate (per log, group and topic) to know the work-queue groups,
and in one job the rows of the ``work`` table and of the invariants and counterexamples.

Two groups of 10^6 records each (a share group and a consumer group, 130,000 lines) take about
40 s more than the rebalance tables on two busy local cores, most of it the one shuffle of ~3
rows per record and its aggregation; on a small log the cost is a few seconds of planning and
code generation.

A log whose scenario.json declares neither a work queue (a share group, a group with ``job_ms``)
nor a producer is not read again; when no log has a record or producer event, nothing is written
(the five tables are absent from OUT).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

#: Work-queue invariants, in the order of the invariants table (after the rebalance ones).
WORK_INVARIANTS = ("share_single_holder", "all_settled", "delivery_limit")
#: Why a work-queue invariant was not checked (the verdict line says it).
SKIPPED_BECAUSE = {
    "share_single_holder": "no deliveries",
    "delivery_limit": "no deliveries",
    "all_settled": "producers not stopped long enough before the log's end",
}
#: The work-queue tables, in the order they are written.
WORK_TABLES = ("deliveries", "consumers", "redeliveries", "archived", "work")

RECORD_EVENTS = ("client.records_polled", "client.batch_processed", "client.acknowledged")
PRODUCER_EVENTS = ("producer.produced",)
#: the transaction coordinator's events (``transaction.*``: a transactional id, no group): counted in
#: the summary's ``events`` like a producer's (``ungrouped``), read no further
TRANSACTION_PREFIX = "transaction."
ACK_TYPES = ("ACCEPT", "RELEASE", "REJECT", "GAP")
#: the leader's record of acknowledgements (simulate and serve logs): preferred to the members' own
#: (a member that dies before the answer to its piggy-backed acknowledgements never hears of them)
LEADER_ACKS = "share.records_acknowledged"
_KINDS = RECORD_EVENTS + PRODUCER_EVENTS + ("client.started", "client.stopped", "client.committed", LEADER_ACKS)

#: Kafka's defaults: share.record.lock.duration.ms, share.delivery.count.limit, a consumer group's
#: session timeout (classic session.timeout.ms, group.consumer.session.timeout.ms).
DEFAULT_LOCK_MS = 30000
DEFAULT_DELIVERY_LIMIT = 5
DEFAULT_SESSION_MS = 45000
#: all_settled is checked when the group's producers stopped at least its grace (lock duration, or a
#: consumer group's session timeout) plus this before the log's end.
SETTLE_MARGIN_MS = 10000
#: Redelivery causes, the work table's ``redeliveries_<cause>`` columns.
CAUSES = ("release", "crash", "close", "lock_expiry", "rebalance")


# ---------------------------------------------------------------- scenario.json
def _group_specs(scenario: dict | None) -> dict[str, dict]:
    """{group id: its [[groups]] entry} (a ``count`` expands to its ids, as the simulator names them)."""
    from .model import _group_ids
    out = {}
    for g in (scenario or {}).get("groups") or []:
        if not isinstance(g, dict):
            continue
        for gid in ([g["id"]] if "id" in g else _group_ids(g)):
            out[gid] = g
    return out


def may_have_work(scenario: dict | None) -> bool:
    """Whether a log may hold work-queue events: no scenario.json (an events file), or one that has
    a share group, a group with ``job_ms`` or a producer."""
    if scenario is None:
        return True
    return bool(scenario.get("produce")) or any(
        g.get("group_type") == "share" or g.get("job_ms") is not None for g in _group_specs(scenario).values())


def _config(scenario: dict | None, *names):
    conf = ((scenario or {}).get("coordinator") or {}).get("config") or {}
    for n in names:
        if conf.get(n) is not None:
            return int(conf[n])
    return None


def _first(*values):
    return next((v for v in values if v is not None), None)


def group_settings(scenario: dict | None, group: str, share: bool) -> dict:
    """A work-queue group's delivery limit, lock duration (share groups) and grace (the lock
    duration, or a consumer group's session timeout), from scenario.json, else the coordinator's
    config there, else Kafka's defaults."""
    spec = _group_specs(scenario).get(group) or {}
    if share:
        limit = _first(spec.get("delivery_limit"), _config(scenario, "share.delivery.count.limit",
                                                          "group.share.delivery.count.limit"),
                       DEFAULT_DELIVERY_LIMIT)
        lock = _first(spec.get("lock_duration_ms"), _config(scenario, "share.record.lock.duration.ms",
                                                           "group.share.record.lock.duration.ms"), DEFAULT_LOCK_MS)
        return {"delivery_limit": int(limit), "lock_duration_ms": int(lock), "grace_ms": int(lock)}
    session = spec.get("session_timeout_ms")
    if session is None and spec.get("group_protocol") == "consumer":
        session = _config(scenario, "group.consumer.session.timeout.ms")
    return {"delivery_limit": None, "lock_duration_ms": None, "grace_ms": int(_first(session, DEFAULT_SESSION_MS))}


# ---------------------------------------------------------------- schemas
def schemas(meta: list) -> dict:
    """The work-queue tables' ``(name, type)`` fields, after ``meta`` (log, cell, scenario, seed)."""
    from pyspark.sql import types as T
    S, L, I, D, B = T.StringType(), T.LongType(), T.IntegerType(), T.DoubleType(), T.BooleanType()
    record = [("group", S), ("topic", S), ("partition", I), ("offset", L)]
    return {
        "deliveries": meta + record + [
            ("produced_ms", L), ("deliveries", I), ("consumers", I), ("first_delivery_ms", L),
            ("last_delivery_ms", L), ("max_delivery_count", I), ("acknowledged_ms", L), ("outcome", S),
            ("archived_ms", L), ("latency_ms", L), ("duplicates", I)],
        "consumers": meta + [
            ("group", S), ("client", S), ("protocol", S), ("sessions", I), ("crashes", I), ("alive_ms", L),
            ("busy_ms", L), ("idle_ms", L), ("utilisation", D), ("polls", L), ("records_polled", L),
            ("records_processed", L), ("redeliveries_received", L), ("records_accepted", L),
            ("acknowledgements_failed", L), ("first_ms", L), ("last_ms", L)],
        "redeliveries": meta + record + [
            ("delivery", I), ("delivery_count", I), ("from_client", S), ("to_client", S), ("from_ms", L),
            ("ts_ms", L), ("gap_ms", L), ("cause", S)],
        "archived": meta + record + [
            ("reason", S), ("archived_ms", L), ("client", S), ("delivery_count", I), ("deliveries", I),
            ("produced_ms", L)],
        "work": meta + [
            ("group", S), ("group_type", S), ("clients", I), ("records", L), ("records_produced", L),
            ("acknowledged", L), ("archived", L), ("archived_rejected", L), ("archived_delivery_limit", L),
            ("unfinished", L), ("deliveries", L), ("duplicate_deliveries", L), ("redeliveries", L)]
        + [(f"redeliveries_{c}", L) for c in CAUSES] + [
            ("latency_p50_ms", D), ("latency_p99_ms", D), ("active_ms", L), ("throughput_per_s", D),
            ("mean_utilisation", D), ("busy_worker_s", D), ("idle_worker_s", D), ("idle_workers", I),
            ("delivery_limit", I),
            ("lock_duration_ms", L), ("last_produced_ms", L), ("log_end_ms", L), ("all_settled_checked", B)],
    }


def _event_schema():
    from pyspark.sql import types as T
    S, L = T.StringType(), T.LongType()
    runs = T.ArrayType(T.ArrayType(S))
    return T.StructType([T.StructField(n, t, True) for n, t in (
        ("event", S), ("ts_ms", L), ("group", S), ("client", S), ("protocol", S), ("reason", S),
        ("records", runs), ("offsets", runs), ("busy_ms", L), ("error", S), ("topic", S),
        ("partition", L), ("first", L), ("last", L), ("member", S), ("batches", runs), ("dropped", T.BooleanType()))])


# ---------------------------------------------------------------- the job
@dataclass
class WorkQueues:
    """The work-queue tables (DataFrames by name: the big ones computed from kept intermediates,
    :meth:`unpersist` when written; ``work`` from its collected rows) and the rows (dicts) of the
    ``work`` table and of the work-queue groups' invariants and counterexamples."""
    tables: dict
    work: list
    invariants: list
    violations: list
    kept: list = field(default_factory=list)

    def unpersist(self) -> None:
        for df in self.kept:
            df.unpersist()


def work_queues(spark, sources, groups_df, meta_fields: list) -> WorkQueues | None:
    """The work-queue tables of the logs, or None when none has a record or producer event.
    ``groups_df``: the groups table (each log's last event, with ``last_ms``)."""
    from pyspark.sql import functions as F
    from pyspark.storagelevel import StorageLevel

    from .pipeline import read_events
    candidates = [s for s in sources if may_have_work(s.scenario)]
    if not candidates:
        return None
    conf = spark.conf
    saved = conf.get("spark.sql.optimizer.enableJsonExpressionOptimization")
    conf.set("spark.sql.optimizer.enableJsonExpressionOptimization", "false")   # one parse per line
    try:
        v = F.col("value")
        wanted = None
        for k in _KINDS:
            c = v.contains(f'"{k}"')
            wanted = c if wanted is None else wanted | c
        e = F.from_json("value", _event_schema())
        ev = (read_events(spark, candidates, kinds=_KINDS).where(wanted).select("log", "pos", e.alias("e"))
              .select("log", "pos", F.col("e.event").alias("kind"), F.col("e.ts_ms").alias("ts"),
                      *[F.col(f"e.{n}").alias(n) for n in ("group", "client", "protocol", "reason", "records",
                                                           "offsets", "busy_ms", "error", "topic", "partition",
                                                           "first", "last", "member", "batches", "dropped")])
              .where(F.col("kind").isin(*_KINDS) & F.col("ts").isNotNull())
              .persist(StorageLevel.MEMORY_AND_DISK))
        kept = [ev]
        try:
            meta = _work_groups(spark, ev, candidates, groups_df)
            if meta is None:
                ev.unpersist()
                return None
            return _tables(spark, ev, meta, meta_fields, kept)
        except BaseException:
            for df in kept:
                df.unpersist()
            raise
    finally:
        if saved is None:
            conf.unset("spark.sql.optimizer.enableJsonExpressionOptimization")
        else:
            conf.set("spark.sql.optimizer.enableJsonExpressionOptimization", saved)


def _work_groups(spark, ev, sources, groups_df):
    """The work-queue groups (a DataFrame, one row each), from one small aggregate collected; None
    when no log has a record or producer event."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    kind = F.col("kind")
    topic = F.when(kind == "producer.produced", F.col("topic"))
    stats = ev.groupBy("log", "group", topic.alias("ptopic")).agg(
        F.max("ts").alias("last_ts"),
        F.sum(kind.isin(*RECORD_EVENTS, *PRODUCER_EVENTS).cast("long")).alias("work"),
        F.sum((kind == "client.records_polled").cast("long")).alias("polls"),
        F.sum((kind == "client.acknowledged").cast("long")).alias("acks"),
        F.max(((kind == "client.started") & (F.col("protocol") == "share")).cast("int")).alias("share"),
        F.array_distinct(F.flatten(F.collect_set(F.when(kind == "client.records_polled",
                                                        F.transform("records", lambda r: r[0]))))).alias("topics"),
    ).collect()
    work_logs = {r["log"] for r in stats if r["work"]}
    if not work_logs:
        return None
    ends = {r["log"]: r["last_ms"] for r in groups_df.where(F.col("log").isin(*work_logs))
            .groupBy("log").agg(F.max("last_ms").alias("last_ms")).collect()}
    by_log = {s.log: s for s in sources}
    rows, topics_rows = [], []
    for log in sorted(work_logs):
        src = by_log[log]
        mine = [r for r in stats if r["log"] == log]
        end = max([r["last_ts"] for r in mine] + ([ends[log]] if ends.get(log) is not None else []))
        sc = src.scenario or {}
        if sc.get("mode") == "simulate" and sc.get("duration_s") is not None:
            end = max(end, int(round(float(sc["duration_s"]) * 1000)))    # (virtual time: the run's end)
        produced = {r["ptopic"]: r["last_ts"] for r in mine if r["ptopic"] is not None}
        seen = {r["group"]: r for r in mine if r["group"] is not None and r["ptopic"] is None}
        specs = _group_specs(src.scenario)
        for group in sorted(set(seen) | set(specs)):
            r, spec = seen.get(group), specs.get(group) or {}
            declared = spec.get("group_type") == "share" or spec.get("job_ms") is not None
            if not (declared or (r is not None and r["polls"])):
                continue
            share = spec.get("group_type") == "share" or (r is not None and bool(r["share"] or r["acks"]))
            topics = list(spec.get("topics") or []) if group in specs else list((r and r["topics"]) or [])
            settings = group_settings(src.scenario, group, share)
            last = max((produced[t] for t in topics if t in produced), default=None)
            checked = last is not None and end - last >= settings["grace_ms"] + SETTLE_MARGIN_MS
            rows.append((log, src.cell, src.scenario_name, src.seed, group, "share" if share else "consumer",
                         settings["delivery_limit"], settings["lock_duration_ms"], settings["grace_ms"], last, end,
                         checked))
            topics_rows += [(log, group, t) for t in sorted(set(topics))]
    if not rows:
        return None
    S, L, I, B = T.StringType(), T.LongType(), T.IntegerType(), T.BooleanType()
    meta_schema = T.StructType([T.StructField(n, t, True) for n, t in (
        ("log", S), ("cell", S), ("scenario", S), ("seed", L), ("group", S), ("group_type", S),
        ("delivery_limit", I), ("lock_duration_ms", L), ("grace_ms", L), ("last_produced_ms", L),
        ("log_end_ms", L), ("all_settled_checked", B))])
    topic_schema = T.StructType([T.StructField(n, S, True) for n in ("log", "group", "topic")])
    return spark.createDataFrame(rows, meta_schema), spark.createDataFrame(topics_rows, topic_schema)


def _explode_runs(df, width: int, last: str | None):
    """One row per offset of the runs in ``records``: topic, partition, offset (and ``last``, the
    run's fifth field)."""
    from pyspark.sql import functions as F
    cols = [c for c in df.columns if c != "records"]
    r = F.col("r")
    extra = [r[4].alias(last)] if last else []
    runs = df.select(*cols, F.explode("records").alias("r")).select(
        *cols, r[0].alias("topic"), r[1].cast("int").alias("partition"), r[2].cast("long").alias("first"),
        r[3].cast("long").alias("last_offset"), *extra)
    return runs.select(*cols, "topic", "partition", *([last] if last else []),
                       F.explode(F.sequence("first", "last_offset")).alias("offset"))


def _tables(spark, ev, meta_pair, meta_fields: list, kept: list) -> WorkQueues:
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.storagelevel import StorageLevel

    from .model import MAX_COUNTEREXAMPLES
    meta, group_topics = meta_pair
    meta = F.broadcast(meta)
    head = ["log", "cell", "scenario", "seed"]
    rec = ["log", "group", "topic", "partition", "offset"]
    kind = F.col("kind")
    groups = meta.select("log", "group", "group_type")
    mine = ev.where(kind != LEADER_ACKS).join(F.broadcast(groups), ["log", "group"])   # member events of the work-queue groups
    # ---- sessions: from client.started (or the client's first event) to the next start or stop
    first = (mine.groupBy("log", "group", "client")
             .agg(F.min(F.struct("ts", "pos", (kind == "client.started").alias("started"))).alias("f"))
             .where(~F.col("f.started"))
             .select("log", "group", "client", F.col("f.ts").alias("ts"), F.col("f.pos").alias("pos"),
                     F.lit("first").alias("kind"), F.lit(None).cast("string").alias("reason"),
                     F.lit(None).cast("string").alias("protocol")))
    marks = mine.where(kind.isin("client.started", "client.stopped")).select(
        "log", "group", "client", "ts", "pos", "kind", "reason", "protocol").unionByName(first)
    order = F.when(kind == "first", 0).otherwise(1)
    wc = Window.partitionBy("log", "group", "client").orderBy("ts", "pos", order)
    nxt = F.lead(F.struct("ts", "pos", "kind", "reason")).over(wc)
    sessions = (marks.select("*", nxt.alias("n")).where(kind.isin("client.started", "first"))
                .select("log", "group", "client", F.col("ts").alias("start_ts"), F.col("pos").alias("start_pos"),
                        F.col("n.ts").alias("end_ts"), F.col("n.pos").alias("end_pos"),
                        F.when(F.col("n.kind") == "client.stopped", F.col("n.reason"))
                        .when(F.col("n.kind") == "client.started", F.lit("restarted")).alias("end_reason"),
                        (kind == "client.started").alias("started"))
                .persist(StorageLevel.MEMORY_AND_DISK))
    kept.append(sessions)
    # ---- each record's events: produced (t=0), polled (1), acknowledged (2), covered by a commit (3)
    polled = _explode_runs(mine.where(kind == "client.records_polled")
                           .select("log", "group", "client", "ts", "pos", "records"), 5, "dc")
    s = F.broadcast(sessions.alias("s"))
    p = polled.alias("p")
    after_start = (F.col("p.ts") > F.col("s.start_ts")) | ((F.col("p.ts") == F.col("s.start_ts"))
                                                           & (F.col("p.pos") >= F.col("s.start_pos")))
    before_end = (F.col("s.end_ts").isNull() | (F.col("p.ts") < F.col("s.end_ts"))
                  | ((F.col("p.ts") == F.col("s.end_ts")) & (F.col("p.pos") < F.col("s.end_pos"))))
    polled = p.join(s, (F.col("p.log") == F.col("s.log")) & (F.col("p.group") == F.col("s.group"))
                    & (F.col("p.client") == F.col("s.client")) & after_start & before_end, "left").select(
        "p.*", F.col("s.end_ts").alias("end_ts"), F.col("s.end_pos").alias("end_pos"),
        F.col("s.end_reason").alias("end_reason"))
    acks = _explode_runs(mine.where((kind == "client.acknowledged") & F.col("error").isNull())
                         .select("log", "group", "client", "ts", "pos", "records"), 5, "atype")
    # the leader's acknowledgements, where the log has them, in place of the members' (their client: the
    # member id's, from the member events)
    leader = (ev.where((kind == LEADER_ACKS) & F.col("error").isNull() & ~F.coalesce(F.col("dropped"), F.lit(False)))
              .drop("client", "records").join(F.broadcast(groups), ["log", "group"]))
    clients = mine.where(F.col("member").isNotNull() & (F.col("member") != "")).select(
        "log", "group", "member", "client").distinct()
    leader = leader.join(clients, ["log", "group", "member"], "left").select(
        "log", "group", F.coalesce("client", "member").alias("client"), "ts", "pos",
        F.transform("batches", lambda b: F.array(F.col("topic"), F.col("partition").cast("string"), b[0], b[1], b[2]))
        .alias("records"))
    leader = _explode_runs(leader, 5, "atype").where(F.col("atype") != "RENEW")
    acks = acks.join(leader.select("log", "group").distinct(), ["log", "group"], "left_anti").unionByName(leader)
    produced = (ev.where(kind == "producer.produced").drop("group")
                .join(F.broadcast(group_topics), ["log", "topic"])
                .select("log", "group", "topic", F.col("partition").cast("int").alias("partition"), "ts", "pos",
                        F.explode(F.sequence("first", "last")).alias("offset")))
    covered = _covered(mine, ev, group_topics)
    fields = [("ts", "long"), ("pos", "long"), ("t", "int"), ("client", "string"), ("dc", "int"),
              ("atype", "string"), ("end_ts", "long"), ("end_pos", "long"), ("end_reason", "string")]

    def event(df, tag):
        """A record's event: a poll or an acknowledgement as a struct ``e``; its production (``made``)
        or a covering commit (``covered``) by its time alone (they only count by their first)."""
        if tag in (0, 3):
            return df.select(*rec, F.lit(None).alias("e"), *[(F.col("ts") if tag == i else F.lit(None)).cast("long")
                                                               .alias(n) for i, n in ((0, "made"), (3, "covered"))])
        got = {"t": F.lit(tag)}
        e = F.struct(*[(got.get(n) if n in got else F.col(n) if n in df.columns else F.lit(None)).cast(t).alias(n)
                       for n, t in fields])
        return df.select(*rec, e.alias("e"), F.lit(None).cast("long").alias("made"),
                         F.lit(None).cast("long").alias("covered"))
    stream = event(polled, 1)
    for df, tag in ((acks, 2), (produced, 0), (covered, 3)):
        stream = stream.unionByName(event(df, tag))
    t, e = F.col("e.t"), F.col("e")
    # one shuffle (the aggregate finds the rows partitioned: no partial aggregation before it, which
    # would sort them for nothing): each record's polls and acknowledgements in time order (then
    # place in the log) in one array, read with higher-order functions when it was delivered more
    # than once (the others, most, by plain expressions on its one poll and first acknowledgement)
    records = stream.repartition(*rec).groupBy(*rec).agg(
        F.array_sort(F.collect_list(e)).alias("events"),
        F.count(F.when(t == 1, F.lit(1))).cast("int").alias("n_polls"),
        F.max(F.when(t == 1, e)).alias("one_poll"), F.min(F.when(t == 2, e)).alias("one_ack"),
        F.min("made").alias("produced_ms"),
        F.least(F.min("covered"), F.min(F.when(F.col("e.atype") == "ACCEPT", F.col("e.ts")))).alias("acknowledged_ms"),
        F.min(F.when(F.col("e.atype").isin("REJECT", "GAP"), e)).alias("rejected"))
    polls = F.col("polls")
    last = F.col("last")
    # the last delivery ended: released, its holder stopped, or its lock expired within the log
    lock = F.col("lock_duration_ms")
    expiry = F.when(last["ts"] + lock <= F.col("log_end_ms"), last["ts"] + lock)
    ended = F.least(F.when(last["ack"]["atype"] == "RELEASE", last["ack"]["ts"]), last["end_ts"], expiry)
    share = F.col("group_type") == "share"
    at_limit = (share & (last["dc"] >= F.col("delivery_limit"))
                & (last["ack"].isNull() | (last["ack"]["atype"] == "RELEASE")))
    acknowledged = F.col("acknowledged_ms").isNotNull()
    rejected = F.col("rejected").isNotNull()
    limit_archived = at_limit & ended.isNotNull()
    deliveries_n = F.col("n_polls")
    holder_fail, limit_fail = F.col("holder_fail"), F.col("limit_fail")
    several = deliveries_n > 1
    one_poll, one_ack = F.col("one_poll"), F.col("one_ack")

    def flat(x):        # a delivery as the tables show it (the one before it, what ended that one)
        return F.struct(x["delivery"].alias("delivery"), x["dc"].alias("delivery_count"),
                        x["prev"]["client"].alias("from_client"), x["client"].alias("to_client"),
                        x["prev"]["ts"].alias("from_ms"), x["ts"].alias("ts_ms"),
                        x["prev"]["dc"].alias("from_delivery_count"),
                        _cause(x, F.col("group_type"), F.col("acknowledged_ms")).alias("cause"))
    # per record, flat (kept): what the tables take, its later deliveries (when it has some) and the
    # deliveries that break an invariant (rare), each an array of flat structs
    records = _with_deliveries(records.join(meta, ["log", "group"]), several)
    prev_type = records.schema["polls"].dataType.elementType["prev"].dataType
    own = (one_ack.isNotNull() & (one_ack["client"] == one_poll["client"]) & _after(one_ack, one_poll))
    single = F.struct(F.lit(1).alias("delivery"), *[one_poll[n].alias(n) for n in (
        "ts", "pos", "client", "dc", "end_ts", "end_pos", "end_reason")],
        F.when(own, F.struct(*[one_ack[n].alias(n) for n in ("ts", "pos", "atype")])).alias("ack"),
        F.lit(None).cast(prev_type).alias("prev"))
    records = records.select(
        "*", F.when(deliveries_n == 1, single).when(several, F.get(polls, F.size(polls) - 1)).alias("last"))
    records = records.select(
        "*",
        F.when(several, F.filter(polls, lambda x: x["prev"].isNotNull() & (x["dc"] <= x["prev"]["dc"])))
        .alias("holder_fail"),
        F.when(several, F.filter(polls, lambda x: x["dc"] > F.col("delivery_limit")))
        .when(one_poll["dc"] > F.col("delivery_limit"), F.array(F.col("last"))).alias("limit_fail"))
    kept_records = records.select(
        *rec, "produced_ms", "acknowledged_ms", F.col("rejected.client").alias("rejected_by"),
        deliveries_n.alias("deliveries"),
        F.when(several, F.size(F.array_distinct(F.transform(polls, lambda x: x["client"]))))
        .otherwise(deliveries_n).alias("consumers"),
        F.when(several, F.get(polls, 0)["ts"]).otherwise(one_poll["ts"]).alias("first_delivery_ms"),
        last["ts"].alias("last_delivery_ms"),
        F.when(several, F.array_max(F.transform(polls, lambda x: x["dc"]))).otherwise(one_poll["dc"])
        .alias("max_delivery_count"),
        last["client"].alias("last_client"), last["dc"].alias("last_delivery_count"),
        F.when(acknowledged, "acknowledged").when(rejected | limit_archived, "archived")
        .otherwise("unfinished").alias("outcome"),
        F.when(~acknowledged & rejected, F.col("rejected.ts")).when(~acknowledged & limit_archived, ended)
        .alias("archived_ms"),
        F.when(~acknowledged & rejected, F.when(F.col("rejected.atype") == "GAP", "gap").otherwise("rejected"))
        .when(~acknowledged & limit_archived, "delivery_limit").alias("reason"),
        (F.col("acknowledged_ms") - F.col("produced_ms")).alias("latency_ms"),
        F.greatest(deliveries_n - 1, F.lit(0)).alias("duplicates"),
        F.when(share, F.coalesce(F.size(holder_fail), F.lit(0))).alias("holder_failed"),
        F.when(share, F.coalesce(F.size(limit_fail), F.lit(0))).alias("limit_failed"),
        F.when(several, F.transform(F.slice(polls, 2, 1 << 30), flat)).alias("later"),
        F.when(share & (F.size(holder_fail) > 0), F.transform(holder_fail, flat)).alias("holder_cases"),
        F.when(share & (F.size(limit_fail) > 0), F.transform(limit_fail, flat)).alias("limit_cases"),
    ).persist(StorageLevel.MEMORY_AND_DISK)
    kept.append(kept_records)
    records = kept_records.join(meta.select("log", "group", *head[1:], "group_type", "delivery_limit",
                                            "all_settled_checked"), ["log", "group"])
    deliveries = records.select(
        *head, "group", "topic", "partition", "offset", "produced_ms", "deliveries", "consumers",
        "first_delivery_ms", "last_delivery_ms", "max_delivery_count", "acknowledged_ms", "outcome", "archived_ms",
        "latency_ms", "duplicates")
    archived = records.where(F.col("outcome") == "archived").select(
        *head, "group", "topic", "partition", "offset", "reason", "archived_ms",
        F.when(F.col("reason").isin("rejected", "gap"), F.col("rejected_by")).otherwise(F.col("last_client"))
        .alias("client"), F.col("last_delivery_count").alias("delivery_count"), "deliveries", "produced_ms")
    # ---- redeliveries: every delivery after the first, and what ended the one before
    d = F.col("d")
    redeliveries = (records.where(F.col("later").isNotNull())
                    .select(*head, *rec[1:], F.explode("later").alias("d"))
                    .select(*head, "group", "topic", "partition", "offset",
                            *[d[n].alias(n) for n in ("delivery", "delivery_count", "from_client", "to_client",
                                                      "from_ms", "ts_ms")],
                            (d["ts_ms"] - d["from_ms"]).alias("gap_ms"), d["cause"].alias("cause")))
    # ---- consumers: per client of a work-queue group
    consumers = _consumers(mine, sessions, meta, head)
    # ---- work: per group
    work = _work(meta, head, records, redeliveries, consumers)
    # ---- invariants and their counterexamples
    invariants, violations = _invariants(records, meta, head, MAX_COUNTEREXAMPLES)
    # the small ones in one job, collected: the work table is written from them, and the invariants
    # and counterexamples join the model's as local rows (not the plans above, again)
    small = [df.select(F.lit(tag).alias("tag"), F.to_json(F.struct("*")).alias("row"))
             for tag, df in (("work", work), ("invariants", invariants), ("violations", violations))]
    got = {"work": [], "invariants": [], "violations": []}
    for r in small[0].unionByName(small[1]).unionByName(small[2]).collect():
        got[r["tag"]].append(json.loads(r["row"]))
    fields = schemas(meta_fields)
    names = [n for n, _ in fields["work"]]
    work_rows = [{n: row.get(n) for n in names} for row in got["work"]]
    tables = {"deliveries": deliveries, "consumers": consumers, "redeliveries": redeliveries,
              "archived": archived,
              "work": spark.createDataFrame([tuple(r.values()) for r in work_rows], _struct(fields["work"]))}
    return WorkQueues(tables, work_rows, got["invariants"], got["violations"], kept)


def _struct(fields):
    from pyspark.sql import types as T
    return T.StructType([T.StructField(n, t, True) for n, t in fields])


def _covered(mine, ev, group_topics):
    """A consumer group's commits as the offsets each newly acknowledges: per partition, a commit
    above every earlier one covers from the earlier maximum (or the partition's first offset seen)
    to its offset - 1."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    kind = F.col("kind")
    part = ["log", "group", "topic", "partition"]
    commits = (mine.where((kind == "client.committed") & (F.col("group_type") == "consumer"))
               .select("log", "group", "ts", "pos", F.explode("offsets").alias("o"))
               .select("log", "group", "ts", "pos", F.col("o")[0].alias("topic"),
                       F.col("o")[1].cast("int").alias("partition"), F.col("o")[2].cast("long").alias("off")))
    w = Window.partitionBy(*part).orderBy("ts", "pos").rowsBetween(Window.unboundedPreceding, -1)
    commits = commits.select("*", F.max("off").over(w).alias("hi")).where(
        F.col("hi").isNull() | (F.col("off") > F.col("hi")))
    # the first offset of each partition seen: polled by the group, or produced to it
    r = F.col("r")
    polled_lo = (mine.where(kind == "client.records_polled").select("log", "group", F.explode("records").alias("r"))
                 .select("log", "group", r[0].alias("topic"), r[1].cast("int").alias("partition"),
                         r[2].cast("long").alias("lo")))
    produced_lo = (ev.where(kind == "producer.produced").drop("group").join(F.broadcast(group_topics), ["log", "topic"])
                   .select("log", "group", "topic", F.col("partition").cast("int").alias("partition"),
                           F.col("first").alias("lo")))
    lo = polled_lo.unionByName(produced_lo).groupBy(*part).agg(F.min("lo").alias("lo"))
    start = F.coalesce(F.col("hi"), F.col("lo"))
    return (commits.join(lo, part).where(start <= F.col("off") - 1)
            .select(*part, "ts", "pos", F.explode(F.sequence(start, F.col("off") - 1)).alias("offset")))


def _run_length(runs, keep=None):
    """Records in ``runs`` (those whose run satisfies ``keep``): the sum of last - first + 1."""
    from pyspark.sql import functions as F
    if keep is not None:
        runs = F.filter(runs, keep)
    return F.aggregate(runs, F.lit(0).cast("long"),
                       lambda acc, r: acc + r[3].cast("long") - r[2].cast("long") + 1)


def _consumers(mine, sessions, meta, head):
    from pyspark.sql import functions as F
    kind, records = F.col("kind"), F.col("records")
    polled = kind == "client.records_polled"
    ok = (kind == "client.acknowledged") & F.col("error").isNull()
    per = mine.where(F.col("client").isNotNull()).groupBy("log", "group", "client").agg(
        F.sum((polled & (F.size(records) > 0)).cast("long")).alias("polls"),
        F.sum(F.when(polled, _run_length(records))).alias("records_polled"),
        F.sum(F.when(polled, _run_length(records, lambda r: r[4].cast("int") > 1))).alias("redeliveries_received"),
        F.sum(F.when(kind == "client.batch_processed", _run_length(records))).alias("records_processed"),
        F.sum(F.when(kind == "client.batch_processed", F.col("busy_ms"))).alias("busy_ms"),
        F.sum(F.when(ok, _run_length(records, lambda r: r[4] == "ACCEPT"))).alias("records_accepted"),
        F.sum(F.when((kind == "client.acknowledged") & F.col("error").isNotNull(), _run_length(records)))
        .alias("acknowledgements_failed"),
        F.max(F.when(kind == "client.started", F.struct("ts", "pos", "protocol"))).alias("started"),
        F.min("ts").alias("first_ms"), F.max("ts").alias("last_ms"))
    m = meta.select("log", "group", *head[1:], "group_type", "log_end_ms")
    alive = (sessions.join(m.select("log", "group", "log_end_ms"), ["log", "group"])
             .groupBy("log", "group", "client").agg(
                 F.sum(F.coalesce("end_ts", "log_end_ms") - F.col("start_ts")).alias("alive_ms"),
                 F.sum(F.col("started").cast("int")).alias("sessions"),
                 F.sum(F.col("end_reason").isin("crash", "restarted").cast("int")).alias("crashes")))
    z = F.lit(0).cast("long")
    busy = F.coalesce("busy_ms", z)
    return per.join(alive, ["log", "group", "client"], "left").join(m, ["log", "group"]).select(
        *head, "group", "client",
        F.coalesce(F.col("started.protocol"), F.when(F.col("group_type") == "share", "share")).alias("protocol"),
        F.coalesce("sessions", F.lit(0)).alias("sessions"), F.coalesce("crashes", F.lit(0)).alias("crashes"),
        "alive_ms", busy.alias("busy_ms"), (F.col("alive_ms") - busy).alias("idle_ms"),
        F.when(F.col("alive_ms") > 0, busy / F.col("alive_ms")).alias("utilisation"),
        "polls", F.coalesce("records_polled", z).alias("records_polled"),
        F.coalesce("records_processed", z).alias("records_processed"),
        F.coalesce("redeliveries_received", z).alias("redeliveries_received"),
        F.when(F.col("group_type") == "share", F.coalesce("records_accepted", z)).alias("records_accepted"),
        F.when(F.col("group_type") == "share", F.coalesce("acknowledgements_failed", z))
        .alias("acknowledgements_failed"),
        "first_ms", "last_ms")


def _at(ts, pos):
    """(ts, pos) as a struct that compares by time, then by place in the log."""
    from pyspark.sql import functions as F
    return F.struct(ts.alias("ts"), pos.alias("pos"))


def _work(meta, head, records, redeliveries, consumers):
    from pyspark.sql import functions as F
    outcome, reason = F.col("outcome"), F.col("reason")
    rec = records.groupBy("log", "group").agg(
        F.count(F.lit(1)).alias("records"), F.count("produced_ms").alias("records_produced"),
        F.sum((outcome == "acknowledged").cast("long")).alias("acknowledged"),
        F.sum((outcome == "archived").cast("long")).alias("archived"),
        F.sum((outcome == "unfinished").cast("long")).alias("unfinished"),
        F.sum((reason == "rejected").cast("long")).alias("archived_rejected"),
        F.sum((reason == "delivery_limit").cast("long")).alias("archived_delivery_limit"),
        F.sum("deliveries").cast("long").alias("deliveries"),
        F.sum("duplicates").cast("long").alias("duplicate_deliveries"),
        F.percentile("latency_ms", F.lit(0.5)).alias("latency_p50_ms"),
        F.percentile("latency_ms", F.lit(0.99)).alias("latency_p99_ms"),
        F.min(F.least("produced_ms", "first_delivery_ms")).alias("span_start"),
        F.max("acknowledged_ms").alias("span_end"))
    red = redeliveries.groupBy("log", "group").agg(
        F.count(F.lit(1)).alias("redeliveries"),
        *[F.sum((F.col("cause") == c).cast("long")).alias(f"redeliveries_{c}") for c in CAUSES])
    con = consumers.groupBy("log", "group").agg(
        F.count(F.lit(1)).alias("clients"), F.avg("utilisation").alias("mean_utilisation"),
        (F.sum("busy_ms") / 1000.0).alias("busy_worker_s"), (F.sum("idle_ms") / 1000.0).alias("idle_worker_s"),
        F.sum((F.coalesce("records_processed", F.lit(0)) == 0).cast("int")).alias("idle_workers"))
    z = F.lit(0).cast("long")
    counts = ["records", "records_produced", "acknowledged", "archived", "archived_rejected",
              "archived_delivery_limit", "unfinished", "deliveries", "duplicate_deliveries",
              "redeliveries"] + [f"redeliveries_{c}" for c in CAUSES]
    active = F.col("span_end") - F.col("span_start")
    return (meta.join(rec, ["log", "group"], "left").join(red, ["log", "group"], "left")
            .join(con, ["log", "group"], "left")
            .select(*head, "group", "group_type", F.coalesce("clients", F.lit(0)).alias("clients"),
                    *[F.coalesce(c, z).alias(c) for c in counts],
                    "latency_p50_ms", "latency_p99_ms", active.alias("active_ms"),
                    F.when(active > 0, F.coalesce("acknowledged", z) * 1000.0 / active).alias("throughput_per_s"),
                    "mean_utilisation", "busy_worker_s", "idle_worker_s",
                    F.coalesce("idle_workers", F.lit(0)).alias("idle_workers"), "delivery_limit", "lock_duration_ms",
                    "last_produced_ms", "log_end_ms", "all_settled_checked"))


def _after(x, y):
    """x comes after y in the log (structs with ts and pos)."""
    return (x["ts"] > y["ts"]) | ((x["ts"] == y["ts"]) & (x["pos"] > y["pos"]))


def _with_deliveries(df, when):
    """``df`` with ``polls`` (null unless ``when``): a record's deliveries from its ``events``
    (polls and the acknowledgements that succeeded, in time order): per poll, its number, the
    holder's own next acknowledgement of the record (before the holder's own next poll of it) and
    the delivery before it (with its acknowledgement). One select a step: each array is computed once."""
    from pyspark.sql import functions as F
    after = _after
    events, polls, acks, step = F.col("events"), F.col("_polls"), F.col("_acks"), F.col("_step")

    def own_ack(p):
        again = F.get(F.filter(polls, lambda q: (q["client"] == p["client"]) & after(q, p)), 0)
        mine = F.filter(acks, lambda a: (a["client"] == p["client"]) & after(a, p)
                        & (again.isNull() | after(again, a)))
        first = F.get(mine, 0)
        return F.when(first.isNotNull(), F.struct(first["ts"].alias("ts"), first["pos"].alias("pos"),
                                                  first["atype"].alias("atype")))
    df = df.select("*", F.when(when, F.filter(events, lambda x: x["t"] == 1)).alias("_polls"),
                   F.when(when, F.filter(events, lambda x: x["t"] == 2)).alias("_acks")).drop("events")
    df = df.select("*", F.transform(polls, lambda p, i: F.struct(
        (i + 1).alias("delivery"), p["ts"].alias("ts"), p["pos"].alias("pos"), p["client"].alias("client"),
        p["dc"].alias("dc"), p["end_ts"].alias("end_ts"), p["end_pos"].alias("end_pos"),
        p["end_reason"].alias("end_reason"), own_ack(p).alias("ack"))).alias("_step")).drop("_polls", "_acks")
    return df.select("*", F.transform(step, lambda x, i: F.struct(
        *[x[n].alias(n) for n in ("delivery", "ts", "pos", "client", "dc", "end_ts", "end_pos", "end_reason",
                                  "ack")],
        F.when(i > 0, F.get(step, i - 1)).alias("prev"))).alias("polls")).drop("_step")


def _cause(d, group_type, acknowledged_ms):
    """Why delivery ``d`` came (a share group: what ended the one before; a consumer group: the fate
    of the client that polled it before)."""
    from pyspark.sql import functions as F
    prev = d["prev"]
    this = _at(d["ts"], d["pos"])
    prev_end, prev_ack = _at(prev["end_ts"], prev["end_pos"]), _at(prev["ack"]["ts"], prev["ack"]["pos"])
    stopped_before = prev["end_ts"].isNotNull() & (prev_end < this)
    stop_cause = F.when(prev["end_reason"].isin("crash", "restarted"), "crash").otherwise("close")
    released = ((prev["ack"]["atype"] == "RELEASE") & (prev_ack < this)
                & (prev["end_ts"].isNull() | (prev_ack < prev_end)))
    acked_before_stop = F.coalesce(prev["ack"].isNotNull() & (prev_ack < prev_end), F.lit(False))
    share = F.when(released, "release").when(stopped_before & ~acked_before_stop, stop_cause).otherwise("lock_expiry")
    committed_before_stop = F.coalesce(acknowledged_ms.isNotNull() & (acknowledged_ms <= prev["end_ts"]), F.lit(False))
    consumer = F.when(stopped_before & ~committed_before_stop, stop_cause).otherwise("rebalance")
    return F.when(group_type == "share", share).otherwise(consumer)


def _invariants(records, meta, head, max_examples: int):
    """Rows of the invariants table (per work-queue group and invariant that applies to it: all
    three to a share group, all_settled to a consumer group) and of the violations table."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    share = F.col("group_type") == "share"
    produced = F.col("produced_ms").isNotNull() & F.col("all_settled_checked")
    unsettled = produced & (F.col("outcome") == "unfinished")
    per = records.groupBy("log", "group").agg(
        F.sum(F.when(share, F.col("deliveries"))).cast("long").alias("deliveries"),
        F.sum("holder_failed").cast("long").alias("holder_failed"),
        F.sum("limit_failed").cast("long").alias("limit_failed"),
        F.sum(produced.cast("long")).alias("produced"), F.sum(unsettled.cast("long")).alias("unsettled"))
    z = F.lit(0).cast("long")
    g = meta.join(per, ["log", "group"], "left")

    def row(name, applies, checked, failed, checkable):
        status = F.when(~checkable | (checked == 0), "skipped").when(failed > 0, "fail").otherwise("pass")
        return F.when(applies, F.struct(F.lit(name).alias("invariant"), status.alias("status"),
                                        F.when(checkable, checked).otherwise(z).alias("checked"),
                                        F.when(checkable, failed).otherwise(z).alias("failed")))
    deliveries = F.coalesce("deliveries", z)
    entries = F.array(
        row("share_single_holder", share, deliveries, F.coalesce("holder_failed", z), F.lit(True)),
        row("all_settled", F.lit(True), F.coalesce("produced", z), F.coalesce("unsettled", z),
            F.col("all_settled_checked")),
        row("delivery_limit", share, deliveries, F.coalesce("limit_failed", z), F.lit(True)))
    invariants = (g.select(*head, "group", F.explode(F.filter(entries, lambda x: x.isNotNull())).alias("i"))
                  .select(*head, "group", "i.invariant", "i.status", "i.checked", "i.failed"))
    # counterexamples: the deliveries that break them (few), and the records left unfinished
    d = F.col("d")
    record = [F.col("offset"), F.col("partition"), F.col("topic")]
    holder = (records.where(F.col("holder_cases").isNotNull())
              .select(*head, "group", "topic", "partition", "offset", F.explode("holder_cases").alias("d"))
              .select(*head, "group", F.lit("share_single_holder").alias("invariant"), d["ts_ms"].alias("ts_ms"),
                      F.to_json(F.struct(d["to_client"].alias("client"), d["delivery"].alias("delivery"),
                                         d["delivery_count"].alias("delivery_count"), *record[:2],
                                         d["from_client"].alias("previous_client"),
                                         d["from_delivery_count"].alias("previous_delivery_count"),
                                         d["from_ms"].alias("previous_ms"), record[2])).alias("detail"),
                      "offset", "partition", "topic"))
    over = (records.where(F.col("limit_cases").isNotNull())
            .select(*head, "group", "topic", "partition", "offset", "delivery_limit",
                    F.explode("limit_cases").alias("d"))
            .select(*head, "group", F.lit("delivery_limit").alias("invariant"), d["ts_ms"].alias("ts_ms"),
                    F.to_json(F.struct(d["to_client"].alias("client"), d["delivery"].alias("delivery"),
                                       d["delivery_count"].alias("delivery_count"),
                                       F.col("delivery_limit").alias("limit"), *record)).alias("detail"),
                    "offset", "partition", "topic"))
    unfinished = records.where(unsettled).select(
        *head, "group", F.lit("all_settled").alias("invariant"), F.col("produced_ms").alias("ts_ms"),
        F.to_json(F.struct("deliveries", "last_client", "last_delivery_ms", "max_delivery_count", *record))
        .alias("detail"), "offset", "partition", "topic")
    cases = holder.unionByName(over).unionByName(unfinished)
    w = Window.partitionBy("log", "group", "invariant").orderBy("ts_ms", "topic", "partition", "offset", "detail")
    violations = (cases.select("*", F.row_number().over(w).alias("n")).where(F.col("n") <= max_examples)
                  .select(*head, "group", "invariant", "ts_ms", "detail"))
    return invariants, violations
