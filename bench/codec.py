"""Codec throughput: groupcoord's codec against kafka-python 3.x's, in the same run.

Each message is encoded and decoded (one round trip) by both codecs, in turns (five runs each,
the best kept); we encode from and decode to plain dicts, kafka-python from and to its own objects. Prints a table
of round trips per second and the ratio ours/theirs, then the summary line
``codec speedup vs kafka-python: min X.XX median Y.YY``.

    python bench/codec.py [--seconds 0.5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "protocol"))

from kafka_python_oracle import their_classes, to_theirs  # noqa: E402

from groupcoord.protocol import consumer  # noqa: E402
from groupcoord.protocol.messages import BY_NAME  # noqa: E402


def _subscription(i: int) -> bytes:
    return consumer.encode_subscription({
        "topics": [f"topic-{t}" for t in range(5)], "user_data": None,
        "owned_partitions": [{"topic": "topic-0", "partitions": [i, i + 100]}],
        "generation_id": 7, "rack_id": None}, 3)


def _assignment(i: int) -> bytes:
    return consumer.encode_assignment({
        "assigned_partitions": [{"topic": f"topic-{t}", "partitions": [i, i + 100, i + 200]} for t in range(5)],
        "user_data": None}, 3)


def messages():
    members = [f"consumer-{i}-0b6e4c52-7a43-4c1e-9a1f-{i:012d}" for i in range(100)]
    yield "Heartbeat v4 request", "HeartbeatRequest", 4, {
        "group_id": "orders-processing", "generation_id": 42, "member_id": members[0],
        "group_instance_id": None}
    yield "JoinGroup v9 response, 100 members", "JoinGroupResponse", 9, {
        "throttle_time_ms": 0, "error_code": 0, "generation_id": 42, "protocol_type": "consumer",
        "protocol_name": "cooperative-sticky", "leader": members[0], "skip_assignment": False,
        "member_id": members[0],
        "members": [{"member_id": m, "group_instance_id": None, "metadata": _subscription(i)}
                    for i, m in enumerate(members)]}
    yield "SyncGroup v5 request, 100 assignments", "SyncGroupRequest", 5, {
        "group_id": "orders-processing", "generation_id": 42, "member_id": members[0],
        "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
        "assignments": [{"member_id": m, "assignment": _assignment(i)} for i, m in enumerate(members)]}
    yield "OffsetCommit v9 request, 1000 partitions", "OffsetCommitRequest", 9, {
        "group_id": "orders-processing", "generation_id_or_member_epoch": 42, "member_id": members[0],
        "group_instance_id": None,
        "topics": [{"name": f"topic-{t}", "partitions": [
            {"partition_index": p, "committed_offset": 1_000_000 + p, "committed_leader_epoch": 3,
             "committed_metadata": ""} for p in range(100)]} for t in range(10)]}
    yield "Metadata v12 response, 100 topics x 10 partitions", "MetadataResponse", 12, {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": n, "host": "127.0.0.1", "port": 9092 + n, "rack": None} for n in range(3)],
        "cluster_id": "groupcoord-cluster", "controller_id": 0,
        "topics": [{"error_code": 0, "name": f"topic-{t}", "topic_id": __import__("uuid").UUID(int=t + 1),
                    "is_internal": False, "topic_authorized_operations": -2147483648,
                    "partitions": [{"error_code": 0, "partition_index": p, "leader_id": p % 3,
                                    "leader_epoch": 0, "replica_nodes": [p % 3], "isr_nodes": [p % 3],
                                    "offline_replicas": []} for p in range(10)]} for t in range(100)]}


def _calls_for(fn, seconds: float) -> int:
    """How many calls of fn take about ``seconds``."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt > 0.05:
            return max(1, int(n * seconds / dt))
        n *= 4


def rates(ours, theirs, seconds: float, rounds: int = 5) -> tuple[float, float]:
    """Calls per second of each, the best of ``rounds`` runs of about seconds/rounds, the two taking
    turns (a change in the machine's load then weighs on both alike)."""
    n_ours, n_theirs = _calls_for(ours, seconds / rounds), _calls_for(theirs, seconds / rounds)
    best = [0.0, 0.0]
    for _ in range(rounds):
        for i, (fn, n) in enumerate(((ours, n_ours), (theirs, n_theirs))):
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best[i] = max(best[i], n / (time.perf_counter() - t0))
    return best[0], best[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.5, help="time per codec and message")
    args = ap.parse_args(argv)
    theirs_by_name = their_classes()
    rows = []
    for title, name, version, obj in messages():
        api = BY_NAME[name.removesuffix("Request").removesuffix("Response")]
        spec = api.request if name.endswith("Request") else api.response
        codec = spec.codec(version)
        data = codec.encode(obj)
        assert codec.decode(data) == obj, title

        cls = theirs_by_name[name]
        their_obj = to_theirs(cls, obj, spec.struct(version), version)
        their_data = bytes(their_obj.encode(version=version, header=False))
        assert their_data == data, f"{title}: the two codecs disagree"

        def ours():
            codec.decode(codec.encode(obj))

        def theirs():
            cls.decode(their_obj.encode(version=version, header=False), version=version, header=False)

        r_ours, r_theirs = rates(ours, theirs, args.seconds)
        rows.append((title, len(data), r_ours, r_theirs, r_ours / r_theirs))

    w = max(len(r[0]) for r in rows)
    print(f"{'message':<{w}}  {'bytes':>7}  {'ours/s':>10}  {'kafka-python/s':>14}  {'ratio':>6}")
    for title, size, r_ours, r_theirs, ratio in rows:
        print(f"{title:<{w}}  {size:>7}  {r_ours:>10.0f}  {r_theirs:>14.0f}  {ratio:>6.2f}")
    ratios = [r[4] for r in rows]
    print(f"codec speedup vs kafka-python: min {min(ratios):.2f} median {statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
