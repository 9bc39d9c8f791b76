"""Benchmark: our partition assignors against kafka-python 3.0.12's.

    .venv/bin/python bench/assignors.py [--timeout 60] [--mem-gb 8] [--quick] [--only sticky,...]

Scenarios, for (consumers, topics, partitions per topic):
- ``uniform``: every consumer subscribes to every topic; a fresh assignment;
- ``mixed``: each consumer subscribes to a random half of the topics (seeded); fresh;
- ``leave10`` / ``leave10-mixed``: from a balanced assignment (uniform / mixed subscriptions;
  the sticky assignors start from the same one, made by ours), 10% of the consumers leave and
  the rest rebalance. The
  cooperative assignors need a follow-up rebalance: their time is that of both rounds and the
  moved/balance columns describe the settled assignment. ``moved`` counts partitions whose
  owner changed (the minimum is the departed members' partitions), ``bal`` is max - min.

Each measurement runs in its own process (``--worker``) with a wall-clock timeout and an
address-space limit (``resource.setrlimit(RLIMIT_AS)``); a kafka-python case that runs out of
either is reported as skipped, and its larger cases are then skipped without running. Time is
of the ``assign()`` call only (inputs are built first); memory is the growth of the process's
peak RSS during that call (Linux ``/proc/self/clear_refs`` resets the peak first).

kafka-python's sticky assignors get their previous assignment as an already decoded
``StickyAssignorUserData`` (its own ``decode()`` rejects Kafka's header-less user data); ours
decode the bytes.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time

STRATEGIES = ["range", "roundrobin", "sticky", "cooperative-sticky"]
SIZES = [(10, 10, 10), (100, 50, 20), (1000, 100, 100), (2000, 500, 2000)]
SCENARIOS = ["uniform", "mixed", "leave10", "leave10-mixed"]


# -- inputs --------------------------------------------------------------------------------------

def make_group(scenario, consumers, topics, partitions):
    names = [f"topic-{i:04d}" for i in range(topics)]
    members = [f"consumer-{i:05d}-{random.Random(i).getrandbits(32):08x}" for i in range(consumers)]
    ppt = {t: partitions for t in names}
    if scenario.endswith("mixed"):
        rnd = random.Random(42)
        subs = {m: sorted(rnd.sample(names, max(1, topics // 2))) for m in members}
        for i, t in enumerate(names):       # every topic has a subscriber
            m = members[i % consumers]
            if t not in subs[m]:
                subs[m] = sorted(subs[m] + [t])
    else:
        subs = {m: names for m in members}
    return subs, ppt


def leavers(members):
    rnd = random.Random(7)
    return set(rnd.sample(members, len(members) // 10))


# -- the two implementations ------------------------------------------------------------------

class Ours:
    def __init__(self, strategy):
        from groupcoord.client import assignors
        self.m = assignors
        self.strategy = strategy

    def assignor(self):
        return self.m.get_assignor(self.strategy)

    def inputs(self, subs, ppt, previous=None, generation=1):
        m = self.m
        TP = m.TopicPartition
        group = {}
        for member, topics in subs.items():
            prev = previous.get(member) if previous else None
            if prev is None:
                group[member] = m.Subscription(list(topics))
                continue
            owned = [TP(t, p) for t, p in prev]
            if self.strategy == "sticky":
                from groupcoord.protocol.consumer import encode_sticky_user_data, group_partitions
                data = encode_sticky_user_data(group_partitions(prev), generation)
                group[member] = m.Subscription(list(topics), data, owned, generation)
            elif self.strategy == "cooperative-sticky":
                group[member] = m.Subscription(list(topics), None, owned, generation)
            else:
                group[member] = m.Subscription(list(topics))
        return m.ClusterMetadata(ppt), m.GroupSubscription(group)

    def run(self, assignor, inputs):
        cluster, group = inputs
        return assignor.assign(cluster, group)

    @staticmethod
    def result(out):
        return {mem: [(tp[0], tp[1]) for tp in a.partitions] for mem, a in out.assignments.items()}


class KafkaPython:
    def __init__(self, strategy):
        self.strategy = strategy

    def assignor(self):
        if self.strategy == "range":
            from kafka.coordinator.assignors.range import RangePartitionAssignor
            return RangePartitionAssignor
        if self.strategy == "roundrobin":
            from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
            return RoundRobinPartitionAssignor
        if self.strategy == "sticky":
            from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
            return StickyPartitionAssignor()
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        return CooperativeStickyAssignor()

    def inputs(self, subs, ppt, previous=None, generation=1):
        from types import SimpleNamespace as NS

        from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData

        class Cluster:
            def topics(self):
                return set(ppt)

            def partitions_for_topic(self, topic):
                n = ppt.get(topic)
                return None if n is None else set(range(n))

        members = []
        for member, topics in subs.items():
            prev = previous.get(member) if previous else None
            by_topic = {}
            for t, p in prev or ():
                by_topic.setdefault(t, []).append(p)
            user_data, owned, gen = b"", [], -1
            if prev is not None and self.strategy == "sticky":
                user_data = StickyAssignorUserData(sorted(by_topic.items()), generation)
            elif prev is not None and self.strategy == "cooperative-sticky":
                owned = [NS(topic=t, partitions=ps) for t, ps in sorted(by_topic.items())]
                gen = generation
            members.append(NS(member_id=member, group_instance_id=None,
                              metadata=NS(topics=list(topics), user_data=user_data,
                                          owned_partitions=owned, generation_id=gen)))
        return Cluster(), members

    def run(self, assignor, inputs):
        cluster, members = inputs
        return assignor.assign(cluster, members)

    @staticmethod
    def result(out):
        return {mem: [(t, p) for t, ps in a.assigned_partitions for p in ps] for mem, a in out.items()}


# -- one measurement (child process) ---------------------------------------------------------

def rss_now() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def timed(impl, assignor, inputs):
    """(result, seconds, peak bytes). Quick calls are repeated (the first one warms up) and the
    best time is kept, so that sub-millisecond cases compare algorithms, not noise."""
    import gc
    gc.collect()
    base = rss_now()
    reset_peak()
    start = time.perf_counter()
    out = impl.run(assignor, inputs)
    elapsed = time.perf_counter() - start
    peak = max(0, peak_rss() - base)
    if elapsed < 0.2:
        # both sides are sampled over the same wall-clock window (not the same number of calls),
        # so that a burst of noise from a neighbour weighs the same on each
        window = time.perf_counter() + 0.5
        best = None
        calls = 0
        while calls < 5 or time.perf_counter() < window:
            start = time.perf_counter()
            impl.run(assignor, inputs)
            t = time.perf_counter() - start
            best = t if best is None else min(best, t)
            calls += 1
        elapsed = best
    return impl.result(out), elapsed, peak


def stats(result, previous=None):
    sizes = [len(v) for v in result.values()]
    out = {"assigned": sum(sizes), "balance": (max(sizes) - min(sizes)) if sizes else 0}
    if previous is not None:
        owner = {tp: m for m, parts in previous.items() for tp in parts}
        out["moved"] = sum(1 for m, parts in result.items() for tp in parts if owner.get(tp) != m)
    return out


def worker(spec) -> dict:
    impl = (Ours if spec["impl"] == "ours" else KafkaPython)(spec["strategy"])
    subs, ppt = make_group(spec["scenario"], spec["consumers"], spec["topics"], spec["partitions"])
    if not spec["scenario"].startswith("leave10"):
        result, elapsed, peak = timed(impl, impl.assignor(), impl.inputs(subs, ppt))
        return {"time": elapsed, "mem": peak, **stats(result)}
    # the balanced starting point
    if spec["strategy"] in ("sticky", "cooperative-sticky"):
        from groupcoord.client.assignors import plan
        start = plan("sticky", subs, ppt)
    else:
        start = impl.result(impl.run(impl.assignor(), impl.inputs(subs, ppt)))
    gone = leavers(list(subs))
    subs2 = {m: t for m, t in subs.items() if m not in gone}
    assignor = impl.assignor()
    result, elapsed, peak = timed(impl, assignor, impl.inputs(subs2, ppt, start, 1))
    rounds = 1
    if spec["strategy"] == "cooperative-sticky":
        revoked = any(set(start[m]) - set(result[m]) for m in subs2)
        if revoked:
            more, t2, p2 = timed(impl, assignor, impl.inputs(subs2, ppt, result, 2))
            result, elapsed, peak, rounds = more, elapsed + t2, max(peak, p2), 2
    return {"time": elapsed, "mem": peak, "rounds": rounds, **stats(result, start)}


# -- the driver ----------------------------------------------------------------------------------

def run_child(spec, timeout, mem_bytes):
    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, preexec_fn=limits)
    except subprocess.TimeoutExpired:
        return {"skipped": f"would take > {timeout:g} s"}
    if proc.returncode != 0:
        err = proc.stderr.strip().splitlines()
        last = err[-1] if err else f"exit {proc.returncode}"
        if "MemoryError" in proc.stderr or proc.returncode in (-9, 137):
            return {"skipped": f"OOM (> {mem_bytes / 2**30:g} GiB)"}
        return {"error": last}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def predicted_need(spec) -> int:
    """Bytes kafka-python's sticky executor needs at least: per partition the list of its
    potential consumers and per consumer the list of its potential partitions, ~2 x 8 bytes per
    (consumer, partition) pair (0 for the other assignors)."""
    if spec["impl"] != "kafka-python" or spec["strategy"] not in ("sticky", "cooperative-sticky"):
        return 0
    pairs = spec["consumers"] * spec["topics"] * spec["partitions"]
    if spec["scenario"].endswith("mixed"):
        pairs //= 2
    return pairs * 16


def fmt_time(t):
    if t < 1:
        return f"{t * 1000:.2f}ms"
    return f"{t:.2f}s"


def fmt_mem(b):
    return f"{b / 2**20:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker")
    ap.add_argument("--timeout", type=float, default=60.0, help="per kafka-python case, seconds")
    ap.add_argument("--mem-gb", type=float, default=8.0, help="address-space limit per case")
    ap.add_argument("--quick", action="store_true", help="only the two smallest sizes")
    ap.add_argument("--only", default="", help="comma-separated strategies")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    mem = int(args.mem_gb * 2**30)
    strategies = [s for s in STRATEGIES if not args.only or s in args.only.split(",")]
    plan_ = [(scenario, SIZES) for scenario in SCENARIOS]
    header = (f"{'scenario':13} {'C,T,P':>14} {'partitions':>10} {'assignor':18} "
              f"{'ours':>9} {'kp':>9} {'speedup':>8} {'ours MiB':>8} {'kp MiB':>8} "
              f"{'moved':>7} {'kp moved':>8} {'bal':>3} {'kp bal':>6}")
    print(header)
    print("-" * len(header))
    ratios = {}
    worst_ours = {}
    gave_up = set()
    for scenario, sizes in plan_:
        if args.quick:
            sizes = sizes[:2]
        for c, t, p in sizes:
            for strategy in strategies:
                spec = {"scenario": scenario, "consumers": c, "topics": t, "partitions": p,
                        "strategy": strategy}
                ours = run_child({**spec, "impl": "ours"}, max(args.timeout, 600), mem)
                kspec = {**spec, "impl": "kafka-python"}
                key = (scenario, strategy)
                if key in gave_up:
                    kp = {"skipped": f"would take > {args.timeout:g} s / OOM (a smaller case did)"}
                elif predicted_need(kspec) > mem:
                    kp = {"skipped": f"OOM (needs > {predicted_need(kspec) / 2**30:.0f} GiB for its "
                                     f"(consumer, partition) lists; limit {mem / 2**30:g} GiB)"}
                else:
                    kp = run_child(kspec, args.timeout, mem)
                if "skipped" in kp:
                    gave_up.add(key)
                row = f"{scenario:13} {f'{c},{t},{p}':>14} {t * p:>10} {strategy:18} "
                if "time" in ours:
                    row += f"{fmt_time(ours['time']):>9} "
                    worst_ours[(scenario, strategy)] = max(worst_ours.get((scenario, strategy), 0), ours["time"])
                else:
                    row += f"{'ERR':>9} "
                if "time" in kp and "time" in ours:
                    speedup = kp["time"] / ours["time"] if ours["time"] else float("inf")
                    ratios.setdefault(strategy, []).append(speedup)
                    row += f"{fmt_time(kp['time']):>9} {speedup:>7.1f}x "
                else:
                    row += f"{'-':>9} {'-':>8} "
                row += f"{fmt_mem(ours.get('mem', 0)):>8} "
                row += f"{fmt_mem(kp['mem']) if 'mem' in kp else '-':>8} "
                row += f"{ours.get('moved', ''):>7} {kp.get('moved', ''):>8} "
                row += f"{ours.get('balance', ''):>3} {kp.get('balance', ''):>6}"
                print(row, flush=True)
                for label, r in (("ours", ours), ("kafka-python", kp)):
                    if "skipped" in r or "error" in r:
                        print(f"    {label}: {'skipped: ' + r['skipped'] if 'skipped' in r else 'error: ' + r['error']}",
                              flush=True)
    print()
    parts = []
    for strategy in strategies:
        rs = ratios.get(strategy)
        if rs:
            parts.append(f"{strategy} {min(rs):.1f}x-{max(rs):.0f}x ({len(rs)} cases)")
    worst = ", ".join(f"{s} {max(v for (sc, st), v in worst_ours.items() if st == s):.2f}s"
                      for s in strategies if any(st == s for _, st in worst_ours))
    print("summary: speedup over kafka-python 3.0.12 where it finished: " + "; ".join(parts)
          + f" | our slowest case: {worst}")


if __name__ == "__main__":
    main()
