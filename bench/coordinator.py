"""Coordinator benchmarks, against librdkafka's mock cluster measured in the same run.

(a) groups of N confluent-kafka consumers (heartbeat 1 s, session 10 s): time until
    the group is Stable (every member has its assignment and together they cover every
    partition), then time until it is Stable again after one member leaves gracefully;
    on groupcoord (--profile test) and on librdkafka's mock cluster.
(b) heartbeats per second that one node serves to many connections: a load generator
    in another process pipelines raw Heartbeat v4 requests; the service's event loop
    lag is sampled every 5 ms and its worst value reported.

    python bench/coordinator.py [--members 10 50] [--hb-seconds 5] [--skip-mock]
"""
from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import socket
import struct
import sys
import threading
import time

from confluent_kafka import Consumer

from groupcoord.coordinator.embed import ThreadedCoordinator
from groupcoord.coordinator.logs import configure
from groupcoord.protocol import frames

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent / "tests" / "client"))
from rdkafka_mock import MockCluster  # noqa: E402

TOPIC = "bench"


# ---- (a) group formation and rebalance after a graceful leave ---------------------------

class Member:
    def __init__(self, bootstrap: str, group: str, index: int):
        self.index = index
        self.assignment: set = set()
        self.assigned_at = 0.0
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "client.id": f"bench-{index}",
            "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000,
            "partition.assignment.strategy": "range", "enable.auto.commit": False,
            "log_level": 3,
        })
        self.stop = threading.Event()
        self.closed = threading.Event()
        self.consumer.subscribe([TOPIC], on_assign=self._assign, on_revoke=self._revoke)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _assign(self, consumer, partitions):
        self.assignment = {p.partition for p in partitions}
        self.assigned_at = time.monotonic()

    def _revoke(self, consumer, partitions):
        self.assignment = set()

    def _run(self):
        while not self.stop.is_set():
            self.consumer.poll(0.05)
        self.consumer.close()   # sends LeaveGroup
        self.closed.set()


def _covered(members, partitions, since=0.0) -> bool:
    seen = []
    for m in members:
        if m.assigned_at <= since:
            return False
        seen.extend(m.assignment)
    return sorted(seen) == list(range(partitions))


def _wait(cond, timeout: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cond():
            return time.monotonic() - t0
        time.sleep(0.01)
    return None


def group_times(bootstrap: str, n: int, partitions: int, group: str) -> tuple[float | None, float | None]:
    members = [Member(bootstrap, group, i) for i in range(n)]
    try:
        formed = _wait(lambda: _covered(members, partitions), 120)
        if formed is None:
            return None, None
        leaving = members.pop()
        t_leave = time.monotonic()
        leaving.stop.set()
        leaving.closed.wait(30)
        again = _wait(lambda: _covered(members, partitions, since=t_leave), 120)
        return formed, (None if again is None else time.monotonic() - t_leave)
    finally:
        for m in members:
            m.stop.set()
        for m in members:
            m.closed.wait(30)


# ---- (b) heartbeat throughput ------------------------------------------------------------------

def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)


def _call(sock, api_key, version, corr, body):
    sock.sendall(frames.encode_request(api_key, version, corr, body, "hb-bench"))
    size = struct.unpack(">i", _recv_exact(sock, 4))[0]
    return frames.decode_response(api_key, version, _recv_exact(sock, size))[1]


def _join_single_member_group(sock, group: str) -> tuple[str, int]:
    req = {"group_id": group, "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000, "member_id": "",
           "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"}]}
    resp = _call(sock, 11, 5, 1, req)
    if resp["error_code"] == 79:  # MEMBER_ID_REQUIRED
        req["member_id"] = resp["member_id"]
        resp = _call(sock, 11, 5, 2, req)
    assert resp["error_code"] == 0, resp
    member, gen = resp["member_id"], resp["generation_id"]
    sync = _call(sock, 14, 3, 3, {"group_id": group, "generation_id": gen, "member_id": member,
                                  "assignments": [{"member_id": member, "assignment": b""}]})
    assert sync["error_code"] == 0, sync
    return member, gen


def load_generator(host, port, connections, depth, seconds, out):
    socks, hbs = [], []
    for c in range(connections):
        s = socket.create_connection((host, port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        member, gen = _join_single_member_group(s, f"hb-group-{c}")
        hb = frames.encode_request(12, 4, 0, {"group_id": f"hb-group-{c}", "generation_id": gen,
                                              "member_id": member, "group_instance_id": None}, "hb-bench")
        socks.append(s)
        hbs.append(hb * depth)
    # every answer is a Heartbeat v4 response of the same size: size, correlation id,
    # tag byte, throttle time, error code, tag byte; count them by bytes, check the error codes
    resp_size = 4 + 4 + 1 + 4 + 2 + 1
    want = resp_size * depth
    ok = errors = 0
    t_end = time.monotonic() + seconds
    t0 = time.monotonic()
    while time.monotonic() < t_end:
        for s, burst in zip(socks, hbs):
            s.sendall(burst)
        for s in socks:
            data = b""
            while len(data) < want:
                data += s.recv(want - len(data))
            bad = sum(1 for hi, lo in zip(data[13::resp_size], data[14::resp_size]) if hi or lo)
            errors += bad
            ok += depth - bad
    out.put((ok, errors, time.monotonic() - t0, resp_size))


async def _lag_monitor(state):
    loop = asyncio.get_running_loop()
    period = 0.005
    while True:
        t = loop.time()
        await asyncio.sleep(period)
        lag = loop.time() - t - period
        state["max"] = max(state["max"], lag)


def heartbeat_bench(connections: int, depth: int, seconds: float) -> dict:
    gc = ThreadedCoordinator(profile="test").start()
    try:
        host, port = gc.bootstrap_servers.split(":")
        lag = {"max": 0.0}
        task = asyncio.run_coroutine_threadsafe(_lag_monitor(lag), gc.loop)
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        proc = ctx.Process(target=load_generator, args=(host, int(port), connections, depth, seconds, out))
        proc.start()
        ok, errors, elapsed, _ = out.get(timeout=seconds + 120)
        proc.join(30)
        task.cancel()
        return {"heartbeats_per_s": ok / elapsed, "errors": errors, "max_loop_lag_ms": lag["max"] * 1000,
                "connections": connections, "pipeline_depth": depth}
    finally:
        gc.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, nargs="+", default=[10, 50])
    ap.add_argument("--hb-seconds", type=float, default=5.0)
    ap.add_argument("--hb-connections", type=int, default=50)
    ap.add_argument("--hb-depth", type=int, default=64)
    ap.add_argument("--skip-mock", action="store_true")
    ap.add_argument("--skip-groups", action="store_true")
    args = ap.parse_args(argv)
    configure("console", "warning")

    if not args.skip_groups:
        print(f"{'members':>7}  {'target':<22}  {'stable (s)':>10}  {'stable after leave (s)':>22}")
        for n in args.members:
            partitions = 2 * n
            gc = ThreadedCoordinator(profile="test", topics={TOPIC: partitions}).start()
            try:
                formed, again = group_times(gc.bootstrap_servers, n, partitions, f"bench-{n}")
            finally:
                gc.stop()
            print(f"{n:>7}  {'groupcoord':<22}  {_fmt(formed):>10}  {_fmt(again):>22}", flush=True)
            if not args.skip_mock:
                with MockCluster(brokers=1) as mock:
                    mock.create_topic(TOPIC, partitions)
                    formed, again = group_times(mock.bootstrap_servers, n, partitions, f"bench-{n}")
                print(f"{n:>7}  {'librdkafka mock cluster':<22}  {_fmt(formed):>10}  {_fmt(again):>22}", flush=True)

    r = heartbeat_bench(args.hb_connections, args.hb_depth, args.hb_seconds)
    print(f"heartbeats: {r['heartbeats_per_s']:.0f}/s on one node ({r['connections']} connections, "
          f"{r['pipeline_depth']} in flight each, {r['errors']} errors), worst event-loop lag "
          f"{r['max_loop_lag_ms']:.1f} ms")
    return 0


def _fmt(v):
    return "timeout" if v is None else f"{v:.2f}"


if __name__ == "__main__":
    sys.exit(main())
