"""Transactional producers that die with the service, run as subprocesses by test_interop_transactions.py.

    python txn_producer.py open BOOTSTRAP TRANSACTIONAL_ID COUNT
    python txn_producer.py storm BOOTSTRAP TRANSACTIONAL_ID

``open``: produces COUNT records ``open-i`` to ``out`` (flushed: acknowledged by the broker), sends
offset COUNT of ``in`` partition 0 for group ``g-open`` to the transaction, prints ``open`` and
exits at once (os._exit): the transaction stays Ongoing in the coordinator until its timeout.

``storm``: commits transactions back to back until killed; transaction n writes
``{TRANSACTIONAL_ID}/{n}/{j}`` (j < 5) to ``out`` and offset n of ``in`` partition 0 for the group
named TRANSACTIONAL_ID, and prints n once commit_transaction returned.

Both use transaction.timeout.ms=3000.
"""
from __future__ import annotations

import os
import sys

from confluent_kafka import Consumer, Producer, TopicPartition

TIMEOUT_MS = 3000


def main() -> None:
    mode, bootstrap, transactional_id = sys.argv[1:4]
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 1,
                         "transaction.timeout.ms": TIMEOUT_MS})
    producer.init_transactions(30)
    group = "g-open" if mode == "open" else transactional_id
    metadata = Consumer({"bootstrap.servers": bootstrap, "group.id": group}).consumer_group_metadata()
    if mode == "open":
        count = int(sys.argv[4])
        producer.begin_transaction()
        for i in range(count):
            producer.produce("out", value=f"open-{i}".encode(), partition=i % 2)
        assert producer.flush(30) == 0
        producer.send_offsets_to_transaction([TopicPartition("in", 0, count)], metadata, 30)
        print("open", flush=True)
        os._exit(0)
    n = 0
    while True:
        n += 1
        producer.begin_transaction()
        for j in range(5):
            producer.produce("out", value=f"{transactional_id}/{n}/{j}".encode(), partition=j % 2)
        producer.send_offsets_to_transaction([TopicPartition("in", 0, n)], metadata, 30)
        producer.commit_transaction(30)
        print(n, flush=True)


if __name__ == "__main__":
    main()
