"""Transactions per second through confluent-kafka's transactional producer, against groupcoord and
librdkafka's mock cluster in the same run.

Each transaction: begin, 10 records to one partition, commit (``--offsets``: also
``send_offsets_to_transaction`` of a group's offset, the consume-transform-produce pattern's commit).
groupcoord runs as `groupcoord serve --profile test --no-data-dir` in a process of its own (``--data-dir``
adds a data dir, fsync "interval"), as a user would run it; the mock runs in the benchmark's process
(librdkafka's own threads). The producer is the same for both (``linger.ms`` 0: a transaction's records
go at once). A warm-up of 20 transactions is not counted; the median of ``--runs`` runs is reported.

    python bench/transactions.py [--transactions 500] [--runs 3] [--offsets] [--data-dir]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from confluent_kafka import Consumer, Producer, TopicPartition

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from coordinator import Serve  # noqa: E402
from rdkafka_mock import MockCluster  # noqa: E402  (coordinator.py put tests/client on the path)

TOPIC = "t0"       # a topic Serve creates (8 partitions); the records all go to partition 0
GROUP = "bench-txn"


def transactions_per_second(bootstrap: str, count: int, offsets: bool, label: str) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{label}-{time.monotonic_ns()}",
                         "linger.ms": 0, "enable.idempotence": True})
    consumer = None
    producer.init_transactions(30)
    if offsets:     # a consumer of the group, for its group metadata (generation, member id)
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    try:
        def one(i: int) -> None:
            producer.begin_transaction()
            for j in range(10):
                producer.produce(TOPIC, value=b"%d-%d" % (i, j), partition=0)
            if offsets:
                producer.send_offsets_to_transaction([TopicPartition(TOPIC, 1, i + 1)],
                                                     consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
        for i in range(20):
            one(i)
        started = time.perf_counter()
        for i in range(20, 20 + count):
            one(i)
        return count / (time.perf_counter() - started)
    finally:
        if consumer is not None:
            consumer.close()
        producer.flush(5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transactions", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--offsets", action="store_true", help="send_offsets_to_transaction in each transaction")
    ap.add_argument("--data-dir", action="store_true", help="groupcoord keeps its logs in a data dir")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; {args.transactions} transactions of 10 records per run, "
          f"{args.runs} runs{', with offsets' if args.offsets else ''}")
    results: dict[str, list[float]] = {"groupcoord": [], "librdkafka mock": []}
    with tempfile.TemporaryDirectory() as tmp:
        with Serve(data_dir=tmp if args.data_dir else None) as serve, MockCluster(brokers=1) as mock:
            mock.create_topic(TOPIC, 8)
            for run in range(args.runs):        # alternating, so that drift hits both alike
                results["groupcoord"].append(transactions_per_second(serve.bootstrap_servers, args.transactions,
                                                                     args.offsets, f"gc{run}"))
                results["librdkafka mock"].append(transactions_per_second(mock.bootstrap_servers, args.transactions,
                                                                          args.offsets, f"mock{run}"))
    gc, mock = statistics.median(results["groupcoord"]), statistics.median(results["librdkafka mock"])
    print("| target | transactions/s (median) | runs |")
    print("|---|---|---|")
    for name, values in results.items():
        print(f"| {name} | {statistics.median(values):,.0f} | {', '.join(f'{v:,.0f}' for v in values)} |")
    print(f"groupcoord / mock: {gc / mock:.2f}x")


if __name__ == "__main__":
    main()
