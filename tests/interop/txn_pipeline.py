"""A consume-transform-produce pipeline (exactly-once) that can kill itself, run as a subprocess
by test_interop_transactions.py.

    python txn_pipeline.py CLIENT BOOTSTRAP --group G --transactional-id T --source IN --sink OUT
                           [--batch N] [--kill-point POINT --kill-in TXN --seed S]

CLIENT is confluent, kafka-python or aiokafka. Each transaction copies one batch of consumed
records (value ``v`` becomes ``copy:v``, key kept) to SINK and commits the input positions with
``send_offsets_to_transaction``. The producer is initialized before the consumer reads its
committed offsets (so a transaction the previous incarnation left prepared is completed first).
The process exits 0 once its positions reach the source's end offsets (read at start), all committed.

With --kill-point the process dies by ``os._exit(KILLED)`` in transaction number --kill-in (1 the
first of this run) at:

- ``mid_batch``: half the batch produced (not flushed);
- ``after_produce``: the whole batch produced and flushed, no offsets sent;
- ``after_send_offsets``: offsets sent (pending in the group coordinator), no commit;
- ``in_commit``: a few milliseconds (seeded) after commit_transaction began, whether or not it ended;
- ``after_commit``: right after commit_transaction returned.

Confluent and kafka-python consumers subscribe with a static group.instance.id (the next
incarnation replaces the dead member at once) and pass their group metadata (KIP-447); aiokafka,
which has neither static membership nor group metadata in send_offsets_to_transaction, assigns
the source's partitions itself and passes the group id.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import threading
import time

KILLED = 75
POINTS = ("mid_batch", "after_produce", "after_send_offsets", "in_commit", "after_commit")
DEADLINE = 60.0


class Killer:
    def __init__(self, point: str | None, kill_in: int, seed: int):
        self.point, self.kill_in, self.rng = point, kill_in, random.Random(seed)
        self.txn = 0

    def begin(self) -> None:
        self.txn += 1

    def at(self, point: str) -> None:
        if point == self.point and self.txn == self.kill_in:
            log("killed", point=point, txn=self.txn)
            os._exit(KILLED)

    def arm_in_commit(self) -> None:
        if self.point == "in_commit" and self.txn == self.kill_in:
            delay = self.rng.uniform(0, 0.004)
            log("killing in commit", delay=round(delay, 4), txn=self.txn)
            threading.Timer(delay, os._exit, (KILLED,)).start()


def log(what: str, **fields) -> None:
    print(json.dumps({"t": round(time.monotonic(), 3), "what": what, **fields}), flush=True)


def transform(value: bytes) -> bytes:
    return b"copy:" + value


def done(position: dict[int, int], end: dict[int, int]) -> bool:
    return all(position.get(p, 0) >= e for p, e in end.items())


# ============================================================================ confluent-kafka
def run_confluent(a, killer: Killer) -> int:
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer({"bootstrap.servers": a.bootstrap, "transactional.id": a.transactional_id,
                         "linger.ms": 5, "transaction.timeout.ms": 60000})
    producer.init_transactions(30)
    consumer = Consumer({"bootstrap.servers": a.bootstrap, "group.id": a.group,
                         "group.instance.id": f"{a.transactional_id}-consumer", "session.timeout.ms": 10000,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    consumer.subscribe([a.source])
    deadline = time.monotonic() + DEADLINE
    pending = []
    while len(consumer.assignment()) < a.partitions:
        pending += consumer.consume(a.batch, 0.05)
        assert time.monotonic() < deadline, "no assignment"
    end = {p: consumer.get_watermark_offsets(TopicPartition(a.source, p), 10)[1] for p in range(a.partitions)}
    committed = consumer.committed([TopicPartition(a.source, p) for p in range(a.partitions)], 30)
    position = {tp.partition: max(tp.offset, 0) for tp in committed}
    log("started", end=end, committed=position)
    while not done(position, end):
        assert time.monotonic() < deadline, f"stuck at {position} of {end}"
        msgs = [m for m in (pending or consumer.consume(a.batch, 0.2)) if not m.error()]
        pending = []
        if not msgs:
            continue
        producer.begin_transaction()
        killer.begin()
        for i, m in enumerate(msgs):
            if i == len(msgs) // 2:
                killer.at("mid_batch")
            producer.produce(a.sink, key=m.key(), value=transform(m.value()))
            position[m.partition()] = m.offset() + 1
        producer.flush(30)
        killer.at("after_produce")
        producer.send_offsets_to_transaction([TopicPartition(a.source, p, o) for p, o in position.items()],
                                             consumer.consumer_group_metadata(), 30)
        killer.at("after_send_offsets")
        killer.arm_in_commit()
        producer.commit_transaction(30)
        killer.at("in_commit")
        killer.at("after_commit")
    log("done", position=position)
    consumer.close()
    return 0


# ============================================================================ kafka-python
def run_kafka_python(a, killer: Killer) -> int:
    import logging

    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)    # (shown by the test when a run fails)
    logging.getLogger("kafka.coordinator").setLevel(logging.DEBUG)

    producer = KafkaProducer(bootstrap_servers=a.bootstrap, transactional_id=a.transactional_id, linger_ms=5)
    producer.init_transactions()
    consumer = KafkaConsumer(bootstrap_servers=a.bootstrap, group_id=a.group,
                             group_instance_id=f"{a.transactional_id}-consumer", session_timeout_ms=10000,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             isolation_level="read_committed")
    # the source's metadata first: a first join without it assigns nothing, and the rejoin that follows
    # at times left kafka-python 3.0.12 with the SyncGroup answered but the assignment never applied
    assert len(consumer.partitions_for_topic(a.source)) == a.partitions
    consumer.subscribe([a.source])
    tps = [TopicPartition(a.source, p) for p in range(a.partitions)]
    deadline = time.monotonic() + DEADLINE
    pending: dict = {}
    while len(consumer.assignment()) < a.partitions:
        for tp, records in consumer.poll(timeout_ms=500, max_records=a.batch).items():
            pending.setdefault(tp, []).extend(records)
        assert time.monotonic() < deadline, "no assignment"
    end = {tp.partition: o for tp, o in consumer.end_offsets(tps).items()}
    position = {tp.partition: consumer.committed(tp) or 0 for tp in tps}
    log("started", end=end, committed=position)
    while not done(position, end):
        assert time.monotonic() < deadline, f"stuck at {position} of {end}"
        got = pending or consumer.poll(timeout_ms=200, max_records=a.batch)
        pending = {}
        msgs = [r for records in got.values() for r in records]
        if not msgs:
            continue
        producer.begin_transaction()
        killer.begin()
        for i, r in enumerate(msgs):
            if i == len(msgs) // 2:
                killer.at("mid_batch")
            producer.send(a.sink, key=r.key, value=transform(r.value))
            position[r.partition] = r.offset + 1
        producer.flush(30)
        killer.at("after_produce")
        producer.send_offsets_to_transaction(
            {TopicPartition(a.source, p): OffsetAndMetadata(o, "", -1) for p, o in position.items()},
            consumer.group_metadata())
        killer.at("after_send_offsets")
        killer.arm_in_commit()
        producer.commit_transaction()
        killer.at("in_commit")
        killer.at("after_commit")
    log("done", position=position)
    consumer.close()
    producer.close(10)
    return 0


# ============================================================================ aiokafka
async def run_aiokafka(a, killer: Killer) -> int:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    producer = AIOKafkaProducer(bootstrap_servers=a.bootstrap, transactional_id=a.transactional_id,
                                linger_ms=5)
    await producer.start()          # (InitProducerId)
    consumer = AIOKafkaConsumer(bootstrap_servers=a.bootstrap, group_id=a.group, enable_auto_commit=False,
                                auto_offset_reset="earliest", isolation_level="read_committed")
    await consumer.start()
    tps = [TopicPartition(a.source, p) for p in range(a.partitions)]
    consumer.assign(tps)
    end = {tp.partition: o for tp, o in (await consumer.end_offsets(tps)).items()}
    position = {tp.partition: (await consumer.committed(tp)) or 0 for tp in tps}
    log("started", end=end, committed=position)
    deadline = time.monotonic() + DEADLINE
    while not done(position, end):
        assert time.monotonic() < deadline, f"stuck at {position} of {end}"
        got = await consumer.getmany(timeout_ms=200, max_records=a.batch)
        msgs = [r for records in got.values() for r in records]
        if not msgs:
            continue
        await producer.begin_transaction()
        killer.begin()
        futures = []
        for i, r in enumerate(msgs):
            if i == len(msgs) // 2:
                killer.at("mid_batch")
            futures.append(await producer.send(a.sink, key=r.key, value=transform(r.value)))
            position[r.partition] = r.offset + 1
        await asyncio.gather(*futures)
        killer.at("after_produce")
        await producer.send_offsets_to_transaction({TopicPartition(a.source, p): o for p, o in position.items()},
                                                   a.group)
        killer.at("after_send_offsets")
        killer.arm_in_commit()
        await producer.commit_transaction()
        killer.at("in_commit")
        killer.at("after_commit")
    log("done", position=position)
    await consumer.stop()
    await producer.stop()
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("client", choices=("confluent", "kafka-python", "aiokafka"))
    p.add_argument("bootstrap")
    p.add_argument("--group", required=True)
    p.add_argument("--transactional-id", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--partitions", type=int, required=True)
    p.add_argument("--sink", required=True)
    p.add_argument("--batch", type=int, default=200)
    p.add_argument("--kill-point", choices=POINTS)
    p.add_argument("--kill-in", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    killer = Killer(a.kill_point, a.kill_in, a.seed)
    if a.client == "confluent":
        return run_confluent(a, killer)
    if a.client == "kafka-python":
        return run_kafka_python(a, killer)
    return asyncio.run(run_aiokafka(a, killer))


if __name__ == "__main__":
    sys.exit(main())
