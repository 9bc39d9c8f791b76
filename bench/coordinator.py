"""Coordinator benchmarks, against librdkafka's mock cluster measured in the same run.

(a) groups of N confluent-kafka consumers (heartbeat 1 s, session 10 s): time until
    the group is Stable (every member has its assignment and together they cover every
    partition), then time until it is Stable again after one member leaves gracefully;
    on groupcoord (--profile test) and on librdkafka's mock cluster.
(b) heartbeats per second that one node serves to many connections: a load generator
    in another process pipelines raw Heartbeat v4 requests; the service's event loop
    lag is sampled every 5 ms and its worst value reported.
(c) the consumer group protocol of KIP-848 beside the classic one: 10 confluent-kafka consumers
    on two topics of 8 partitions (t0, t1) against `groupcoord serve --profile test` (a process
    of its own) and librdkafka's mock cluster (its default 3 s consumer heartbeat and shorter
    ones), with the classic protocol (cooperative-sticky) on both for comparison: time from
    subscribe until every partition is owned exactly once and every member has some; after one
    member closes, time until its partitions are owned by others, all exactly once, and how many
    other partitions changed owner; samples in which a partition was owned by two members.

    python bench/coordinator.py [--members 10 50] [--hb-seconds 5] [--skip-mock]
    python bench/coordinator.py --only consumer [--consumer-runs 3] [--mock-hb-ms default 1000 250]
"""
from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import re
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
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


# ---- (c) the consumer group protocol (KIP-848) beside the classic one --------------------------

CP_TOPICS = {"t0": 8, "t1": 8}
CP_PARTITIONS = frozenset((t, p) for t, n in CP_TOPICS.items() for p in range(n))
SAMPLE_S = 0.005        # the double-ownership sampler's period


class Ledger:
    """Every change of a member's owned partitions, in order: (monotonic time, member index, owned after)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.changes: list[tuple[float, int, frozenset]] = []
        self.last = time.monotonic()

    def record(self, index: int, owned: frozenset) -> None:
        with self.lock:
            self.last = time.monotonic()
            self.changes.append((self.last, index, owned))


class Owner:
    """A confluent-kafka consumer polled in its own thread. What it owns is what its rebalance callbacks
    said, as the interop tests read it: incremental with the consumer protocol and cooperative-sticky,
    the whole set with eager assignors; a partition is owned from the start of on_assign to the end of
    on_revoke / on_lost."""

    def __init__(self, bootstrap: str, group: str, index: int, protocol: str, strategy: str | None,
                 ledger: Ledger):
        conf = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": f"bench-{index}",
                "enable.auto.commit": False, "log_level": 3, "error_cb": self._error}
        if protocol == "consumer":
            conf["group.protocol"] = "consumer"     # librdkafka refuses the classic timeouts with it
        else:
            conf.update({"session.timeout.ms": 10000, "heartbeat.interval.ms": 1000,
                         "partition.assignment.strategy": strategy})
        self.index, self.ledger = index, ledger
        self.owned: frozenset = frozenset()
        self.errors: list[str] = []
        self.close_started: float | None = None
        self.go = threading.Event()
        self.stop = threading.Event()
        self.closed = threading.Event()
        self.consumer = Consumer(conf)
        self.thread = threading.Thread(target=self._run, name=f"bench-{index}", daemon=True)
        self.thread.start()

    def _subscribe(self) -> None:
        def tps(partitions):
            return frozenset((p.topic, p.partition) for p in partitions)
        self.consumer.subscribe(sorted(CP_TOPICS),
                                on_assign=lambda c, ps: self._set(self.owned | tps(ps)),
                                on_revoke=lambda c, ps: self._set(self.owned - tps(ps)),
                                on_lost=lambda c, ps: self._set(self.owned - tps(ps)))

    def _set(self, owned: frozenset) -> None:
        if owned != self.owned:
            self.owned = owned
            self.ledger.record(self.index, owned)

    def _error(self, err) -> None:
        self.errors.append(str(err))

    def _run(self) -> None:
        # subscribe on the thread that polls: a subscribe() from another thread while this one is
        # in poll() can block (seen with confluent-kafka 2.16)
        self.go.wait()
        if not self.stop.is_set():
            self._subscribe()
        while not self.stop.is_set():
            msg = self.consumer.poll(0.05)
            if msg is not None and msg.error() and msg.error().fatal():
                self.errors.append(str(msg.error()))
        self.close_started = time.monotonic()
        self.consumer.close()       # the revocation callback, then the leave
        self._set(frozenset())      # in case close() gave no callback
        self.closed.set()


def _owners(owned: list[frozenset]) -> dict:
    where: dict = {}
    for i, o in enumerate(owned):
        for tp in o:
            where.setdefault(tp, []).append(i)
    return where


def _exact_cover(owned) -> bool:
    return sum(len(o) for o in owned) == len(CP_PARTITIONS) and frozenset().union(*owned) == CP_PARTITIONS


def _first_in_ledger(ledger: Ledger, n: int, since: float, cond) -> float | None:
    """The time of the first change after ``since`` that made cond(owned by member index) true."""
    owned = [frozenset()] * n
    with ledger.lock:
        changes = list(ledger.changes)
    for t, i, o in changes:
        owned[i] = o
        if t > since and cond(owned):
            return t
    return None


def _double_states(ledger: Ledger, n: int) -> int:
    """Changes after which some partition had two owners (the exact count the 5 ms samples approximate)."""
    owned = [frozenset()] * n
    count = 0
    with ledger.lock:
        changes = list(ledger.changes)
    for _, i, o in changes:
        owned[i] = o
        count += sum(len(o) for o in owned) != len(frozenset().union(*owned))
    return count


def _settle(members: list[Owner], ledger: Ledger, cond, quiet: float, timeout: float) -> bool:
    """Wait until cond(owned) holds and no member's partitions changed for ``quiet`` seconds."""
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        owned = [m.owned for m in members]
        if cond(owned) and time.monotonic() - ledger.last >= quiet:
            return True
        time.sleep(0.02)
    return False


class Sampler:
    """Every 5 ms, whether some partition is owned by two members at once."""

    def __init__(self, members: list[Owner]):
        self.members, self.samples, self.double = members, 0, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(SAMPLE_S):
            owned = [m.owned for m in self.members]
            self.samples += 1
            self.double += sum(len(o) for o in owned) != len(frozenset().union(*owned))

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)


def protocol_times(bootstrap: str, n: int, group: str, protocol: str, strategy: str | None,
                   hb_s: float) -> dict:
    """Formation and the re-settle after a graceful leave of one group of n consumers on t0 and t1."""
    quiet = max(1.5, 2.5 * hb_s)          # no change for this long: the group has settled
    timeout = 60 + 10 * hb_s
    ledger = Ledger()
    members = [Owner(bootstrap, group, i, protocol, strategy, ledger) for i in range(n)]
    sampler = Sampler(members)
    r = {"n": n, "formed": None, "stable": None, "busy": None, "resettled": None, "resettle_stable": None,
         "moved": None, "leaver_partitions": None}
    try:
        t0 = time.monotonic()
        for m in members:
            m.go.set()
        if not _settle(members, ledger, _exact_cover, quiet, timeout):
            return r
        owned = [m.owned for m in members]
        busy = sum(1 for o in owned if o)
        r["busy"] = busy
        r["stable"] = ledger.last - t0
        # every member busy; where the assignor leaves some idle (the mock's range per topic), as many
        # as in the settled group
        formed = _first_in_ledger(ledger, n, t0, lambda o: _exact_cover(o) and sum(1 for x in o if x) >= busy)
        r["formed"] = formed - t0
        leaver = next(m for m in members if m.owned)        # member 0 unless it has nothing
        before = {tp: i for tp, owners in _owners(owned).items() for i in owners}
        r["leaver_partitions"] = len(leaver.owned)
        leaver.stop.set()
        leaver.closed.wait(60)
        t_leave = leaver.close_started

        def resettled(o):
            return not o[leaver.index] and _exact_cover(o)
        if not _settle(members, ledger, resettled, quiet, timeout):
            return r
        r["resettle_stable"] = ledger.last - t_leave
        first = _first_in_ledger(ledger, n, t_leave, resettled)
        r["resettled"] = first - t_leave
        after = {tp: i for tp, owners in _owners([m.owned for m in members]).items() for i in owners}
        r["moved"] = sum(1 for tp, i in before.items() if i != leaver.index and after.get(tp) != i)
        return r
    finally:
        sampler.close()
        for m in members:
            m.stop.set()
            m.go.set()
        t_end = time.monotonic() + 60
        for m in members:
            m.closed.wait(max(0.0, t_end - time.monotonic()))
        r["double_samples"], r["samples"] = sampler.double, sampler.samples
        r["double_states"] = _double_states(ledger, n)
        r["errors"] = sorted({e for m in members for e in m.errors})


class Serve:
    """`groupcoord serve --profile test --no-data-dir --topic t0:8 --topic t1:8` in a process of its own
    (``data_dir``: that data dir instead of none)."""

    def __init__(self, *extra: str, data_dir: str | None = None):
        keep = ("--data-dir", data_dir) if data_dir else ("--no-data-dir",)
        args = [sys.executable, "-m", "groupcoord.cli", "serve", "--profile", "test", *keep,
                *(a for t, p in CP_TOPICS.items() for a in ("--topic", f"{t}:{p}")), "--port", "0",
                "--log-level", "warning", *extra]
        self.log = tempfile.TemporaryFile("w+")        # its warnings, shown if it ends badly
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        m = re.match(r"bootstrap servers: (\S+)", line)
        if not m:
            self.close()
            raise RuntimeError(f"groupcoord serve did not start: {line!r}")
        self.bootstrap_servers = m.group(1)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.returncode:
            self.log.seek(0)
            print(f"groupcoord serve ended with {self.proc.returncode}: {self.log.read()[-2000:]}", file=sys.stderr)
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def consumer_scenarios(mock: bool, mock_hbs: list[str], strategies: list[str]) -> list[dict]:
    """The rows of the side-by-side table: (label, target, protocol, strategy, heartbeat in s, mock hb ms)."""
    rows = [dict(label="groupcoord, consumer protocol (uniform)", target="groupcoord", protocol="consumer",
                 strategy=None, hb_s=0.25, mock_hb=None)]
    if mock:
        for hb in mock_hbs:
            ms = None if hb == "default" else int(hb)
            rows.append(dict(label=f"mock, consumer protocol, hb {'3000 ms (default)' if ms is None else f'{ms} ms'}",
                             target="mock", protocol="consumer", strategy=None,
                             hb_s=(3000 if ms is None else ms) / 1000, mock_hb=ms))
    for s in strategies:
        rows.append(dict(label=f"groupcoord, classic ({s})", target="groupcoord", protocol="classic",
                         strategy=s, hb_s=1.0, mock_hb=None))
        if mock:
            rows.append(dict(label=f"mock, classic ({s})", target="mock", protocol="classic",
                             strategy=s, hb_s=1.0, mock_hb=None))
    return rows


def run_scenario(row: dict, n: int, run: int) -> dict:
    group = f"cp-{row['target']}-{row['protocol']}-{run}"
    if row["target"] == "groupcoord":
        with Serve() as gc:
            return protocol_times(gc.bootstrap_servers, n, group, row["protocol"], row["strategy"], row["hb_s"])
    with MockCluster(brokers=1) as mock:
        for t, p in CP_TOPICS.items():
            mock.create_topic(t, p)
        if row["mock_hb"] is not None:
            mock.set_group_consumer_heartbeat_interval_ms(row["mock_hb"])
        return protocol_times(mock.bootstrap_servers, n, group, row["protocol"], row["strategy"], row["hb_s"])


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _doubles(rs) -> str:
    """Samples with a partition owned twice, of all samples (changes that made one, from the callbacks)."""
    return (f"{sum(r['double_samples'] for r in rs)} of {sum(r['samples'] for r in rs)} "
            f"({sum(r['double_states'] for r in rs)})")


def _span(values) -> str:
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _per(v, hb):
    return "-" if v is None else f"{v / hb:.1f}"


def _x(v, base):
    return "-" if v is None or not base else f"x{v / base:.1f}"


def consumer_bench(n: int, runs: int, mock: bool, mock_hbs: list[str], strategies: list[str]) -> None:
    rows = consumer_scenarios(mock, mock_hbs, strategies)
    # a SIGTERM (timeout(1)) unwinds, so that the groupcoord process of the row is stopped too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load0 = os.getloadavg()[0]
    print(f"consumer protocol beside classic: {n} confluent-kafka consumers, topics "
          f"{', '.join(f'{t}:{p}' for t, p in CP_TOPICS.items())}, {runs} run(s), load {load0:.1f}", flush=True)
    print(f"{'run':>3}  {'target':<44}  {'formed s':>8}  {'stable s':>8}  {'busy':>5}  {'re-settle s':>11}  "
          f"{'stable s':>8}  {'moved':>9}  {'double-owned (changes)':>23}", flush=True)
    results: dict[str, list[dict]] = {row["label"]: [] for row in rows}
    for run in range(runs):
        for row in rows:
            r = run_scenario(row, n, run)
            results[row["label"]].append(r)
            busy = "-" if r["busy"] is None else f"{r['busy']}/{n}"
            moved = "-" if r["moved"] is None else f"{r['moved']} (+{r['leaver_partitions']})"
            print(f"{run + 1:>3}  {row['label']:<44}  {_fmt(r['formed']):>8}  {_fmt(r['stable']):>8}  {busy:>5}  "
                  f"{_fmt(r['resettled']):>11}  {_fmt(r['resettle_stable']):>8}  {moved:>9}  "
                  f"{_doubles([r]):>23}"
                  + (f"  errors: {'; '.join(r['errors'])}" if r["errors"] else ""), flush=True)
    base = results[rows[0]["label"]]
    base_formed, base_resettled = _median([r["formed"] for r in base]), _median([r["resettled"] for r in base])
    print()
    print(f"medians of {runs} run(s); moved = other partitions whose owner changed (+ the leaver's), "
          f"lowest-highest over the runs; "
          f"x groupcoord = against the consumer-protocol row of groupcoord; load {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    print("| target | hb | formed s | in hb | x groupcoord | stable s | members busy | re-settle s | in hb | "
          "x groupcoord | moved (+ leaver's) | double-owned samples (changes) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        rs = results[row["label"]]
        formed, stable = _median([r["formed"] for r in rs]), _median([r["stable"] for r in rs])
        resettled = _median([r["resettled"] for r in rs])
        busy = sorted({r["busy"] for r in rs if r["busy"] is not None})
        done = [r for r in rs if r["moved"] is not None]
        moved = f"{_span([r['moved'] for r in done])} (+{_span([r['leaver_partitions'] for r in done])})" if done else "-"
        doubles = _doubles(rs)
        hb = row["hb_s"]
        print(f"| {row['label']} | {hb * 1000:.0f} ms | {_fmt(formed)} | {_per(formed, hb)} | "
              f"{_x(formed, base_formed)} | {_fmt(stable)} | {'/'.join(map(str, busy)) or '-'} of {n} | "
              f"{_fmt(resettled)} | {_per(resettled, hb)} | {_x(resettled, base_resettled)} | "
              f"{moved} | {doubles} |", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, nargs="+", default=[10, 50])
    ap.add_argument("--hb-seconds", type=float, default=5.0)
    ap.add_argument("--hb-connections", type=int, default=50)
    ap.add_argument("--hb-depth", type=int, default=64)
    ap.add_argument("--skip-mock", action="store_true", help="no librdkafka mock cluster rows")
    ap.add_argument("--skip-groups", action="store_true",
                    help="no group benchmarks, (a) and (c): the heartbeat throughput alone")
    ap.add_argument("--only", choices=("classic", "consumer"),
                    help="classic: (a) and (b) alone, as before the consumer protocol; "
                         "consumer: (c) alone, the consumer protocol beside the classic one")
    ap.add_argument("--consumer-members", type=int, default=10, help="(c): consumers in the group")
    ap.add_argument("--consumer-runs", type=int, default=1, help="(c): runs of every row (the table: medians)")
    ap.add_argument("--mock-hb-ms", nargs="+", default=["default", "1000", "250"],
                    help="(c): the mock's consumer-protocol heartbeat intervals, 'default' (3000 ms) "
                         "or milliseconds")
    ap.add_argument("--classic-strategies", nargs="*", default=["cooperative-sticky"],
                    help="(c): the classic rows' assignors (none: no classic rows)")
    args = ap.parse_args(argv)
    configure("console", "warning")

    if args.only == "consumer":
        if not args.skip_groups:
            consumer_bench(args.consumer_members, args.consumer_runs, not args.skip_mock, args.mock_hb_ms,
                           args.classic_strategies)
        return 0

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
    if args.only is None and not args.skip_groups:
        print()
        consumer_bench(args.consumer_members, args.consumer_runs, not args.skip_mock, args.mock_hb_ms,
                       args.classic_strategies)
    return 0


def _fmt(v):
    return "timeout" if v is None else f"{v:.2f}"


if __name__ == "__main__":
    sys.exit(main())
