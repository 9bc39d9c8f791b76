"""``groupcoord analyze``."""
from __future__ import annotations

import contextlib
import os
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


def _children() -> set[int]:
    """This process's children (Linux: listed in /proc; elsewhere none found)."""
    import glob
    found = set()
    for path in glob.glob(f"/proc/{os.getpid()}/task/*/children"):
        with contextlib.suppress(OSError):
            found.update(int(pid) for pid in open(path).read().split())
    return found


class Interrupt:
    """Ctrl-C during analyze or sweep (a context): the children started in it ended at once (Spark's JVM,
    which ignores Ctrl-C and, interrupted before its gateway is up, would outlive this process),
    nothing logged any more, and KeyboardInterrupt raised. (PySpark's own handler cancels the jobs
    through the gateway the interrupted call is using, and py4j logs that call's tracebacks, and
    the JVM's end, as errors.) An interrupt raised in a finalizer (py4j's objects have some) is
    lost: so once the JVM is gone, whatever the analysis raises, or its end, is the interrupt's
    (``seen``). At its end the SIGINT handler is put back; logging and the hook of errors raised
    in finalizers too, unless it was interrupted (the process ends: the JVM's end stays quiet)."""

    def __init__(self) -> None:
        self.seen = False

    def __enter__(self) -> "Interrupt":
        import signal
        import threading
        # (signals reach the main thread only: main() called in another leaves them as they are)
        self.active = threading.current_thread() is threading.main_thread()
        self._older = _children()
        if self.active:
            self._before = signal.getsignal(signal.SIGINT), sys.unraisablehook
            self.take_signal()
            sys.unraisablehook = self._unraisable
        return self

    def __exit__(self, *exc) -> None:
        import signal
        if self.active:
            handler, hook = self._before
            signal.signal(signal.SIGINT, handler)
            if not self.seen:
                sys.unraisablehook = hook

    def take_signal(self) -> None:
        import signal
        if self.active:
            signal.signal(signal.SIGINT, self._handle)

    def end_children(self) -> None:
        """SIGTERM to the children started since the context began."""
        import signal
        for pid in _children() - self._older:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)

    def interrupted(self, line: str) -> int:
        """What a command does once interrupted: the children ended, ``line`` said (below the
        terminal's ^C); its exit status, 130."""
        self.end_children()
        lead = "\n" if sys.stderr.isatty() else ""
        print(f"{lead}{line}", file=sys.stderr)
        return 130

    def _handle(self, signum, frame) -> None:
        import logging
        if not self.seen:
            self.seen = True
            logging.disable(logging.CRITICAL)
            self.end_children()
        raise KeyboardInterrupt

    def _unraisable(self, u) -> None:       # (an interrupt lost in a finalizer: said once, at the end)
        if not self.seen and not isinstance(u.exc_value, KeyboardInterrupt):
            self._before[1](u)


def _analyze(args) -> int:
    from . import storage
    from .job import LogError, analyze, check_out, find_logs, spark_session
    with Interrupt() as interrupt:
        try:
            logs = [storage.local(x) for x in args.logs]
            out = storage.local(args.out)
            uris = any(storage.is_uri(x) for x in logs)
            if not uris:                  # local logs and OUT are checked before Spark starts
                sources = find_logs(logs)
            if not storage.is_uri(out):
                check_out(out)
            spark = spark_session(args.master, conf=dict(args.conf))
            interrupt.take_signal()       # (the session's start put PySpark's handler in its place)
            if uris:
                sources = find_logs(logs, spark=spark)
            analysis = analyze(sources, out, spark=spark, engine=args.engine)
            if not interrupt.seen:
                return done(analysis)
        except BaseException as e:
            if not interrupt.seen and not isinstance(e, KeyboardInterrupt):
                if isinstance(e, (LogError, storage.LocationError)):
                    print(f"groupcoord analyze: {e}", file=sys.stderr)
                    return 2
                raise
        return interrupt.interrupted(f"groupcoord analyze: interrupted; {args.out} may hold part of an analysis")
