"""``groupcoord analyze`` and ``groupcoord sweep``."""
from __future__ import annotations

import sys


def register(subparsers) -> None:
    p = subparsers.add_parser("analyze", help="rebalance analytics of event logs (a Spark job)",
                              description="Read event logs (directories with events.jsonl and scenario.json, "
                                          "or events files of 'groupcoord serve --events') and write Parquet "
                                          "tables and report.html to OUT.")
    p.add_argument("logs", nargs="+", metavar="LOG", help="a log directory or an events file")
    p.add_argument("--out", required=True, metavar="OUT", help="output directory")
    p.add_argument("--master", default=None, metavar="URL", help="Spark master (default local[2])")
    p.set_defaults(func=_analyze)
    s = subparsers.add_parser("sweep", help="simulate a parameter grid as Spark tasks and analyse it",
                              description="Run one virtual-time simulation per cell of GRID (a TOML file) "
                                          "as Spark tasks, then analyse them all into OUT.")
    s.add_argument("grid", metavar="GRID", help="grid file (TOML)")
    s.add_argument("--out", required=True, metavar="OUT", help="output directory")
    s.add_argument("--master", default=None, metavar="URL", help="Spark master (default local[2])")
    s.set_defaults(func=_sweep)


def _done(analysis) -> int:
    bad = sum(s.get("violations") or 0 for s in analysis.summary)
    print(f"{len(analysis.logs)} log(s), {analysis.events} events in {analysis.seconds:.1f} s; "
          f"report: {analysis.out}/report.html" + (f"; {bad} invariant violation(s)" if bad else ""))
    return 0


def _analyze(args) -> int:
    from .job import LogError, analyze, check_out, find_logs, spark_session
    try:
        sources = find_logs(args.logs)
        check_out(args.out)
        analysis = analyze(sources, args.out, spark=spark_session(args.master))
    except LogError as e:
        print(f"groupcoord analyze: {e}", file=sys.stderr)
        return 2
    return _done(analysis)


def _sweep(args) -> int:
    from .job import LogError
    from .sweep import GridError, sweep
    try:
        analysis = sweep(args.grid, args.out, master=args.master)
    except (GridError, LogError) as e:
        print(f"groupcoord sweep: {e}", file=sys.stderr)
        return 2
    return _done(analysis)
