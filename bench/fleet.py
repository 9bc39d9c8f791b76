"""Fleet benchmarks: how many members one machine sustains in real time, and how fast virtual
time runs.

(a) virtual: a scenario in virtual time (default examples/scenarios/hour-1000.toml, a 1,000-member
    hour): wall and CPU seconds, virtual seconds per wall second, requests per second; in one process
    and with the groups sharded over --workers processes (the same log).
(b) tcp: N members of one group (our client library, one asyncio loop in this process) against a
    `groupcoord serve` daemon in another process: seconds until every member is stable in one
    generation, then whether the group stays so for --hold seconds (no member lost). Each member has
    one connection (share_connections; --separate-connections: three, as the Java client).
(d) analyze: events per second the analyzer (`groupcoord analyze`, Spark) processes, against one
    Python process doing the same analysis (bench/analytics.py; a simulated log by default).
(c) memory: the same group in real time without sockets: the simulator's member cores and
    coordinator core paced by the wall clock (the simulator's real-time mode); time to Stable and
    how far the loop ever fell behind the clock.
(f) big: N members of one group over TCP against `groupcoord serve --profile test --in-memory` in a
    process of its own, the members spread over --processes processes (`groupcoord fleet --processes`),
    one connection each: seconds until every member is stable in one generation, whether the group
    keeps that generation for --hold seconds (a rebalance would bump it), and the CPU, memory (RSS) and
    descriptors of the daemon and of the fleet's processes (sampled from /proc every second): CPU
    seconds until Stable, and the share of a core while held. One row per --members value, then how
    each grows from the first row (bench/README.md has the numbers).
(e) instructions: machine instructions per request of the virtual-time scenario's steady state,
    counted by valgrind's callgrind (apt-get install valgrind): the difference of two runs, to
    virtual second 61 and to 64, over the difference of their requests, so set-up cancels. Wall
    times on a shared machine drift by 15%; this count does not (it is the one to compare changes by).

(h) shards: a run sharded over --workers processes (at least 2) as `groupcoord simulate --workers N
    --out D` runs it (the Parquet log; where processes fork): when each worker ended, how long the
    last ran alone after the first ended (the tail), the time from the last worker's end to the
    run's end (its result read, the merge), and each worker's CPU. Wall times drift from one run
    to the next; the tail and the merge are the figures to compare (bench/README.md). Then the
    merge alone (eventfile.write_parts) of the same run's parts, each file's row groups written
    after the merge makes each and on a thread of their own behind it, alternating, four times
    each (the files must be the same bytes).

(i) opcodes: the Python opcodes a request of the simulation between two virtual times (--window,
    default 700 to 730), in the scenario's first --groups groups (default 6; with --set), counted by
    sys.settrace: the total and the costliest functions, each with its calls a request. Slow (a
    tracing run), deterministic, and finer than instructions: the count the flat lane and the lanes
    were measured by (bench/README.md).

(g) floor: the simulator against the floor of its steady state (bench/sim_floor.py: the least a run
    must do for its heartbeats and auto-commits, one loop without the member, the coordinator or the
    driver), and against that floor with what a kernel of the steady state would keep besides to hand
    a member back exactly, one process each over the same scenario: CPU microseconds a request.

    python bench/fleet.py [virtual] [tcp] [memory] [analyze] [instructions] [floor] [--members 1000 5000] [--partitions P]
                          [--duration S] [--scenario PATH] [--hold 10] [--limit 300] [--profile N]
    python bench/fleet.py big --members 2000 5000 10000 --hold 300 --processes 2
    python bench/fleet.py shards [--set members=200] [--duration S] [--workers 2]

Goals (issue 6): 10,000 members in one group reach Stable in real time; a 1,000-member hour in
virtual time in under 60 s. Numbers depend on the machine: the run prints its CPU count and load.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from groupcoord.sim import fleet, scenario, simulate

ROOT = Path(__file__).resolve().parents[1]


def one_group(members: int, *, duration: float, partitions: int, profile: str = "default",
              join_interval_ms: int = 0, group_protocol: str = "classic") -> scenario.Scenario:
    group = {"name": "big", "topics": ["t"], "members": members, "processing_ms": 1000, "records_per_poll": 0,
             "join_interval_ms": join_interval_ms}
    if group_protocol == "consumer":
        group["group_protocol"] = "consumer"       # KIP-848: the coordinator assigns (uniform)
    else:
        group["strategy"] = "range"
    return scenario.from_dict({
        "name": f"one-group-{members}", "duration_s": duration, "topics": {"t": partitions},
        "coordinator": {"profile": profile, "config": {"group.initial.rebalance.delay.ms": 3000}},
        "groups": [group]})


#: big with --group-protocol consumer: Kafka's defaults for consumer groups over the test profile's
#: (heartbeat 250 ms, session 6 s, assignment at once): 50,000 members at 250 ms would be 200,000
#: heartbeats a second
CONSUMER_DEFAULTS = {"group.consumer.heartbeat.interval.ms": 5000, "group.consumer.min.heartbeat.interval.ms": 5000,
                     "group.consumer.session.timeout.ms": 45000, "group.consumer.min.session.timeout.ms": 45000,
                     "group.consumer.assignment.interval.ms": 1000}


def bench_virtual(path: Path, duration: float | None, profile: int = 0, workers: int = 1) -> None:
    sc = scenario.load(path)
    if duration:
        sc = scenario.apply_overrides(sc, {"duration_s": duration})
    if workers > 1 and not profile:
        t0 = time.perf_counter()
        events, summary, _ = simulate.simulate(sc, sc.seed, workers=workers)
        wall = time.perf_counter() - t0
        ok = sum(1 for g in summary["groups"].values() if g.get("final", {}).get("check") == "ok")
        print(f"virtual  {sc.name}: {sc.total_members()} members, {sc.duration_s:.0f} virtual s in {wall:.1f} s wall "
              f"with {summary.get('workers', 1)} processes -> {sc.duration_s / wall:.1f} virtual s per wall s; "
              f"{summary['stats']['requests']} requests, {len(events)} events, {ok}/{len(summary['groups'])} "
              f"groups ok at the end")
        return
    sim = simulate.Simulator(sc, sc.seed)
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    cpu0 = time.process_time()
    events = sim.run()
    cpu = time.process_time() - cpu0
    if prof is not None:
        import pstats
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(profile)
    summary = sim.summary(events)
    ok = sum(1 for g in summary["groups"].values() if g.get("final", {}).get("check") == "ok")
    print(f"virtual  {sc.name}: {sc.total_members()} members, {sc.duration_s:.0f} virtual s in "
          f"{sim.wall_s:.1f} s wall / {cpu:.1f} s CPU -> {sc.duration_s / sim.wall_s:.1f} virtual s per wall s "
          f"({sc.duration_s / cpu:.1f} per CPU s); {sim.stats['requests']} requests "
          f"({sim.stats['requests'] / cpu:.0f} per CPU s), {len(events)} events, {ok}/{len(summary['groups'])} "
          f"groups ok at the end")


def _daemon(partitions: int):
    cmd = [sys.executable, "-m", "groupcoord.cli", "serve", "--port", "0", "--no-data-dir",
           "--log-level", "warning", "--topic", f"t:{partitions}",
           "--set", "group.initial.rebalance.delay.ms=3000"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if line.startswith("bootstrap servers:"):
            return proc, line.split(":", 1)[1].strip()
    raise RuntimeError("the daemon did not start")


def bench_tcp(members: int, partitions: int, hold: float, limit: float, share: bool = True) -> None:
    proc, bootstrap = _daemon(partitions)
    try:
        sc = one_group(members, duration=limit, partitions=partitions)
        t0 = time.perf_counter()
        runner = asyncio.run(fleet.run(sc, 1, bootstrap=bootstrap, until_stable=True, hold_s=hold,
                                       share_connections=share))
        wall = time.perf_counter() - t0
        lost = sum(1 for e in runner.sorted_events if e["event"] == "client.lost")
        check = runner.final.get("big")
        if runner.stable_at is None:
            print(f"tcp      {members} members ({partitions} partitions): not stable within {limit:.0f} s (check: {check})")
        else:
            print(f"tcp      {members} members ({partitions} partitions): stable after {runner.stable_at:.1f} s; after {hold:.0f} s more: "
                  f"{check}, {lost} partitions lost (run {wall:.1f} s)")
    except OSError as e:
        print(f"tcp      {members} members: {e}")
    finally:
        _stop(proc)


def _stop(proc) -> None:
    """Stop the daemon: SIGTERM, then SIGKILL if it has not gone after a minute."""
    proc.terminate()
    try:
        proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()


class _Sampler:
    """CPU seconds (user + system), RSS and descriptors of the daemon and of the fleet's processes
    (this one and its children but the daemon), from /proc every ``period`` s in a thread."""

    def __init__(self, daemon_pid: int, period: float = 1.0):
        import threading
        self.daemon_pid = daemon_pid
        self.period = period
        self.samples: list[dict] = []
        self.cpu_seen: dict[int, float] = {}       # pid -> the latest CPU seconds read
        self.daemon_fds_max = self.fleet_fds_max = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bench-sampler", daemon=True)
        self._tick = os.sysconf("SC_CLK_TCK")
        self._page = os.sysconf("SC_PAGE_SIZE")

    def __enter__(self) -> "_Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _stat(self, pid: int) -> tuple[float, int, int] | None:
        """(CPU seconds, RSS bytes, parent pid) of a process, None once it is gone."""
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/statm") as f:
                rss = int(f.read().split()[1]) * self._page
        except (OSError, IndexError, ValueError):
            return None
        return (int(fields[11]) + int(fields[12])) / self._tick, rss, int(fields[1])

    def _fleet_pids(self) -> list[int]:
        me = os.getpid()
        pids = [me]
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) not in (me, self.daemon_pid):
                st = self._stat(int(name))
                if st is not None and st[2] == me:
                    pids.append(int(name))
        return pids

    @staticmethod
    def _fds(pid: int) -> int:
        try:
            return len(os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            return 0

    def sample(self, fds: bool = False) -> dict:
        out = {"t": time.monotonic(), "daemon_cpu": 0.0, "daemon_rss": 0, "fleet_rss": 0, "fleet_procs": 0}
        st = self._stat(self.daemon_pid)
        if st is not None:
            out["daemon_cpu"], out["daemon_rss"] = st[0], st[1]
            if fds:
                self.daemon_fds_max = max(self.daemon_fds_max, self._fds(self.daemon_pid))
        for pid in self._fleet_pids():
            st = self._stat(pid)
            if st is None:
                continue
            self.cpu_seen[pid] = st[0]
            out["fleet_rss"] += st[1]
            out["fleet_procs"] += 1
            if fds:
                self.fleet_fds_max = max(self.fleet_fds_max, self._fds(pid))
        out["fleet_cpu"] = sum(self.cpu_seen.values())     # (a process that ended keeps its last)
        self.samples.append(out)
        return out

    def _loop(self) -> None:
        n = 0
        while not self._stop.is_set():
            self.sample(fds=n % 5 == 0)
            n += 1
            self._stop.wait(self.period)

    def at(self, t: float) -> dict:
        """The first sample at or after monotonic time t (else the last)."""
        return next((s for s in self.samples if s["t"] >= t), self.samples[-1])


def _raise_fd_limit() -> None:
    """The daemon (our child) inherits it."""
    fleet.raise_fd_limit()


def bench_big(members: int, partitions: int, hold: float, limit: float, processes: int, delay_ms: int,
              join_interval_ms: int, group_protocol: str = "classic") -> dict:
    """(f): one row of the big table (see the module's docstring)."""
    cmd = [sys.executable, "-m", "groupcoord.cli", "serve", "--profile", "test", "--in-memory",
           "--port", "0", "--log-level", "warning", "--topic", f"t:{partitions}",
           "--set", f"group.initial.rebalance.delay.ms={delay_ms}",
           # a fleet member's share of the group record is ~90-150 bytes: 10,000 of them are near or over
           # Kafka's default message.max.bytes (1 MB), which a group that size needs raised, on Kafka as here
           "--set", "message.max.bytes=16777216"]
    if group_protocol == "consumer":
        for key, value in CONSUMER_DEFAULTS.items():
            cmd += ["--set", f"{key}={value}"]
    _raise_fd_limit()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    bootstrap = None
    for line in proc.stdout:
        if line.startswith("bootstrap servers:"):
            bootstrap = line.split(":", 1)[1].strip()
            break
    row = {"members": members, "partitions": partitions, "processes": processes, "protocol": group_protocol,
           "load0": os.getloadavg()[0]}
    try:
        if bootstrap is None:
            raise RuntimeError("the daemon did not start")
        sc = one_group(members, duration=limit + hold, partitions=partitions, join_interval_ms=join_interval_ms,
                       group_protocol=group_protocol)
        with _Sampler(proc.pid) as sampler:
            start = sampler.sample(fds=True)
            runner = asyncio.run(fleet.run(sc, 1, bootstrap=bootstrap, until_stable=True, hold_s=hold,
                                           share_connections=True, processes=processes))
            end = sampler.sample(fds=True)
            peak = 0
            try:
                with open(f"/proc/{proc.pid}/status") as f:
                    peak = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
            except (OSError, StopIteration):
                pass
        row.update(check=runner.final.get("big"), stable_s=runner.stable_at, notes=runner.notes,
                   daemon_rss_peak=peak, daemon_fds=sampler.daemon_fds_max, fleet_fds=sampler.fleet_fds_max,
                   lost=sum(1 for e in runner.sorted_events if e["event"] == "client.lost"),
                   load1=os.getloadavg()[0])
        if runner.stable_at is not None:
            t_stable = runner._t0 + runner.stable_at
            at = sampler.at(t_stable)
            held = min(end["t"] - at["t"], hold) or 1.0
            row.update(
                gen_stable=runner.stable_generations.get("big"), gen_end=runner.final_generations.get("big"),
                daemon_cpu_to_stable=at["daemon_cpu"] - start["daemon_cpu"],
                fleet_cpu_to_stable=at["fleet_cpu"] - start["fleet_cpu"],
                daemon_cpu_hold=(end["daemon_cpu"] - at["daemon_cpu"]) / held,
                fleet_cpu_hold=(end["fleet_cpu"] - at["fleet_cpu"]) / held,
                daemon_rss_stable=at["daemon_rss"], fleet_rss_stable=at["fleet_rss"])
        else:
            last = sampler.samples[-1]
            row.update(daemon_cpu_to_stable=last["daemon_cpu"] - start["daemon_cpu"],
                       fleet_cpu_to_stable=last["fleet_cpu"] - start["fleet_cpu"],
                       daemon_rss_stable=max(s["daemon_rss"] for s in sampler.samples),
                       fleet_rss_stable=max(s["fleet_rss"] for s in sampler.samples),
                       unstable=f"not stable in {limit:.0f} s: {runner.last_progress[0]}/{runner.last_progress[1]} "
                                f"members stable ({r_check(runner)})")
        return row
    finally:
        _stop(proc)


def r_check(runner) -> str:
    return str(runner.final.get("big"))


def print_big(rows: list[dict], hold: float) -> None:
    mb = 1 << 20
    print(f"\nbig: one group over TCP ({rows[0].get('protocol', 'classic')} protocol), daemon `groupcoord serve "
          f"--profile test --in-memory` in its own process, one connection per member; held {hold:.0f} s")
    head = ("members", "procs", "parts", "stable s", "held", "gen", "daemon CPU s", "daemon CPU held",
            "daemon RSS MB", "peak MB", "fleet CPU s", "fleet CPU held", "fleet RSS MB", "daemon fds",
            "fleet fds/proc", "load")
    print(" | ".join(head))
    print(" | ".join("-" * len(h) for h in head))
    for r in rows:
        stable = f"{r['stable_s']:.1f}" if r.get("stable_s") is not None else "not stable"
        held = "-"
        if r.get("gen_stable") is not None:
            held = "yes" if r["check"] == "ok" and r["gen_stable"] == r["gen_end"] and len(r["gen_end"]) == 1 \
                else f"no ({r['check']})"
        gen = "-" if r.get("gen_stable") is None else f"{r['gen_stable']}->{r['gen_end']}"
        print(" | ".join(str(x) for x in (
            r["members"], r["processes"], r["partitions"], stable, held, gen, f"{r['daemon_cpu_to_stable']:.1f}",
            f"{r['daemon_cpu_hold']:.0%}" if "daemon_cpu_hold" in r else "-",
            f"{r['daemon_rss_stable'] / mb:.0f}", f"{r['daemon_rss_peak'] / mb:.0f}",
            f"{r['fleet_cpu_to_stable']:.1f}", f"{r['fleet_cpu_hold']:.0%}" if "fleet_cpu_hold" in r else "-",
            f"{r['fleet_rss_stable'] / mb:.0f}", r["daemon_fds"], r["fleet_fds"], f"{r['load0']:.1f}->{r['load1']:.1f}")))
        if r.get("unstable"):
            print(f"    {r['unstable']}; the columns after 'gen' cover the whole run (RSS: its largest)")
        for note in r.get("notes", [])[:3]:
            print(f"    note: {note}")
    base = rows[0]
    if len(rows) > 1 and base.get("stable_s"):
        print(f"\ngrowth against {base['members']} members (x members: time to Stable, daemon CPU to Stable, "
              f"daemon RSS; per member: daemon CPU ms to Stable, daemon RSS KB):")
        for r in rows:
            k = r["members"] / base["members"]
            stable = f"x{r['stable_s'] / base['stable_s']:.2f}" if r.get("stable_s") else "-"
            print(f"  {r['members']:>6} (x{k:.1f}): {stable}, x{r['daemon_cpu_to_stable'] / base['daemon_cpu_to_stable']:.2f}, "
                  f"x{r['daemon_rss_stable'] / base['daemon_rss_stable']:.2f}; "
                  f"{1000 * r['daemon_cpu_to_stable'] / r['members']:.2f} ms, "
                  f"{r['daemon_rss_stable'] / r['members'] / 1024:.1f} KB")


def bench_memory(members: int, partitions: int, limit: float) -> None:
    sc = one_group(members, duration=limit, partitions=partitions)
    sim = simulate.Simulator(sc, 1, realtime=True)

    def stable() -> bool:
        group = sim.service.group_coordinator.group("big")
        running = [c.handle.peek() for c in sim.clients.values() if c.handle is not None and not c.handle.dead]
        return simulate.ownership_check(sim.service, group, running) == "ok"
    t0 = time.perf_counter()
    sim.run(until=stable)
    wall = time.perf_counter() - t0
    if sim.now < sim.scenario.duration_ms:
        print(f"memory   {members} members ({partitions} partitions): stable at {sim.now / 1000:.1f} s of the clock, reached after "
              f"{wall:.1f} s wall (the loop fell at most {sim.max_lag_ms / 1000:.1f} s behind the clock)")
    else:
        print(f"memory   {members} members ({partitions} partitions): not stable within {limit:.0f} s ({wall:.1f} s wall)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parts", nargs="*", choices=["virtual", "tcp", "memory", "analyze", "instructions", "big", "floor",
                                                    "shards", "opcodes"],
                    default=[])
    ap.add_argument("--scenario", type=Path, default=ROOT / "examples" / "scenarios" / "hour-1000.toml")
    ap.add_argument("--duration", type=float, default=None, help="virtual: override the scenario's duration")
    ap.add_argument("--members", type=int, nargs="+", default=[1000, 2000, 5000, 10000])
    ap.add_argument("--partitions", type=int, default=None,
                    help="real time: partitions of the group's topic (default: min(members, 1000)); every "
                         "member reads the topic's whole metadata, so members x partitions is the cost")
    ap.add_argument("--hold", type=float, default=10.0, help="tcp: seconds to stay stable")
    ap.add_argument("--separate-connections", action="store_true",
                    help="tcp: one connection per member and role, as the Java client (3 per member: "
                         "the fd limit caps a daemon near 6,600 members); default one per member")
    ap.add_argument("--limit", type=float, default=300.0, help="real time: give up after this many seconds")
    ap.add_argument("--processes", type=int, default=2, help="big: the fleet's processes (fleet --processes)")
    ap.add_argument("--initial-delay-ms", type=int, default=3000,
                    help="big: the daemon's group.initial.rebalance.delay.ms (Kafka's default; the test "
                         "profile's is 0)")
    ap.add_argument("--group-protocol", choices=["classic", "consumer"], default="classic",
                    help="big: the group's protocol (consumer: KIP-848 with Kafka's default heartbeat 5 s, "
                         "session 45 s and assignment interval 1 s set on the daemon)")
    ap.add_argument("--join-interval-ms", type=int, default=0,
                    help="big: member i starts at i times this (default 0: all at once)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, os.cpu_count() or 1],
                    help="virtual: processes the groups are spread over (the same log; default 1 and one per CPU)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="shards: a scenario override, as simulate's --set (members=200: 10,000 members)")
    ap.add_argument("--window", type=float, nargs=2, default=[700.0, 730.0], metavar=("FROM", "TO"),
                    help="opcodes: the virtual seconds counted")
    ap.add_argument("--groups", type=int, default=6, help="opcodes: the scenario's first N groups")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="virtual: run under cProfile and print its N costliest functions (slows the run)")
    args = ap.parse_args()
    parts = args.parts or ["virtual", "tcp", "memory", "analyze"]
    logging.disable(logging.WARNING)
    # the interpreter's build matters: pyenv builds without profile-guided optimization by default,
    # and such a 3.11 ran the simulator 10 to 20% slower here than Debian's python3.11
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; Python {platform.python_version()} "
          f"({sys.executable})")
    if "virtual" in parts:
        for workers in ([1] if args.profile else args.workers):
            bench_virtual(args.scenario, args.duration, args.profile, workers)
    for n in args.members if {"tcp", "memory"} & set(parts) else []:
        partitions = args.partitions or min(n, 1000)
        if "tcp" in parts:
            bench_tcp(n, partitions, args.hold, args.limit, share=not args.separate_connections)
        if "memory" in parts:
            bench_memory(n, partitions, min(args.limit, 120.0))
    if "big" in parts:
        rows = []
        for n in args.members:
            rows.append(bench_big(n, args.partitions or min(n, 1000), args.hold, args.limit, args.processes,
                                  args.initial_delay_ms, args.join_interval_ms, args.group_protocol))
            print_big(rows[-1:], args.hold)
            sys.stdout.flush()
        print_big(rows, args.hold)
    if "analyze" in parts:
        bench_analyze()
    if "instructions" in parts:
        bench_instructions(args.scenario)
    if "floor" in parts:
        bench_floor(args.scenario, args.duration)
    if "shards" in parts:
        bench_shards(args.scenario, args.duration, args.set, max(2, *args.workers))
    if "opcodes" in parts:
        bench_opcodes(args.scenario, args.set, args.window, args.groups)


_t0 = 0.0       # (shards: the run's start, which the forked workers inherit)


def _timed_worker(run, into: Path):
    def worker(job):
        done = run(job)
        cpu = os.times()
        (into / str(os.getpid())).write_text(f"{time.time() - _t0} {cpu.user + cpu.system} {len(done)}")
        return done
    return worker


def bench_shards(path: Path, duration: float | None, sets: list[str], workers: int) -> None:
    """(h): a sharded run to a Parquet log: each worker's end, the tail and the merge."""
    import pickle
    import tempfile
    from groupcoord.sim import model
    from groupcoord.sim.cli import _load          # (simulate's --set and --duration)
    global _t0
    sc = _load(argparse.Namespace(scenario=path, set=sets, duration=duration))
    if sc is None:
        return
    if len(simulate.shards(sc, workers)) < 2:
        print(f"shards   {sc.name}: fewer than two shards with --workers {workers}: nothing to measure")
        return
    print(f"shards   {sc.name}: {sc.total_members()} members, {sc.duration_s:.0f} virtual s, --workers {workers}",
          flush=True)
    run = simulate._run_batches_to_elsewhere
    merge = model.write_parts
    held: list = []
    kept = [0.0]            # the seconds the copy of the parts took (not the run's: left out below)

    def write_parts(out, parts, keys):        # (the parts kept for bench_merge: this empties them)
        t0 = time.perf_counter()
        held[:] = [pickle.dumps(parts, pickle.HIGHEST_PROTOCOL), keys]
        kept[0] = time.perf_counter() - t0
        return merge(out, parts, keys)
    with tempfile.TemporaryDirectory() as tmp:
        ends = Path(tmp) / "ends"
        ends.mkdir()
        try:
            model.write_parts = write_parts
            simulate._run_batches_to_elsewhere = _timed_worker(run, ends)    # (the workers are forked: they inherit it)
            _t0 = time.time()
            summary, _ = simulate.simulate_to(sc, sc.seed, Path(tmp) / "out", workers=workers,
                                              event_format="parquet")
            end = time.time() - _t0 - kept[0]
        finally:
            simulate._run_batches_to_elsewhere = run
            model.write_parts = merge
        rows = sorted(tuple(map(float, f.read_text().split())) for f in ends.iterdir())
    for at, cpu, batches in rows:
        print(f"  a worker ended at {at:.2f} s: {int(batches)} batches, {cpu:.1f} s CPU")
    print(f"  tail {rows[-1][0] - rows[0][0]:.2f} s; all done at {end:.2f} s, {end - rows[-1][0]:.2f} s after the "
          f"last worker's end (its result read, the merge; the bench's copy of the parts, {kept[0]:.2f} s, left "
          f"out); {summary['events']} events, workers' CPU {sum(r[1] for r in rows):.1f} s")
    if held:
        bench_merge(*held)


def bench_merge(parts: bytes, keys: list) -> None:
    """The merge of a sharded run's parts (pickled: write_parts empties them), each file's row groups
    written after the merge makes each and written behind it (eventfile._WRITE_BEHIND), alternating:
    seconds of each, and whether their files are the same."""
    import hashlib
    import pickle
    import tempfile
    from groupcoord.sim import eventfile
    behind = eventfile._WRITE_BEHIND
    times: dict[bool, list[float]] = {False: [], True: []}
    digests = set()
    try:
        for i in range(4):
            for way in (False, True) if i % 2 else (True, False):      # (each way first as often)
                eventfile._WRITE_BEHIND = way
                with tempfile.TemporaryDirectory() as tmp:
                    copy = pickle.loads(parts)
                    t0 = time.perf_counter()
                    files = eventfile.write_parts(tmp, copy, keys)
                    times[way].append(time.perf_counter() - t0)
                    digest = hashlib.sha256()
                    for f in sorted(files.iterdir()):
                        digest.update(f.name.encode() + f.read_bytes())
                    digests.add(digest.hexdigest())
    finally:
        eventfile._WRITE_BEHIND = behind
    print("  the merge alone: " + "; ".join(("written behind " if way else "written after ")
                                              + ", ".join(f"{t:.2f}" for t in ts) + " s" for way, ts in times.items())
          + ("; the same files" if len(digests) == 1 else "; THE FILES DIFFER"))


def bench_floor(path: Path, duration: float | None) -> None:
    """(g): CPU per request of the floor (bench/sim_floor.py) and of the simulator, one process each."""
    import sim_floor
    sc = scenario.load(path)
    if duration:
        sc = scenario.apply_overrides(sc, {"duration_s": duration})
    low = sim_floor.run(sc)
    print(f"floor    {sc.name}: {low['requests']} requests, {low['events']} events, {low['items']} items in "
          f"{low['cpu_s']:.2f} s CPU -> {low['us_per_request']:.2f} us a request", flush=True)
    kept = sim_floor.run(sc, kept=True)
    print(f"kept     {sc.name} (the floor with a kernel's bookkeeping): {kept['requests']} requests, "
          f"{kept['items']} items in {kept['cpu_s']:.2f} s CPU -> {kept['us_per_request']:.2f} us a request",
          flush=True)
    sim = simulate.Simulator(sc, sc.seed)
    cpu0 = time.process_time()
    events = sim.run()
    cpu = time.process_time() - cpu0
    per = cpu / sim.stats["requests"] * 1e6
    print(f"simulate {sc.name}: {sim.stats['requests']} requests, {len(events)} events in {cpu:.2f} s CPU -> "
          f"{per:.2f} us a request, x{per / low['us_per_request']:.2f} the floor")


def bench_instructions(path: Path, spans=(61, 64)) -> None:
    """(e): callgrind's instruction count per request between two virtual times (both runs at once)."""
    import shutil
    import tempfile
    if shutil.which("valgrind") is None:
        print("instructions: valgrind is not installed (apt-get install valgrind)")
        return
    code = ("import sys, logging; logging.disable(logging.WARNING); "
            "from groupcoord.sim import scenario, simulate; "
            "sc = scenario.apply_overrides(scenario.load(sys.argv[1]), {'duration_s': float(sys.argv[2])}); "
            "s = simulate.Simulator(sc, sc.seed); s.run(); print('requests', s.stats['requests'])")
    with tempfile.TemporaryDirectory() as tmp:
        procs = [subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.{d}",
                                   sys.executable, "-c", code, str(path), str(d)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env={**os.environ, "PYTHONHASHSEED": "0"}) for d in spans]
        counts = []
        for p in procs:
            out, err = p.communicate()
            requests = int(out.split()[-1])
            collected = next(int(line.split()[-1]) for line in err.splitlines() if "Collected" in line)
            counts.append((requests, collected))
    (r0, i0), (r1, i1) = counts
    print(f"instructions  {path.stem}, virtual s {spans[0]} to {spans[1]}: {(i1 - i0) / (r1 - r0):,.0f} "
          f"instructions per request ({r1 - r0} requests)")


def bench_opcodes(path: Path, sets: list[str], window: list[float], groups: int, top: int = 25) -> None:
    """(i): Python opcodes a request between two virtual times, by function (sys.settrace)."""
    import collections
    from groupcoord.sim.cli import _load          # (simulate's --set)
    start, end = (int(s * 1000) for s in window)
    # (the run goes on past the window, so that until() ends it there before the log's final sort)
    sc = _load(argparse.Namespace(scenario=path, set=sets, duration=window[1] + 60))
    if sc is None:
        return
    sim = simulate.Simulator(sc, sc.seed, groups=sc.group_ids()[:groups])
    ops: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()

    def trace(frame, event, arg):
        code = frame.f_code
        key = (Path(code.co_filename).name, code.co_name)
        calls[key] += 1
        frame.f_trace_opcodes = True

        def local(frame, event, arg):
            if event == "opcode":
                ops[key] += 1
            return local
        return local
    requests = [0]

    def until() -> bool:             # (checked at the end of a ms, about every 1024 items: the edges)
        if not requests[0] and sim.now >= start:
            requests[0] = sim.stats["requests"] or -1
            sys.settrace(trace)
        elif requests[0] and sim.now >= end:
            sys.settrace(None)
            return True
        return False
    try:
        sim.run(until)
    finally:
        sys.settrace(None)
    n = sim.stats["requests"] - max(requests[0], 0)
    if not requests[0] or n <= 0:
        print(f"opcodes  {sc.name}: no request within virtual s {window[0]:g} to {window[1]:g}")
        return
    print(f"opcodes  {sc.name} ({min(groups, len(sc.group_ids()))} groups), virtual s {window[0]:g} to "
          f"{window[1]:g}: {sum(ops.values()) / n:,.0f} opcodes and {sum(calls.values()) / n:.1f} calls a "
          f"request ({n} requests)")
    for key, count in ops.most_common(top):
        print(f"  {count / n:8.1f} {calls[key] / n:6.2f}  {key[0]}:{key[1]}")


def bench_analyze() -> None:
    """The analyzer's events per second: bench/analytics.py (Spark against one Python process)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_analytics", Path(__file__).with_name("analytics.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    print("analyze:")
    module.main([])


if __name__ == "__main__":
    main()
