"""``groupcoord analyze``."""
from __future__ import annotations

import sys


def register(subparsers) -> None:
    p = subparsers.add_parser("analyze", help="rebalance analytics of event logs (a Spark job)",
                              description="Read event logs (directories with events/ or events.jsonl, and scenario.json, "
                                          "or events files of 'groupcoord serve --events') and write Parquet "
                                          "tables and report.html to OUT.")
    p.add_argument("logs", nargs="+", metavar="LOG", help="a log directory or an events file")
    p.add_argument("--out", required=True, metavar="OUT", help="output directory (a path or a Hadoop URI)")
    p.add_argument("--master", default=None, metavar="URL", help="Spark master (default local[2])")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", type=spark_conf,
                   help="a Spark setting for the session (repeatable)")
    p.add_argument("--engine", choices=("rdd", "dataframe"), default=None,
                   help="how the tables are computed: 'dataframe' (per-event work in the JVM; hands a log "
                        "it cannot take to the other) or 'rdd' (every line in Python); default: "
                        "GROUPCOORD_ANALYTICS_ENGINE, else dataframe")
    p.set_defaults(func=_analyze)


def spark_conf(text: str):
    import argparse
    key, eq, value = text.partition("=")
    if not eq or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: expected key=value")
    return key.strip(), value


def done(analysis, cell_params: dict | None = None) -> int:
    """Print one verdict line per run (a grid cell named by its parameters), then where the report
    is. Exit status 0: the analysis ran (a violation is one of its findings, in the report)."""
    from .report import verdicts
    for verdict in verdicts(analysis, cell_params):
        print(verdict.line())
    bad = sum(s.get("violations") or 0 for s in analysis.summary)
    print(f"{len(analysis.logs)} log(s), {analysis.events} events in {analysis.seconds:.1f} s; "
          f"report: {analysis.out}/report.html" + (f"; {bad} invariant violation(s)" if bad else ""))
    return 0


def _analyze(args) -> int:
    from . import storage
    from .job import LogError, analyze, check_out, find_logs, spark_session
    try:
        logs = [storage.local(x) for x in args.logs]
        out = storage.local(args.out)
        uris = any(storage.is_uri(x) for x in logs)
        if not uris:                  # local logs and OUT are checked before Spark starts
            sources = find_logs(logs)
        if not storage.is_uri(out):
            check_out(out)
        spark = spark_session(args.master, conf=dict(args.conf))
        if uris:
            sources = find_logs(logs, spark=spark)
        analysis = analyze(sources, out, spark=spark, engine=args.engine)
    except (LogError, storage.LocationError) as e:
        print(f"groupcoord analyze: {e}", file=sys.stderr)
        return 2
    return done(analysis)
