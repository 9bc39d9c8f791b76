"""Benchmark: the server-side assignors (KIP-848, ``uniform`` and ``range``) at the sizes of Kafka's
JMH ``ServerSideAssignorBenchmark``, against our classic client assignors on the same groups.

    .venv/bin/python bench/server_assignors.py [--full] [--quick] [--only uniform,range,...]
        [--subscriptions homogeneous,heterogeneous] [--types full,incremental] [--window 0.5]

Sizes, as Kafka's ``jmh-benchmarks/src/main/java/org/apache/kafka/jmh/assignor/
ServerSideAssignorBenchmark.java`` (4.2) builds them: ``memberCount`` in 100, 500, 1000, 5000, 10000,
``partitionsToMemberRatio`` in 5, 10, 50, ``topicCount`` in 10, 100, 1000; every topic has
``memberCount * ratio // topicCount`` partitions. Homogeneous: every member subscribes to every
topic. Heterogeneous: ``AssignorBenchmarkUtils.createHeterogeneousBucketedMembers``, 5 buckets of
members each subscribed to its own fifth of the topics. FULL: every member without a target.
INCREMENTAL: ``memberCount - 1`` members hold the assignor's own FULL result and a new member
joins (subscribed as the second-to-last member, heterogeneous). Kafka's ``isRackAware`` is not
varied (neither side here uses racks for these assignors).

The default runs a part of the grid (``--full``: all 45 sizes; ``--quick``: the small ones).
The client assignors (``groupcoord.client.assignors``: range, roundrobin, sticky,
cooperative-sticky) get the same members and topics (by name), through ``assign(cluster, group)``
as ``bench/assignors.py`` calls them; in INCREMENTAL the sticky ones start from their own FULL
result (one call timed: cooperative-sticky's follow-up rebalance is not counted). Time is of the
``assign()`` call alone, the best of repeated calls within ``--window`` seconds when a call takes
less than that (the collector on, collected before each case). One process, one run.
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from assignors import Ours  # noqa: E402  (bench/assignors.py: how the client assignors are called)

from groupcoord.coordinator.group.assignors import ASSIGNORS, GroupSpec, MemberSpec  # noqa: E402

SERVER = ["uniform", "range"]
CLIENT = ["range", "roundrobin", "sticky", "cooperative-sticky"]
MEMBERS = [100, 500, 1000, 5000, 10000]
RATIOS_TO_MEMBERS = [5, 10, 50]
TOPICS = [10, 100, 1000]
DEFAULT_SIZES = [(m, r, t) for m in (100, 1000, 10000) for r in (10, 50) for t in (10, 1000)]
QUICK_SIZES = [(m, r, t) for m in (100, 1000) for r in (10,) for t in (10, 100)]
BUCKETS = 5


# -- the groups, as Kafka's benchmark builds them ------------------------------------------------

def make_group(members: int, ratio: int, topic_count: int, heterogeneous: bool):
    """(subscriptions {member: [topic names]}, topic ids {name: uuid}, partitions per topic)."""
    names = [f"topic-{i}" for i in range(topic_count)]
    rnd = random.Random(f"{members}-{ratio}-{topic_count}")
    ids = {n: uuid.UUID(int=rnd.getrandbits(128)) for n in names}     # Kafka: Uuid.randomUuid()
    per_topic = members * ratio // topic_count
    subs: dict[str, list[str]] = {}
    if not heterogeneous:
        for i in range(members):
            subs[f"member{i}"] = names
    else:
        buckets = min(BUCKETS, members)
        topics_per_bucket = -(-topic_count // buckets)
        members_per_bucket = -(-members // buckets)
        for b in range(buckets):
            bucket_topics = names[b * topics_per_bucket:(b + 1) * topics_per_bucket]
            for i in range(b * members_per_bucket, min((b + 1) * members_per_bucket, members)):
                subs[f"member{i}"] = bucket_topics
    return subs, ids, per_topic


def incremental(subs: dict[str, list[str]], heterogeneous: bool, members: int, names: list[str]):
    """Kafka's INCREMENTAL: ``members - 1`` existing members and "newMember"."""
    before = dict(list(subs.items())[:members - 1])
    new_subs = before[f"member{members - 2}"] if heterogeneous else names
    return before, new_subs


# -- the two sides -------------------------------------------------------------------------------

def server_inputs(subs, ids, per_topic, heterogeneous, previous=None):
    topics = {ids[n]: per_topic for n in ids}
    members = {}
    for m, names in subs.items():
        members[m] = MemberSpec(None, None, frozenset(ids[n] for n in names), (previous or {}).get(m, {}))
    return GroupSpec(members, not heterogeneous), topics


def timed(call, window: float) -> float:
    gc.collect()
    start = time.perf_counter()
    call()
    elapsed = time.perf_counter() - start
    if elapsed < window:
        best, calls, end = elapsed, 1, time.perf_counter() + window
        while calls < 3 or time.perf_counter() < end:
            start = time.perf_counter()
            call()
            best = min(best, time.perf_counter() - start)
            calls += 1
        elapsed = best
    return elapsed


def measure(kind: str, name: str, size, heterogeneous: bool, assignment_type: str, window: float) -> float:
    members, ratio, topic_count = size
    subs, ids, per_topic = make_group(members, ratio, topic_count, heterogeneous)
    names = list(ids)
    if kind == "server":
        assignor = ASSIGNORS[name]
        if assignment_type == "full":
            spec, topics = server_inputs(subs, ids, per_topic, heterogeneous)
        else:
            before, new_subs = incremental(subs, heterogeneous, members, names)
            spec, topics = server_inputs(before, ids, per_topic, heterogeneous)
            previous = assignor.assign(spec, topics)
            spec, topics = server_inputs({**before, "newMember": new_subs}, ids, per_topic, heterogeneous,
                                         previous)
        return timed(lambda: assignor.assign(spec, topics), window)
    impl = Ours(name)
    ppt = {n: per_topic for n in names}
    assignor = impl.assignor()
    if assignment_type == "full":
        inputs = impl.inputs(subs, ppt)
    else:
        before, new_subs = incremental(subs, heterogeneous, members, names)
        previous = impl.result(impl.run(assignor, impl.inputs(before, ppt)))
        inputs = impl.inputs({**before, "newMember": new_subs}, ppt, previous, 1)
    return timed(lambda: impl.run(assignor, inputs), window)


# -- the driver ----------------------------------------------------------------------------------

def fmt(t: float | None) -> str:
    if t is None:
        return "-"
    return f"{t * 1000:.2f} ms" if t < 1 else f"{t:.2f} s"


# (label, client column, server column) of the ratio columns
RATIOS = [("client range / range", ("client", "range"), ("server", "range")),
          ("roundrobin / uniform", ("client", "roundrobin"), ("server", "uniform")),
          ("sticky / uniform", ("client", "sticky"), ("server", "uniform")),
          ("coop-sticky / uniform", ("client", "cooperative-sticky"), ("server", "uniform"))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", action="store_true", help="all 45 sizes of Kafka's benchmark")
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    ap.add_argument("--only", default="", help="comma-separated: uniform, range (server), "
                                              "client-range, roundrobin, sticky, cooperative-sticky")
    ap.add_argument("--subscriptions", default="homogeneous,heterogeneous")
    ap.add_argument("--types", default="full,incremental")
    ap.add_argument("--window", type=float, default=0.5, help="seconds of repeated calls for quick cases")
    args = ap.parse_args()
    sizes = ([(m, r, t) for m in MEMBERS for r in RATIOS_TO_MEMBERS for t in TOPICS] if args.full
             else QUICK_SIZES if args.quick else DEFAULT_SIZES)
    columns = [("server", n) for n in SERVER] + [("client", n) for n in CLIENT]
    labels = {c: (c[1] if c[0] == "server" else "client-range" if c[1] == "range" else c[1]) for c in columns}
    if args.only:
        wanted = set(args.only.split(","))
        columns = [c for c in columns if labels[c] in wanted]
    ratio_columns = [r for r in RATIOS if r[1] in columns and r[2] in columns]
    print(f"load average before: {os.getloadavg()[0]:.2f}; Python {sys.version.split()[0]}")
    print()
    head = ["subscription", "type", "members", "ratio", "topics", "partitions"]
    head += [("server " if c[0] == "server" else "") + labels[c] for c in columns]
    head += [label for label, _, _ in ratio_columns]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    ratios: dict[str, list[float]] = {}
    for subscription in args.subscriptions.split(","):
        heterogeneous = subscription == "heterogeneous"
        for assignment_type in args.types.split(","):
            for size in sizes:
                members, ratio, topic_count = size
                times = {c: measure(c[0], c[1], size, heterogeneous, assignment_type, args.window) for c in columns}
                partitions = members * ratio // topic_count * topic_count
                row = [subscription, assignment_type, f"{members:,}", str(ratio), f"{topic_count:,}", f"{partitions:,}"]
                row += [fmt(times[c]) for c in columns]
                for label, client, server in ratio_columns:
                    r = times[client] / times[server]
                    ratios.setdefault(label, []).append(r)
                    row.append(f"{r:.1f}x")
                print("| " + " | ".join(row) + " |", flush=True)
    if ratios:
        print()
        print("client time / server time, min-max (median) over the rows: " + "; ".join(
            f"{label} {min(rs):.1f}x-{max(rs):.1f}x ({sorted(rs)[len(rs) // 2]:.1f}x)"
            for label, rs in ratios.items()))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
