"""What metrics cost: heartbeats per second with and without them, the hook alone, a scrape.

(a) the heartbeat load of bench/coordinator.py (another process pipelines raw Heartbeat v4
    requests on many connections) against one node: without metrics, with a Metrics attached
    (the after_request hook and the bus subscription), and with the whole admin app (metrics and
    the event hub); rounds interleaved, medians and bests reported: heartbeats per second, and the CPU time
    of the service's thread per heartbeat (steadier than the rate on a busy machine).
(b) the after_request hook alone, called in-process with a Heartbeat response (ns per call); and
    the server's whole per-request path (decode, hooks, handler, encode) with and without it,
    pipelined Heartbeat bursts fed to a connection object without sockets (best of 5).
(c) one scrape of /metrics with G groups of M members: the snapshot, which runs on the
    service's event loop, and the text encoding, which /metrics leaves to a thread.

    python bench/metrics.py [--hb-seconds 5] [--rounds 3] [--groups 1000 10000]
"""
from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import statistics
import sys
import time
from pathlib import Path

from prometheus_client.exposition import generate_latest

from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.embed import ThreadedCoordinator
from groupcoord.coordinator.logs import configure
from groupcoord.coordinator.group.runtime import JoinGroupRequest, SyncGroupRequest
from groupcoord.coordinator.metrics import Metrics
from groupcoord.coordinator.server import Server, _Connection
from groupcoord.coordinator.service import Service
from groupcoord.protocol import frames

sys.path.insert(0, str(Path(__file__).resolve().parent))
import coordinator as bench_coordinator  # noqa: E402  (bench/coordinator.py: its load generator)


def heartbeats(variant: str, connections: int, depth: int, seconds: float) -> tuple[float, float]:
    """Heartbeats per second, and CPU microseconds of the service's thread per heartbeat."""
    gc = ThreadedCoordinator(profile="test", http=(variant == "admin app")).start()
    try:
        if variant == "metrics":
            gc.call(lambda: Metrics(gc.service, gc.server).attach())
        host, port = gc.bootstrap_servers.split(":")
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        proc = ctx.Process(target=bench_coordinator.load_generator,
                           args=(host, int(port), connections, depth, seconds, out))
        cpu0 = gc.call(time.thread_time)
        proc.start()
        ok, errors, elapsed, _ = out.get(timeout=seconds + 120)
        cpu1 = gc.call(time.thread_time)
        proc.join(30)
        if errors:
            raise RuntimeError(f"{errors} heartbeats failed")
        if variant == "admin app":
            counted = gc.call(lambda: sum(gc.admin.app["metrics"].apis[12].versions))
            assert counted >= ok, (counted, ok)
        return ok / elapsed, (cpu1 - cpu0) / ok * 1e6
    finally:
        gc.stop()


def hook_ns(calls: int = 200_000) -> float:
    service = Service()
    m = Metrics(service, process=False).attach()
    ctx = RequestContext(service, 0, "bench", "/127.0.0.1", 12, 4, 1)
    request = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}
    response = {"throttle_time_ms": 0, "error_code": 0}
    hook = m.after_request
    t0 = time.perf_counter()
    for _ in range(calls):
        hook(ctx, request, response, 0.00005)
    return (time.perf_counter() - t0) / calls * 1e9


class _Sink(asyncio.Transport):
    """A transport that swallows what is written to it."""

    def write(self, data) -> None:
        pass

    def get_extra_info(self, name, default=None):
        return ("127.0.0.1", 40000) if name == "peername" else default

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def server_path_us(with_metrics: bool, bursts: int = 300, depth: int = 64) -> float:
    """CPU microseconds per Heartbeat through the server's whole path (frame decode, hooks,
    handler, encode), pipelined bursts fed straight to a connection object, no sockets."""
    service = Service()
    server = Server(service)
    loop = asyncio.new_event_loop()
    server._loop = loop
    try:
        joined = []
        service.group_coordinator.join_group(
            joined.append, JoinGroupRequest(group_id="hb", member_id="", group_instance_id="i", client_id="bench",
            client_host="/127.0.0.1", session_timeout_ms=30000, rebalance_timeout_ms=30000,
            protocol_type="consumer", protocols=[("range", b"")], require_known_member_id=False))
        service.advance(service.clock() + 10_000)        # the initial rebalance delay
        member, generation = joined[0]["member_id"], joined[0]["generation_id"]
        service.group_coordinator.sync_group(lambda r: None, SyncGroupRequest(
            group_id="hb", generation_id=generation, member_id=member, group_instance_id="i",
            assignments=[(member, b"")]))
        if with_metrics:
            Metrics(service, server, process=False).attach()
        conn = _Connection(server, 0)
        conn.connection_made(_Sink())
        burst = frames.encode_request(12, 4, 1, {"group_id": "hb", "generation_id": generation,
                                                 "member_id": member, "group_instance_id": "i"}, "bench") * depth
        conn.data_received(burst)
        t0 = time.process_time()
        for _ in range(bursts):
            conn.data_received(burst)
        return (time.process_time() - t0) / (bursts * depth) * 1e6
    finally:
        loop.close()


def scrape_ms(groups: int, members: int) -> tuple[float, int]:
    service = Service()
    gc = service.group_coordinator
    meta = b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"

    def ignore(_):
        pass

    for g in range(groups):
        for i in range(members):
            gc.join_group(ignore, JoinGroupRequest(group_id=f"group-{g}", member_id="", group_instance_id=f"i-{i}",
                          client_id="bench", client_host="/127.0.0.1", session_timeout_ms=30000,
                          rebalance_timeout_ms=30000, protocol_type="consumer",
                          protocols=[("range", meta)], require_known_member_id=False))
    m = Metrics(service, process=False)
    m.exposition()
    t0 = time.perf_counter()
    snapshot = m.snapshot()
    t1 = time.perf_counter()
    body = generate_latest(snapshot)
    t2 = time.perf_counter()
    return (t1 - t0) * 1000, (t2 - t1) * 1000, len(body)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hb-seconds", type=float, default=5.0)
    ap.add_argument("--hb-connections", type=int, default=50)
    ap.add_argument("--hb-depth", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--groups", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--members", type=int, default=3)
    args = ap.parse_args(argv)
    configure("console", "warning")

    print(f"after_request hook, one Heartbeat: {hook_ns():.0f} ns per call")
    paths = {False: [], True: []}
    for _ in range(5):
        for flag in (False, True):
            paths[flag].append(server_path_us(flag))
    base, with_m = min(paths[False]), min(paths[True])
    print(f"server path per Heartbeat (best of 5, no sockets): {base:.2f} us without metrics, "
          f"{with_m:.2f} us with ({(with_m / base - 1) * 100:+.1f}%)")
    for g in args.groups:
        loop_ms, encode_ms, size = scrape_ms(g, args.members)
        print(f"scrape with {g} groups of {args.members} members: {loop_ms:.1f} ms on the event loop "
              f"(snapshot), {encode_ms:.1f} ms encoding in a thread, {size / 1024:.0f} KiB")

    variants = ("no metrics", "metrics", "admin app")
    rates: dict[str, list[float]] = {v: [] for v in variants}
    cpu: dict[str, list[float]] = {v: [] for v in variants}
    for r in range(args.rounds):
        for v in variants:
            rate, us = heartbeats(v, args.hb_connections, args.hb_depth, args.hb_seconds)
            rates[v].append(rate)
            cpu[v].append(us)
            print(f"  round {r + 1}: {v:<10} {rate:>9.0f} heartbeats/s  {us:6.2f} us CPU each", flush=True)
    base, base_cpu = statistics.median(rates["no metrics"]), statistics.median(cpu["no metrics"])
    best, best_cpu = max(rates["no metrics"]), min(cpu["no metrics"])
    for v in variants:
        med, med_cpu = statistics.median(rates[v]), statistics.median(cpu[v])
        print(f"{v:<10}  median {med:>9.0f} heartbeats/s ({(med / base - 1) * 100:+.1f}%), "
              f"{med_cpu:6.2f} us CPU each ({(med_cpu / base_cpu - 1) * 100:+.1f}%);  "
              f"best {max(rates[v]):>9.0f}/s ({(max(rates[v]) / best - 1) * 100:+.1f}%), "
              f"{min(cpu[v]):6.2f} us ({(min(cpu[v]) / best_cpu - 1) * 100:+.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
