"""Share groups (KIP-932) through real confluent-kafka ShareConsumers: groupcoord beside librdkafka's mock
cluster, in the same run.

    python bench/share.py [--records 20000] [--consumers 10] [--partitions 4] [--lock-ms 1000] [--runs 1]

For each target (groupcoord serve in a process of its own, Kafka 4.3 emulated; librdkafka's mock cluster
in this process):

* throughput: ``--records`` produced to a topic of ``--partitions`` partitions, then ``--consumers``
  ShareConsumers (implicit acknowledgement) polled in turn from one thread until every record is in:
  records per second from the first poll to the last record, and the records delivered more than once;
* redelivery after a lock's expiry: on a topic of two partitions, one consumer (explicit mode), alone,
  takes a batch and sits on it; a second consumer joins (and gets one partition); the time from the
  first one's acquisition plus the lock duration to the second one's receipt of the same records
  (median and worst over the records of its partition);
* groupcoord's cost per acquired record: its process's CPU time over the throughput phase divided by
  the records acquired (the mock runs inside this process: not measured).
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from confluent_kafka import Producer, ShareConsumer

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent / "tests" / "client"))
from rdkafka_mock import MockCluster  # noqa: E402

TOPIC = "jobs"
TWO = "two"          # the redelivery phase's topic, of two partitions


class Serve:
    """`groupcoord serve` (share groups on, a short minimum lock) in a process of its own."""

    def __init__(self, partitions: int, lock_ms: int) -> None:
        args = [sys.executable, "-m", "groupcoord.cli", "serve", "--profile", "test", "--no-data-dir",
                "--topic", f"{TOPIC}:{partitions}", "--topic", f"{TWO}:2", "--port", "0", "--log-level", "warning",
                "--set", "group.share.min.record.lock.duration.ms=1000",
                "--set", f"group.share.record.lock.duration.ms={lock_ms}"]
        self.log = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True)
        m = re.match(r"bootstrap servers: (\S+)", self.proc.stdout.readline())
        if not m:
            self.close()
            raise RuntimeError("groupcoord serve did not start")
        self.bootstrap_servers = m.group(1)

    def earliest(self, group: str) -> None:
        """share.auto.offset.reset=earliest for the group (kafka-configs.sh's way, our CLI)."""
        subprocess.run([sys.executable, "-m", "groupcoord.cli", "configs", "--bootstrap-server",
                        self.bootstrap_servers, "--alter", "--group", group, "--add-config",
                        "share.auto.offset.reset=earliest"], check=True, capture_output=True)

    def cpu_seconds(self) -> float:
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


class Mock:
    def __init__(self, partitions: int, lock_ms: int) -> None:
        self.mock = MockCluster(brokers=1)
        self.mock.create_topic(TOPIC, partitions)
        self.mock.create_topic(TWO, 2)
        self.mock.share_groups(earliest=True, record_lock_duration_ms=lock_ms)
        self.bootstrap_servers = self.mock.bootstrap_servers

    def earliest(self, group: str) -> None:
        pass            # (a cluster-wide setting of the mock, set above)

    def cpu_seconds(self) -> float | None:
        return None

    def close(self) -> None:
        self.mock.close()


def produce(bootstrap: str, n: int, partitions: int, topic: str = TOPIC) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        p.produce(topic, value=b"job-%d" % i, partition=i % partitions)
        if i % 10_000 == 0:
            p.poll(0)
    p.flush(30)


def consumer(bootstrap: str, group: str, name: str, explicit: bool = False, topic: str = TOPIC) -> ShareConsumer:
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name, "log_level": 3}
    if explicit:
        conf["share.acknowledgement.mode"] = "explicit"
    c = ShareConsumer(conf)
    c.subscribe([topic])
    return c


def throughput(target, n: int, consumers: int, partitions: int) -> dict:
    group = "throughput"
    target.earliest(group)
    produce(target.bootstrap_servers, n, partitions)
    cs = [consumer(target.bootstrap_servers, group, f"c{i}") for i in range(consumers)]
    seen: dict[tuple[int, int], int] = {}
    cpu0 = target.cpu_seconds()
    started = time.monotonic()
    deadline = started + 120
    try:
        while len(seen) < n and time.monotonic() < deadline:
            for c in cs:
                for m in c.poll(0.05):
                    if m.error() is None:
                        key = (m.partition(), m.offset())
                        seen[key] = seen.get(key, 0) + 1
        elapsed = time.monotonic() - started
        cpu1 = target.cpu_seconds()
    finally:
        for c in cs:
            c.close()
    delivered = sum(seen.values())
    return {"records": len(seen), "seconds": elapsed, "per_second": len(seen) / elapsed,
            "duplicates": delivered - len(seen),
            "cpu_us_per_record": None if cpu0 is None else (cpu1 - cpu0) / max(1, delivered) * 1e6}


def redelivery(target, lock_ms: int) -> dict:
    """The holder, alone in the group, takes records of both partitions (explicit mode) and sits on them;
    the taker joins and gets one partition (both assignors give each member one of two): its held
    records come to the taker once their locks expire."""
    group = "redelivery"
    target.earliest(group)
    produce(target.bootstrap_servers, 200, 2, TWO)
    holder = consumer(target.bootstrap_servers, group, "holder", explicit=True, topic=TWO)
    taker = None
    held: dict[tuple[int, int], float] = {}
    latencies: dict[tuple[int, int], float] = {}
    try:
        deadline = time.monotonic() + 30
        while not held and time.monotonic() < deadline:
            for m in holder.poll(0.1):
                if m.error() is None:
                    held[(m.partition(), m.offset())] = time.monotonic()
        taker = consumer(target.bootstrap_servers, group, "taker", topic=TWO)
        expires = {k: t + lock_ms / 1000 for k, t in held.items()}
        deadline = time.monotonic() + lock_ms / 1000 + 30
        partition_taken = None
        while time.monotonic() < deadline:
            for m in taker.poll(0.05):
                key = (m.partition(), m.offset())
                if m.error() is None and key in held and key not in latencies:
                    latencies[key] = time.monotonic() - expires[key]
                    partition_taken = m.partition()
            if partition_taken is not None and all(k in latencies for k in held if k[0] == partition_taken):
                break
    finally:
        if taker is not None:
            taker.close()
        holder.close()
    values = sorted(latencies.values())
    return {"held": len(held), "partitions_held": len({p for p, _ in held}), "redelivered": len(latencies),
            "median_ms": statistics.median(values) * 1000 if values else None,
            "worst_ms": values[-1] * 1000 if values else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--consumers", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--lock-ms", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    print(f"load average: {os.getloadavg()}")
    rows = []
    for run in range(args.runs):
        for name, make in (("groupcoord", Serve), ("librdkafka mock", Mock)):
            target = make(args.partitions, args.lock_ms)
            try:
                t = throughput(target, args.records, args.consumers, args.partitions)
                r = redelivery(target, args.lock_ms)
            finally:
                target.close()
            rows.append((run, name, t, r))
            print(f"run {run} {name}: {t} {r}", flush=True)
    print()
    print("| run | target | records/s | duplicates | µs CPU per record | redelivered / held | after expiry, median "
          "| worst |")
    print("|---|---|---|---|---|---|---|---|")
    for run, name, t, r in rows:
        cpu = "—" if t["cpu_us_per_record"] is None else f"{t['cpu_us_per_record']:.0f}"
        med = "—" if r["median_ms"] is None else f"{r['median_ms']:.0f} ms"
        worst = "—" if r["worst_ms"] is None else f"{r['worst_ms']:.0f} ms"
        print(f"| {run + 1} | {name} | {t['per_second']:,.0f} ({t['records']:,} in {t['seconds']:.1f} s) | {t['duplicates']:,} | "
              f"{cpu} | {r['redelivered']} / {r['held']} | {med} | {worst} |")


if __name__ == "__main__":
    main()
