"""One group of 10,000 to 50,000 members in virtual time (issue #33).

For each --members value and each kind, one run of the simulator (sim/simulate.py, virtual time, no
sockets) in a process of its own: one group of N members, all started at t=0, subscribed to one topic
of --partitions partitions, run until every member is stable in one generation owning disjoint
partitions that cover the topic (sim.simulate.ownership_check, what the simulator's summary calls
"ok"). Kinds:

* classic: the classic protocol (JoinGroup/SyncGroup), the client-side assignor --strategy (range by
  default), Kafka's default timeouts (session 45 s, heartbeat 3 s, rebalance 300 s);
  group.initial.rebalance.delay.ms 3000 (Kafka's default), so the group forms in one generation.
* consumer: KIP-848 (ConsumerGroupHeartbeat), the coordinator's default assignor (uniform), the
  default profile (heartbeat 5 s, session 45 s, assignment interval 1 s).

Columns: virtual s until Stable, the run's wall and CPU seconds until then (the whole process:
simulator, member cores, coordinator), the coordinator's CPU seconds (time.process_time around every
call the simulator makes into the Service: handle, which runs the handler and any parked request it
completes, and advance, which runs due timers; the time spent in the simulator's own respond
callbacks inside them is measured too and taken off), per member in microseconds, the requests the
coordinator served, and the process's peak RSS (VmHWM). The members' share is the rest. Then the run
goes on --hold virtual seconds: "held" says the group kept its generation and its check, and the
coordinator's CPU per request of that steady state (heartbeats and auto-commits) is shown.

Broker configs set as a group this size needs them on Kafka: message.max.bytes 16 MiB (the classic
group's one record carries every member's subscription and assignment: about 125 bytes a member here,
6.2 MB at 50,000; Kafka refuses a record over the offsets topic's max.message.bytes, 1 MB by default:
about 8,400 members); group.max.size and group.consumer.max.size are Kafka's defaults
(Integer.MAX_VALUE) and set anyway. --set adds or overrides a broker config.

    python bench/big_group.py --members 10000 20000 50000
    python bench/big_group.py --members 10000 20000 --join-interval-ms 10 --hold 5    # 100 joins a second
    python bench/big_group.py --members 10000 20000 --kinds consumer --join-interval-ms 10 \
        --set group.consumer.assignment.interval.ms=10000
    python bench/big_group.py --members 10000 20000 --kinds consumer --profile 25   # cProfile, 25 rows
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONFIG = {
    "group.initial.rebalance.delay.ms": 3000,
    "message.max.bytes": 16 << 20,
    "group.max.size": 2**31 - 1,
    "group.consumer.max.size": 2**31 - 1,
}


def scenario_of(kind: str, members: int, partitions: int, strategy: str, limit_s: float, join_interval_ms: int = 0,
                config: dict | None = None):
    from groupcoord.sim import scenario
    group = {"name": "big", "topics": ["t"], "members": members, "processing_ms": 1000, "records_per_poll": 0,
             "join_interval_ms": join_interval_ms}
    if kind == "consumer":
        group["group_protocol"] = "consumer"
    else:
        group["strategy"] = strategy
    return scenario.from_dict({
        "name": f"big-{kind}-{members}", "duration_s": limit_s, "topics": {"t": partitions},
        "coordinator": {"profile": "default", "config": {**CONFIG, **(config or {})}}, "groups": [group]})


class CoordinatorClock:
    """process_time spent in the Service's handle and advance, less the simulator's callbacks run
    inside them (respond: scheduling the delivery)."""

    def __init__(self, service):
        self.cpu = 0.0
        self.calls = 0
        self._inner = 0.0
        clock = time.process_time
        handle, advance = service.handle, service.advance

        def respond_wrapped(respond, resp):
            t0 = clock()
            respond(resp)
            self._inner += clock() - t0

        def timed_handle(ctx, body, respond):
            self.calls += 1
            inner0 = self._inner
            t0 = clock()
            handle(ctx, body, lambda resp, respond=respond: respond_wrapped(respond, resp))
            self.cpu += clock() - t0 - (self._inner - inner0)

        def timed_advance(now_ms=None):
            inner0 = self._inner
            t0 = clock()
            n = advance(now_ms)
            self.cpu += clock() - t0 - (self._inner - inner0)
            return n

        service.handle, service.advance = timed_handle, timed_advance


def peak_rss() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))


def worker(job: dict) -> dict:
    """One run, in this process."""
    from groupcoord.sim import simulate
    logging.disable(logging.WARNING)
    sc = scenario_of(job["kind"], job["members"], job["partitions"], job["strategy"], job["limit_s"],
                     job.get("join_interval_ms", 0), job.get("config"))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    sim = simulate.Simulator(sc, 1)
    clock = CoordinatorClock(sim.service) if not job.get("profile") else None
    setup_cpu = time.process_time() - cpu0
    members = job["members"]
    hold_ms = int(job.get("hold_s", 0) * 1000)
    at_stable: dict = {}

    def check() -> str:
        group = simulate.find_group(sim.service, "big")
        # the cheap part first: the full check walks every member
        if group is None or group.state != "Stable" or len(group.members) != members:
            return "unsettled"
        running = [c.handle.peek() for c in sim.clients.values() if c.handle is not None and not c.handle.dead]
        return simulate.ownership_check(sim.service, group, running)

    def stable() -> bool:
        if not at_stable:
            if check() != "ok":
                return False
            at_stable.update(now=sim.now, cpu=time.process_time(), wall=time.perf_counter(),
                             coord=clock.cpu if clock else 0.0, calls=clock.calls if clock else sim.stats["requests"],
                             generation=simulate.find_group(sim.service, "big").generation_id)
        # then held for hold_s virtual seconds (the steady state's heartbeats)
        return sim.now >= at_stable["now"] + hold_ms

    prof = None
    if job.get("profile"):
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    sim.run(until=stable)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    if prof is not None:
        import io
        import pstats
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(job["profile"])
        sys.stderr.write(out.getvalue())
    if clock is not None and not clock.calls and sim.stats["requests"]:
        raise RuntimeError("the simulator no longer calls Service.handle: the coordinator's clock saw nothing")
    group = simulate.find_group(sim.service, "big")
    gens = sorted({c.handle.member.generation_id for c in sim.clients.values() if c.handle is not None})
    row = {**job, "stable": bool(at_stable), "rss": peak_rss(), "generations": gens}
    if not at_stable:
        return {**row, "virtual_s": sim.now / 1000, "wall_s": wall, "cpu_s": cpu, "coord_cpu_s": None,
                "requests": sim.stats["requests"]}
    held = check() == "ok" and group.generation_id == at_stable["generation"]
    if group.type == "classic":       # what message.max.bytes must allow
        from groupcoord.coordinator.group.classic.records import group_record_size
        row["record_bytes"] = group_record_size(group)
    return {**row, "virtual_s": at_stable["now"] / 1000, "wall_s": at_stable["wall"] - wall0,
            "cpu_s": at_stable["cpu"] - cpu0, "setup_cpu_s": setup_cpu,
            "coord_cpu_s": at_stable["coord"] if clock else None, "requests": at_stable["calls"],
            "held": held, "hold_cpu_s": cpu - (at_stable["cpu"] - cpu0),
            "hold_coord_cpu_s": clock.cpu - at_stable["coord"] if clock else None,
            "hold_requests": clock.calls - at_stable["calls"] if clock else None}


def run_job(job: dict) -> dict:
    out = subprocess.run([sys.executable, __file__, "--worker", json.dumps(job)], stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        return {**job, "error": f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def print_rows(rows: list[dict]) -> None:
    head = ("kind", "members", "parts", "stable at virtual s", "gen", "wall s", "CPU s", "coordinator CPU s",
            "coordinator us/member", "requests", "held", "hold CPU s", "coordinator us/request held",
            "peak RSS MB", "load")
    print(" | ".join(head))
    print(" | ".join("-" * len(h) for h in head))
    for r in rows:
        if "error" in r:
            print(f"{r['kind']} | {r['members']} | {r['partitions']} | {r['error']}")
            continue
        kind = r["kind"] if r["kind"] == "consumer" else f"classic ({r['strategy']})"
        print(" | ".join(str(x) for x in (
            kind, r["members"], r["partitions"], f"{r['virtual_s']:.1f}" if r["stable"] else "not stable",
            ",".join(map(str, r["generations"])), f"{r['wall_s']:.1f}", f"{r['cpu_s']:.1f}",
            f"{r['coord_cpu_s']:.2f}" if r["coord_cpu_s"] is not None else "-",
            f"{1e6 * r['coord_cpu_s'] / r['members']:.0f}" if r["coord_cpu_s"] is not None else "-",
            r["requests"], "yes" if r.get("held") else "no",
            f"{r['hold_cpu_s']:.1f}" if "hold_cpu_s" in r else "-",
            f"{1e6 * r['hold_coord_cpu_s'] / r['hold_requests']:.1f}" if r.get("hold_requests") else "-",
            f"{r['rss'] / (1 << 20):.0f}", f"{r['load0']:.1f}->{r['load1']:.1f}")))
    sys.stdout.flush()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, nargs="+", default=[10000, 20000, 50000])
    ap.add_argument("--kinds", nargs="+", choices=["classic", "consumer"], default=["classic", "consumer"])
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--strategy", default="range", help="classic: partition.assignment.strategy")
    ap.add_argument("--limit", type=float, default=600.0, help="virtual seconds to give up after")
    ap.add_argument("--hold", type=float, default=30.0,
                    help="virtual seconds to run on once Stable (the steady state's heartbeats: 10 classic, 6 "
                         "consumer); the group must keep its generation")
    ap.add_argument("--join-interval-ms", type=int, default=0,
                    help="member i starts at i times this (default 0: all at once); e.g. 10: 100 members a "
                         "second, as a fleet connecting over TCP")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a broker config by Kafka's name (e.g. group.consumer.assignment.interval.ms=10000)")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="run under cProfile (no coordinator clock) and print its N costliest functions")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    rows = []
    for kind in args.kinds:
        for n in args.members:
            job = {"kind": kind, "members": n, "partitions": args.partitions, "strategy": args.strategy,
                   "limit_s": args.limit + args.hold, "hold_s": args.hold, "profile": args.profile,
                   "join_interval_ms": args.join_interval_ms,
                   "config": {k: int(v) if v.lstrip("-").isdigit() else v
                              for k, v in (item.split("=", 1) for item in args.set)}, "load0": os.getloadavg()[0]}
            row = run_job(job)
            row["load1"] = os.getloadavg()[0]
            rows.append(row)
            print_rows([row])
    print()
    print_rows(rows)
    base = {}
    for r in rows:
        if r.get("coord_cpu_s") is None:
            continue
        b = base.setdefault(r["kind"], r)
        k = r["members"] / b["members"]
        print(f"{r['kind']} {r['members']} (x{k:.1f} members): to Stable: CPU x{r['cpu_s'] / b['cpu_s']:.2f}, "
              f"coordinator x{r['coord_cpu_s'] / b['coord_cpu_s']:.2f}, requests x{r['requests'] / b['requests']:.2f}; "
              f"held: coordinator x{r['hold_coord_cpu_s'] / b['hold_coord_cpu_s']:.2f}, "
              f"requests x{r['hold_requests'] / b['hold_requests']:.2f}")


if __name__ == "__main__":
    main()
