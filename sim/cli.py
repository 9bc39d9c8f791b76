"""Subcommands of ``groupcoord``: ``fleet`` (real time), ``simulate`` (virtual time) and ``sweep`` (a
parameter grid simulated as Spark tasks, then analysed)."""
from __future__ import annotations

import asyncio
import os
import re
import sys
from dataclasses import dataclass


def register(subparsers) -> None:
    fleet = subparsers.add_parser(
        "fleet", help="run a scenario's simulated consumers in real time against a coordinator",
        description="Run simulated consumers (our client library) against a coordinator: a daemon "
                    "(--bootstrap) or one started in this process. Writes the event log (DIR/events/, "
                    "Parquet; DIR/events.jsonl with --events-format jsonl), DIR/scenario.json and "
                    "DIR/summary.json with --out.")
    fleet.add_argument("scenario", metavar="SCENARIO", help="a scenario TOML file (see examples/scenarios/)")
    fleet.add_argument("--bootstrap", metavar="HOST:PORT",
                       help="a running coordinator (default: start one in this process; the scenario's "
                            "[coordinator] settings apply only to that one)")
    fleet.add_argument("--admin", metavar="URL",
                       help="the daemon's admin API (coordinator events, node and coordinator faults)")
    fleet.add_argument("--admin-token", default=None, help="bearer token of the admin API "
                       "(default: $GROUPCOORD_HTTP_TOKEN)")
    fleet.add_argument("--out", metavar="DIR", help="write the event log and summary to DIR")
    add_events_format(fleet)
    fleet.add_argument("--seed", type=int, default=None, help="seed of the timeline's random picks")
    fleet.add_argument("--duration", type=float, default=None, metavar="SECONDS",
                       help="override the scenario's duration_s")
    fleet.add_argument("--until-stable", action="store_true",
                       help="end early once the timeline is over and every group is stable")
    fleet.add_argument("--share-connections", action="store_true",
                       help="one TCP connection per member and address (bootstrap, broker and coordinator "
                            "share it when they are one node) instead of one per role as the Java client; "
                            "the other roles' requests wait while a JoinGroup/SyncGroup is parked")
    fleet.add_argument("--processes", default="1", metavar="N",
                       help="run the members in N processes, each with its own event loop and file descriptors "
                            "(member i in process i mod N); this one merges their events into one log and summary")
    fleet.add_argument("--shard", default=None, metavar="I/N",
                       help="run only the members whose index is I mod N, against a daemon (--bootstrap): N hosts "
                            "run the same scenario with --shard 0/N ... N-1/N; shard 0 does the cluster-wide actions "
                            "and logs the coordinator's events (--admin), each shard's log holds its members' events")
    fleet.add_argument("--start-at", default=None, metavar="UNIX_TIME",
                       help="start the scenario's clock at this wall time (seconds since the epoch, e.g. "
                            "$(($(date +%%s) + 10))) instead of now: the shards' timelines then run together")
    fleet.add_argument("--no-progress", action="store_true", help="no progress bar")
    fleet.add_argument("--log-level", default="error", help="level of the log lines of the coordinator and members")
    fleet.set_defaults(func=_fleet)

    sim = subparsers.add_parser(
        "simulate", help="run a scenario in virtual time (deterministic for a seed)",
        description="Run a scenario with the coordinator core and member cores on a simulated clock "
                    "and network. The same seed gives the same event log byte for byte.")
    sim.add_argument("scenario", metavar="SCENARIO", help="a scenario TOML file (see examples/scenarios/)")
    sim.add_argument("--seed", type=int, default=None, help="the seed (default: the scenario's)")
    sim.add_argument("--out", metavar="DIR", help="write the event log, scenario.json and summary.json to DIR")
    add_events_format(sim)
    sim.add_argument("--duration", type=float, default=None, metavar="SECONDS",
                     help="override the scenario's duration_s (virtual seconds)")
    sim.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override a scenario key, e.g. strategy=cooperative-sticky, members=50 (repeatable)")
    sim.add_argument("--codec", action="store_true", help="encode and decode every message (fidelity, slower)")
    sim.add_argument("--workers", type=int, default=1, metavar="N",
                     help="run the groups in N processes (the same log as one process; 0: one per CPU)")
    sim.add_argument("--no-progress", action="store_true", help="no progress bar")
    sim.add_argument("--log-level", default="error",
                     help="level of the coordinator's own log lines (default error: the event log has it all)")
    sim.set_defaults(func=_simulate)
    from groupcoord.analytics.cli import spark_conf
    s = subparsers.add_parser("sweep", help="simulate a parameter grid as Spark tasks and analyse it",
                              description="Run one virtual-time simulation per cell of GRID (a TOML file) "
                                          "as Spark tasks, then analyse them all into OUT.")
    s.add_argument("grid", metavar="GRID", help="grid file (TOML)")
    s.add_argument("--out", required=True, metavar="OUT", help="output directory (a path or a Hadoop URI)")
    s.add_argument("--master", default=None, metavar="URL", help="Spark master (default local[2])")
    s.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", type=spark_conf,
                   help="a Spark setting for the session (repeatable)")
    s.add_argument("--axis", action="append", default=[], metavar="KEY=[VALUES]",
                   help="replace the values of one of the grid's axes, e.g. members=[6] (repeatable)")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario key in every cell, e.g. duration_s=120 (repeatable)")
    s.set_defaults(func=_sweep)


def add_events_format(parser) -> None:
    from .model import EVENT_FORMATS
    parser.add_argument("--events-format", choices=EVENT_FORMATS, default="parquet",
                        help="the event log under --out: 'parquet' (DIR/events/, typed columns, one file per "
                             "event kind: what analyze reads fastest), 'jsonl' (DIR/events.jsonl, one JSON "
                             "object per line) or 'both' (default: parquet)")


def _value(text: str):
    import tomllib
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _load(args):
    from .scenario import ScenarioError, apply_overrides, load
    try:
        sc = load(args.scenario)
        overrides = {}
        for item in getattr(args, "set", []):
            key, sep, value = item.partition("=")
            if not sep:
                raise ScenarioError(f"--set {item!r}: expected KEY=VALUE")
            overrides[key.strip()] = _value(value.strip())
        if args.duration is not None:
            overrides["duration_s"] = args.duration
        if getattr(args, "codec", False):
            overrides["network.codec"] = True
        return apply_overrides(sc, overrides) if overrides else sc
    except FileNotFoundError:
        print(f"groupcoord: no such scenario file: {args.scenario}", file=sys.stderr)
    except ScenarioError as e:
        print(f"groupcoord: {args.scenario}: {e}", file=sys.stderr)
    return None


def configure_logging(level: str) -> None:
    """Console logs at ``level`` (``--log-level``), the members' and the coordinator's at WARNING
    or above: for simulate, fleet and fleet's member processes (sim/processes.py)."""
    import logging

    from groupcoord.coordinator.logs import configure
    configure("console", level)
    logging.getLogger("groupcoord").setLevel(max(logging.WARNING, getattr(logging, level.upper(), 0)))


def _simulate(args) -> int:
    configure_logging(args.log_level)
    from .simulate import WorkerDied, simulate_to
    sc = _load(args)
    if sc is None:
        return 2
    seed = sc.seed if args.seed is None else args.seed
    workers = args.workers if args.workers > 0 else (os.cpu_count() or 1)
    # (the log streamed to its files, never held whole: a 10,000-member hour in under 1 GB)
    progress = not args.no_progress and sys.stderr.isatty()
    try:
        summary, _ = simulate_to(sc, seed, args.out or None, workers=workers, event_format=args.events_format,
                                 progress=progress)
    except WorkerDied as e:
        print(f"groupcoord: {e}", file=sys.stderr)      # (the bar, stopped, has shown the cursor again)
        return 3
    except KeyboardInterrupt:       # (the shards' processes ended; the output is written after them)
        where = f"{args.out} may hold an incomplete run" if args.out and os.path.exists(args.out) \
            else "nothing was written"
        lead = "\n" if sys.stderr.isatty() else ""      # (below the terminal's ^C)
        print(f"{lead}groupcoord: interrupted; {where}", file=sys.stderr)
        return 130
    return print_summary(summary, scenario=sc)


def parse_processes(text: str) -> int:
    """--processes N: a whole number >= 1 (ValueError: the one-line message)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"--processes {text}: expected a whole number of processes, 1 or more")
    return n


def parse_shard(text: str) -> tuple[int, int]:
    """--shard I/N: 0 <= I < N (ValueError: the one-line message)."""
    i, sep, n = text.partition("/")
    try:
        shard = (int(i), int(n))
    except ValueError:
        shard = None
    if not sep or shard is None or not 0 <= shard[0] < shard[1]:
        raise ValueError(f"--shard {text}: expected I/N with 0 <= I < N (e.g. 0/2 and 1/2 on two hosts)")
    return shard


def parse_start_at(text: str) -> float:
    """--start-at UNIX_TIME: seconds since the epoch, within a day of now (ValueError: the message)."""
    import math
    import time
    try:
        t = float(text)
    except ValueError:
        t = math.nan
    if not abs(t - time.time()) < 86400:
        raise ValueError(f"--start-at {text}: expected a wall time in seconds since the epoch, within a day "
                         f"of now (e.g. $(($(date +%s) + 10)))")
    return t


def _fleet(args) -> int:
    from .fleet import ignored_against_daemon, raise_fd_limit, run
    try:
        processes = parse_processes(args.processes)
        shard = parse_shard(args.shard) if args.shard is not None else None
        if shard is not None and not args.bootstrap:
            raise ValueError(f"--shard {args.shard} needs --bootstrap: the shards of a scenario drive one daemon")
        start_at = parse_start_at(args.start_at) if args.start_at is not None else None
    except ValueError as e:
        print(f"groupcoord: {e}", file=sys.stderr)
        return 2
    configure_logging(args.log_level)
    sc = _load(args)
    if sc is None:
        return 2
    raise_fd_limit()
    if args.bootstrap:
        for line in ignored_against_daemon(sc):
            print(f"groupcoord: warning: {args.scenario}: {line}", file=sys.stderr)
    token = args.admin_token or os.environ.get("GROUPCOORD_HTTP_TOKEN") or None
    try:
        runner = asyncio.run(run(sc, args.seed, args.out, bootstrap=args.bootstrap, admin=args.admin,
                                 admin_token=token, progress=not args.no_progress and sys.stderr.isatty(),
                                 until_stable=args.until_stable, share_connections=args.share_connections,
                                 processes=processes, shard=shard, start_at=start_at,
                                 log_level=args.log_level, event_format=args.events_format))
    except (OSError, ConnectionError) as e:
        print(f"groupcoord: cannot reach the coordinator: {e}", file=sys.stderr)
        return 1
    except RuntimeError as e:
        print(f"groupcoord: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return print_summary(runner.summary(runner.sorted_events), scenario=sc)


def print_summary(summary: dict, max_rows: int = 40, scenario=None) -> int:
    """The summary as a rich table (one row per group, then totals), the run's verdict line and
    the notes that explain it; returns the exit status (:func:`verdict`)."""
    from rich.console import Console
    from rich.table import Table
    head = f"{summary['mode']} {summary['scenario']} (seed {summary['seed']}): {summary['events']} events, " \
           f"{summary['clients']} clients, {summary['wall_s']} s wall"
    if summary.get("shard"):
        head += f", shard {summary['shard']}"
    if summary.get("processes"):
        head += f", {summary['processes']} processes"
    if summary.get("virtual_s"):
        head += f", {summary['virtual_s']} s virtual ({summary['virtual_s_per_wall_s']} virtual s per wall s)"
    outcome = verdict(summary, scenario)
    table = Table(title=head)
    cols = ("group", "state", "gen", "members", "rebalances", "max ms", "moved", "revoked", "lost",
            "commits", "stops", "expired", "violations", "zombies", "check")
    for c in cols:
        table.add_column(c, justify="left" if c in ("group", "state", "stops", "check") else "right")
    totals = {"rebalances": 0, "moved_partitions": 0, "revoked_partitions": 0, "lost_partitions": 0, "commits": 0,
              "expired": 0, "ownership_violations": 0, "zombie_overlaps": 0}
    groups = summary["groups"]
    for i, (name, g) in enumerate(groups.items()):
        for k in totals:
            totals[k] += g.get(k, 0)
        if i < max_rows:
            final = g.get("final", {})
            check = str(final.get("check", "")) + (" (expected)" if name in outcome.added_late else "")
            table.add_row(name, str(g.get("state")), str(g.get("generation")), str(g.get("members")),
                          str(g.get("rebalances", 0)), str(g.get("rebalance_ms_max", 0)),
                          str(g.get("moved_partitions", 0)), str(g.get("revoked_partitions", 0)),
                          str(g.get("lost_partitions", 0)), str(g.get("commits", 0)),
                          ", ".join(f"{k} {v}" for k, v in g.get("stops", {}).items()), str(g.get("expired", 0)),
                          str(g.get("ownership_violations", 0)), str(g.get("zombie_overlaps", 0)), check)
    if len(groups) > max_rows:
        table.add_row(f"... {len(groups) - max_rows} more", *[""] * (len(cols) - 1))
    checks = [g.get("final", {}).get("check") for g in groups.values()]
    total_check = f"{checks.count('ok')}/{len(checks)} ok" + \
        (f", {len(outcome.added_late)} expected" if outcome.added_late else "")
    table.add_row(f"total ({len(groups)})", "", "", "", str(totals["rebalances"]), "",
                  str(totals["moved_partitions"]), str(totals["revoked_partitions"]),
                  str(totals["lost_partitions"]), str(totals["commits"]), "", str(totals["expired"]),
                  str(totals["ownership_violations"]), str(totals["zombie_overlaps"]), total_check)
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    console.print(table)
    print(outcome.line)
    for note in summary.get("notes", []) + outcome.notes:
        print(f"note: {note}")
    if totals["zombie_overlaps"]:
        print(f"note: {totals['zombie_overlaps']} zombie overlap(s): partitions assigned while a client the "
              "coordinator had removed from the group (a frozen member, say) still believed it owned them; "
              "expected, not violations")
    return outcome.exit_status


@dataclass
class Verdict:
    """A run's verdict: ``line`` (one line: "verdict: OK", "NOT SETTLED" or "FAILED", and why),
    ``notes`` explaining it, the groups whose only unowned partitions are partitions added too late
    for the members to see them (``added_late``), and the exit status: 1 when ownership was violated
    (a partition given to a member while another member of the group still owned it), else 0 (a
    group may not have settled by the run's end, which the line says)."""
    line: str
    notes: list[str]
    added_late: list[str]
    exit_status: int


def verdict(summary: dict, scenario=None) -> Verdict:
    """The run's verdict from its summary's final checks (``final.check`` of each group: "ok",
    "unsettled...", "violated...") and ownership violations; ``scenario`` (a Scenario) explains
    partitions left unowned because they were added too late in the run for the members to see
    them (:func:`late_partitions`)."""
    groups = summary["groups"]
    violated, unsettled, added_late, notes, late_unowned = [], [], [], [], 0
    for name, g in groups.items():
        check = str(g.get("final", {}).get("check", ""))
        if check.startswith("violated") or g.get("ownership_violations"):
            violated.append(name)
            continue
        if check == "ok":
            continue
        unowned = re.fullmatch(r"unsettled: (\d+) partitions unowned", check)
        late = late_partitions(scenario, name, summary.get("virtual_s")) if scenario is not None and unowned else []
        if unowned and late and int(unowned.group(1)) <= sum(a.partitions for a in late):
            added_late.append(name)
            late_unowned += int(unowned.group(1))
            notes.append(f"{name}: " + _late_note(int(unowned.group(1)), late))
        else:
            final = g.get("final", {})
            why = [f"state {final['state']}"] if final.get("state") else []
            if final.get("members") is not None and final.get("running_clients") is not None:
                why.append(f"{final['members']} members of {final['running_clients']} running clients")
            unsettled.append(f"{name}: {check or 'no check'}" + (f" ({', '.join(why)})" if why else ""))
    every = "the group" if len(groups) == 1 else f"all {len(groups)} groups"
    if violated:
        line = (f"verdict: FAILED: ownership violated in {len(violated)} of {len(groups)} group(s) "
                f"({_names(violated)}): a partition given to a member while another member still owned it")
    elif unsettled:
        line = (f"verdict: NOT SETTLED: no ownership violations, but {len(unsettled)} of {len(groups)} group(s) had "
                f"not settled when the run ended ({_names(unsettled)}); a longer run (--duration) may let them")
    elif added_late:
        line = (f"verdict: OK: no ownership violations, and {every} settled but for {late_unowned} partition(s) "
                f"added late in the run that the members had not seen yet ({_names(added_late)}): expected, "
                f"see the note")
    else:
        line = f"verdict: OK: no ownership violations, and {every} settled"
    zombies = sum(g.get("zombie_overlaps", 0) for g in groups.values())
    if zombies and not violated:
        line += f"; {zombies} zombie overlap(s): expected, see the note"
    return Verdict(line, _merged(notes), added_late, 1 if violated else 0)


@dataclass
class LateAction:
    """An ``add_partitions`` action too late in the run for the members to have seen it."""
    topic: str
    before: int
    after: int
    at_ms: int
    seen_by_ms: int           # the latest a member sees it: at_ms + metadata.max.age.ms
    end_ms: int               # the run's end

    @property
    def partitions(self) -> int:
        return self.after - self.before


def late_partitions(scenario, group: str, end_s: float | None = None) -> list[LateAction]:
    """The ``add_partitions`` actions a classic group's members may not have seen by the run's end:
    on a topic the group subscribes to (at the end), less than the members' metadata.max.age.ms
    before the end (a member sees new partitions at its next metadata refresh, at the latest that
    long after its previous one). A consumer group (KIP-848) is assigned by the coordinator, which
    knows the partitions at once: none."""
    from groupcoord.client.consumer_config import CONSUMER_CONFIGS
    try:
        spec = scenario.spec_of(group)
    except KeyError:
        return []
    if spec.consumer:
        return []
    end_ms = int(end_s * 1000) if end_s else scenario.duration_ms
    max_age = int(spec.config.get("metadata.max.age.ms", CONSUMER_CONFIGS["metadata.max.age.ms"].default))
    topics, counts, late = set(spec.topics), dict(scenario.topics), []
    for ev in sorted(scenario.events, key=lambda e: e.at_ms):
        if ev.at_ms > end_ms:
            break
        target = ev.params.get("group")
        if ev.action == "subscribe" and target in (None, spec.name, group):
            topics = set(ev.params["topics"])
        elif ev.action == "add_partitions":
            topic, after = ev.params["topic"], ev.params["partitions"]
            before, counts[topic] = counts.get(topic, 0), after
            if after > before and ev.at_ms + max_age > end_ms:
                late.append(LateAction(topic, before, after, ev.at_ms, ev.at_ms + max_age, end_ms))
    return [a for a in late if a.topic in topics]


def _late_note(unowned: int, late: list[LateAction]) -> str:
    grown = "; ".join(f"{a.topic} grew from {a.before} to {a.after} partitions at {a.at_ms / 1000:g} s" for a in late)
    seen_by, end = max(a.seen_by_ms for a in late) / 1000, late[0].end_ms / 1000
    max_age = (late[0].seen_by_ms - late[0].at_ms) / 1000
    return (f"{unowned} partition(s) unowned at the end, no more than were added late: {grown}. A member sees new "
            f"partitions at its next metadata refresh, at the latest metadata.max.age.ms ({max_age:g} s) after its "
            f"previous one (so by {seen_by:g} s), and the run ended at {end:g} s. Expected, not a violation: a run "
            f"past {seen_by:g} s lets the members take them")


def _merged(notes: list[str]) -> list[str]:
    """Notes that differ only by the group they start with, as one note naming the groups."""
    by_text: dict[str, list[str]] = {}
    for note in notes:
        group, _, text = note.partition(": ")
        by_text.setdefault(text, []).append(group)
    return [f"{_names(groups)}: {text}" for text, groups in by_text.items()]


def _names(items: list[str], most: int = 3) -> str:
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")


def _sweep(args) -> int:
    from groupcoord.analytics import storage
    from groupcoord.analytics.cli import Interrupt, done
    from groupcoord.analytics.job import LogError, check_out

    from .sweep import GridError, load_grid, sweep
    with Interrupt() as interrupt:      # Ctrl-C: one line, Spark's JVM ended (as analyze)
        try:
            if not storage.is_uri(storage.local(args.out)):
                check_out(storage.local(args.out))      # before Spark starts
            axes, overrides = {}, {}
            for flag, items, into in (("--axis", args.axis, axes), ("--set", args.set, overrides)):
                for item in items:
                    key, sep, value = item.partition("=")
                    if not sep:
                        raise GridError(f"{flag} {item!r}: expected KEY=VALUE")
                    into[key.strip()] = _value(value.strip())
            analysis = sweep(args.grid, storage.local(args.out), master=args.master, conf=dict(args.conf),
                             axes=axes, overrides=overrides, started=interrupt.take_signal)
            if not interrupt.seen:
                cells = {c.cell: c.describe() for c in load_grid(args.grid, axes).cells}   # the verdicts name them so
                return done(analysis, cell_params=cells)
        except BaseException as e:
            if not interrupt.seen and not isinstance(e, KeyboardInterrupt):
                if isinstance(e, (GridError, LogError, storage.LocationError)):
                    print(f"groupcoord sweep: {e}", file=sys.stderr)
                    return 2
                raise
        return interrupt.interrupted(f"groupcoord sweep: interrupted; {args.out} may hold part of a sweep")
