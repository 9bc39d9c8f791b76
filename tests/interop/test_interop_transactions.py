"""Exactly-once with real clients (issue #32): transactions through the transaction coordinator,
transactional offset commits (KIP-447) in the group coordinator, read_committed fetches.

* A consume-transform-produce pipeline (txn_pipeline.py, a subprocess) killed by os._exit at
  seeded points and restarted copies every input record exactly once, and the group's committed
  offsets end at the input's end offsets (TransactionsBounceTest, with the application bounced
  rather than the brokers).
* A second producer with the same transactional id fences the first, whose open transaction is
  aborted (TransactionsTest.testFencingOnCommit / testFencingOnSend).
* A TxnOffsetCommit with the group metadata of a generation a rebalance ended is refused and its
  offsets never committed, with confluent-kafka and kafka-python (aiokafka passes only a group id)
  (KIP-447; TransactionsTest.testSendOffsetsWithGroupMetadata, OffsetMetadataManagerTest's
  transactional illegal-generation cases).
* The service killed (SIGKILL) mid-transaction and restarted on its data dir: committed records and
  offsets kept, a transaction whose commit was under way completed or aborted whole, an open one
  aborted at its timeout (TransactionsBounceTest, TransactionsExpirationTest).
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from clients import WAIT, Daemon, wait_until

pytestmark = pytest.mark.interop

HERE = Path(__file__).resolve().parent
SOURCE, SINK = "in", "out"
SOURCE_PARTITIONS, SINK_PARTITIONS = 4, 3
KILLED = 75          # txn_pipeline.KILLED
SEED = int(os.environ.get("GROUPCOORD_TXN_SEED", "32"))


# ============================================================================ helpers
def produce_input(bootstrap: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(SOURCE, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % SOURCE_PARTITIONS)
    assert producer.flush(WAIT) == 0


def read_all(bootstrap: str, topic: str, partitions: int, isolation: str = "read_committed",
             timeout: float = WAIT) -> list[tuple]:
    """Every record of topic (key, value) as a consumer with that isolation level sees it: read from the
    beginning until the high watermark of each partition (read_committed stops at the last stable offset:
    a transaction left open keeps it below the high watermark, and this times out)."""
    high = end_offsets(bootstrap, topic, partitions)     # (a read_committed consumer's watermark is the LSO)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False,
                         "isolation.level": isolation, "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        got: list[tuple] = []
        at_end: set[int] = set()

        def read():
            for m in consumer.consume(1000, 0.1):
                if m.error() is None:
                    got.append((m.key(), m.value()))
                    at_end.discard(m.partition())
                elif m.error().code() == KafkaError._PARTITION_EOF and m.offset() >= high[m.partition()]:
                    at_end.add(m.partition())
            return len(at_end) == partitions
        wait_until(read, timeout, message=lambda: f"{topic} read to its end ({isolation}): at end {at_end} of {high}")
        return got
    finally:
        consumer.close()


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return {tp.partition: tp.offset
                for tp in consumer.committed([TopicPartition(topic, p) for p in range(partitions)], WAIT)}
    finally:
        consumer.close()


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "isolation.level": "read_uncommitted"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), 10)[1] for p in range(partitions)}
    finally:
        consumer.close()


def run_pipeline(client: str, bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(HERE / "txn_pipeline.py"), client, bootstrap, "--group", "eos",
                           "--transactional-id", f"eos-{client}", "--source", SOURCE,
                           "--partitions", str(SOURCE_PARTITIONS), "--sink", SINK, *args],
                          capture_output=True, text=True, timeout=90)


def kill_plan(rng: random.Random, kills: int) -> list[str]:
    """kills points of txn_pipeline.POINTS, all five when kills >= 5; else at least one that leaves
    records (and offsets) of an unfinished transaction on the broker."""
    if kills >= 5:
        return rng.sample(["mid_batch", "after_produce", "after_send_offsets", "in_commit", "after_commit"], 5)
    plan = [rng.choice(["after_produce", "after_send_offsets"])]
    plan += rng.sample(["mid_batch", "in_commit", "after_commit"], kills - 1)
    rng.shuffle(plan)
    return plan


# ============================================================================ 1. the pipeline
@pytest.mark.parametrize("client, records, kills", [("confluent", 10_000, 5), ("kafka-python", 2_000, 2),
                                                    ("aiokafka", 2_000, 2)])
def test_a_pipeline_killed_and_restarted_copies_each_record_exactly_once(coord, client, records, kills):
    """TransactionsBounceTest (the copier bounced rather than the brokers) with
    TransactionsTest.testSendOffsetsWithGroupMetadata's consume-transform-produce loop."""
    c = coord(topics={SOURCE: SOURCE_PARTITIONS, SINK: SINK_PARTITIONS})
    produce_input(c.bootstrap, records)
    rng = random.Random(f"{SEED}/{client}")
    runs = []
    for point in kill_plan(rng, kills):
        kill_in = rng.randint(1, 4)
        run = run_pipeline(client, c.bootstrap, "--kill-point", point, "--kill-in", str(kill_in),
                           "--seed", str(rng.randrange(1 << 30)))
        runs.append((point, kill_in, run))
        assert run.returncode == KILLED, f"{point} in txn {kill_in}: rc {run.returncode}\n{run.stdout}{run.stderr}"
    last = run_pipeline(client, c.bootstrap)
    assert last.returncode == 0, last.stdout + last.stderr

    expected = Counter((f"k{i}".encode(), f"copy:v{i}".encode()) for i in range(records))
    got = Counter(read_all(c.bootstrap, SINK, SINK_PARTITIONS))
    duplicates = {r: n for r, n in got.items() if n > 1}
    assert not duplicates, f"{len(duplicates)} duplicated, e.g. {list(duplicates.items())[:5]}"
    assert not expected - got, f"{len(expected - got)} missing, e.g. {list(expected - got)[:5]}"
    assert got == expected
    # the killed incarnations did leave records on the broker, which the abort markers hide
    assert len(read_all(c.bootstrap, SINK, SINK_PARTITIONS, "read_uncommitted")) > records
    ends = end_offsets(c.bootstrap, SOURCE, SOURCE_PARTITIONS)
    assert sum(ends.values()) == records
    assert committed(c.bootstrap, "eos", SOURCE, SOURCE_PARTITIONS) == ends


# ============================================================================ 2. fencing
def _fence_confluent(bootstrap: str, tid: str) -> str:
    first = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    first.init_transactions(WAIT)
    first.begin_transaction()
    for i in range(5):
        first.produce(SINK, value=f"zombie-{i}".encode(), partition=0)
    assert first.flush(WAIT) == 0
    second = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    second.init_transactions(WAIT)
    with pytest.raises(KafkaException) as raised:
        first.commit_transaction(WAIT)
    error = raised.value.args[0]
    assert error.fatal(), error
    assert error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED), error
    second.begin_transaction()
    for i in range(5):
        second.produce(SINK, value=f"live-{i}".encode(), partition=0)
    second.commit_transaction(WAIT)
    return error.name()


def _fence_kafka_python(bootstrap: str, tid: str) -> str:
    from kafka import KafkaProducer
    from kafka.errors import ProducerFencedError

    first = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
    second = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
    try:
        first.init_transactions()
        first.begin_transaction()
        for i in range(5):
            first.send(SINK, value=f"zombie-{i}".encode(), partition=0)
        first.flush(WAIT)
        second.init_transactions()
        with pytest.raises(ProducerFencedError) as raised:
            first.commit_transaction()
        second.begin_transaction()
        for i in range(5):
            second.send(SINK, value=f"live-{i}".encode(), partition=0)
        second.commit_transaction()
        return type(raised.value).__name__
    finally:
        first.close(5)
        second.close(5)


def _fence_aiokafka(bootstrap: str, tid: str) -> str:
    import asyncio

    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import ProducerFenced

    async def scenario():
        first = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
        second = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
        await first.start()
        try:
            await first.begin_transaction()
            for i in range(5):
                await first.send_and_wait(SINK, value=f"zombie-{i}".encode(), partition=0)
            await second.start()
            with pytest.raises(ProducerFenced) as raised:
                await first.commit_transaction()
            await second.begin_transaction()
            for i in range(5):
                await second.send_and_wait(SINK, value=f"live-{i}".encode(), partition=0)
            await second.commit_transaction()
            return type(raised.value).__name__
        finally:
            for p in (first, second):
                try:
                    await p.stop()
                except Exception:       # the fenced one may refuse to stop cleanly
                    pass
    return asyncio.run(scenario())


@pytest.mark.parametrize("client", ["confluent", "kafka-python", "aiokafka"])
def test_a_second_producer_with_the_same_transactional_id_fences_the_first(coord, client):
    """TransactionsTest.testFencingOnCommit: the zombie's commit fails fatally with the fenced error
    (PRODUCER_FENCED); its open transaction, aborted by the second's InitProducerId, is never visible."""
    c = coord(topics={SINK: 1})
    fence = {"confluent": _fence_confluent, "kafka-python": _fence_kafka_python, "aiokafka": _fence_aiokafka}
    fence[client](c.bootstrap, f"fence-{client}")
    values = [v.decode() for _, v in read_all(c.bootstrap, SINK, 1)]
    assert values == [f"live-{i}" for i in range(5)]
    everything = [v.decode() for _, v in read_all(c.bootstrap, SINK, 1, "read_uncommitted")]
    assert [v for v in everything if v.startswith("zombie-")][:5] == [f"zombie-{i}" for i in range(5)]
    fenced = [e for e in c.events if e["event"] == "transaction.fenced"
              and e.get("transactional_id") == f"fence-{client}"]
    assert fenced, "no transaction.fenced event"


# ============================================================================ 3. KIP-447
def test_offsets_of_a_generation_a_rebalance_ended_are_refused(coord, closing):
    """KIP-447 zombie fencing by group generation: TransactionsTest.testSendOffsetsWithGroupMetadata's
    send_offsets_to_transaction with the group metadata of a consumer whose generation a rebalance
    (a second consumer joining) ended before the transaction's offsets were sent: the
    TxnOffsetCommit fails (ILLEGAL_GENERATION), the offsets are never committed and the
    transaction's records never visible; with the fresh metadata the same steps commit."""
    c = coord(topics={SOURCE: 2, SINK: 1})
    group = "kip447"

    def consumer(name):
        return closing(Consumer({"bootstrap.servers": c.bootstrap, "group.id": group, "client.id": name,
                                 "enable.auto.commit": False, "session.timeout.ms": 6000,
                                 "heartbeat.interval.ms": 200, "partition.assignment.strategy": "range"}))
    a = consumer("a")
    a.subscribe([SOURCE])
    wait_until(lambda: a.poll(0.05) is None and len(a.assignment()) == 2, message="a assigned both partitions")
    stale = a.consumer_group_metadata()
    old_generation = c.group(group).generation

    b = consumer("b")
    b.subscribe([SOURCE])
    wait_until(lambda: (a.poll(0.05), b.poll(0.05)) and len(a.assignment()) == 1 == len(b.assignment())
               and c.stable(group, 2), message="a rebalance to two members")
    assert c.group(group).generation > old_generation

    producer = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "kip447"})
    producer.init_transactions(WAIT)
    producer.begin_transaction()
    producer.produce(SINK, value=b"zombie", partition=0)
    with pytest.raises(KafkaException) as raised:
        producer.send_offsets_to_transaction([TopicPartition(SOURCE, 0, 5), TopicPartition(SOURCE, 1, 5)],
                                             stale, WAIT)
        producer.commit_transaction(WAIT)
    error = raised.value.args[0]
    assert error.code() in (KafkaError.ILLEGAL_GENERATION, KafkaError.UNKNOWN_MEMBER_ID, KafkaError._FENCED,
                            KafkaError.FENCED_INSTANCE_ID), error
    if error.fatal():
        producer = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "kip447"})
        producer.init_transactions(WAIT)
    else:
        assert error.txn_requires_abort(), error
        producer.abort_transaction(WAIT)
    assert committed(c.bootstrap, group, SOURCE, 2) == {0: -1001, 1: -1001}   # OFFSET_INVALID: none

    # the control: the same steps with a's current metadata commit
    a.poll(0.05)
    producer.begin_transaction()
    producer.produce(SINK, value=b"live", partition=0)
    producer.send_offsets_to_transaction([TopicPartition(SOURCE, 0, 5), TopicPartition(SOURCE, 1, 5)],
                                         a.consumer_group_metadata(), WAIT)
    producer.commit_transaction(WAIT)
    assert committed(c.bootstrap, group, SOURCE, 2) == {0: 5, 1: 5}
    assert [v for _, v in read_all(c.bootstrap, SINK, 1)] == [b"live"]


def test_kafka_python_offsets_of_a_generation_a_rebalance_ended_are_refused(coord, closing):
    """The same KIP-447 fencing with kafka-python: its ConsumerGroupMetadata (group_metadata()) of a
    generation a rebalance ended makes send_offsets_to_transaction fail (CommitFailedError, an abortable
    error), nothing is committed; with the consumer's current metadata the offsets commit."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTopicPartition
    from kafka.errors import CommitFailedError, KafkaError as KPError
    from kafka.structs import OffsetAndMetadata
    c = coord(topics={SOURCE: 2, SINK: 1})
    group = "kip447-kafka-python"
    a = closing(KafkaConsumer(bootstrap_servers=c.bootstrap, group_id=group, client_id="a", enable_auto_commit=False,
                              session_timeout_ms=6000, heartbeat_interval_ms=200))
    assert len(a.partitions_for_topic(SOURCE)) == 2      # (its metadata first: see txn_pipeline.py)
    a.subscribe([SOURCE])
    wait_until(lambda: a.poll(timeout_ms=50) is not None and len(a.assignment()) == 2, message="a assigned both")
    stale = a.group_metadata()
    old_generation = c.group(group).generation
    b = closing(Consumer({"bootstrap.servers": c.bootstrap, "group.id": group, "client.id": "b",
                          "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 200,
                          "partition.assignment.strategy": "range"}))
    b.subscribe([SOURCE])
    wait_until(lambda: (a.poll(timeout_ms=50), b.poll(0.05)) and len(a.assignment()) == 1 == len(b.assignment())
               and c.stable(group, 2), message="a rebalance to two members")
    assert c.group(group).generation > old_generation

    producer = closing(KafkaProducer(bootstrap_servers=c.bootstrap, transactional_id="kip447-kafka-python"))
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(SINK, value=b"zombie", partition=0)
    offsets = {KTopicPartition(SOURCE, p): OffsetAndMetadata(5, "", -1) for p in (0, 1)}
    with pytest.raises(KPError) as raised:
        producer.send_offsets_to_transaction(offsets, stale)
        producer.commit_transaction()
    assert isinstance(raised.value, CommitFailedError), raised.value
    producer.abort_transaction()
    assert committed(c.bootstrap, group, SOURCE, 2) == {0: -1001, 1: -1001}

    a.poll(timeout_ms=50)
    producer.begin_transaction()
    producer.send(SINK, value=b"live", partition=0)
    producer.send_offsets_to_transaction(offsets, a.group_metadata())
    producer.commit_transaction()
    assert committed(c.bootstrap, group, SOURCE, 2) == {0: 5, 1: 5}
    assert [v for _, v in read_all(c.bootstrap, SINK, 1)] == [b"live"]


# ============================================================================ 4. kill -9 of the service
#: the daemon of the kill -9 test: both topics, and timed-out transactions looked for every 200 ms
DAEMON_TOPICS = {SOURCE: 2, SINK: 2}
DAEMON_SETTINGS = ("transaction.abort.timed.out.transaction.cleanup.interval.ms=200",)


class Storm:
    """``txn_producer.py storm``: a producer process committing transactions back to back; ``acked`` is
    the last transaction whose commit_transaction returned."""

    def __init__(self, bootstrap: str, name: str):
        self.name = name
        self.acked = 0
        self.proc = subprocess.Popen([sys.executable, str(HERE / "txn_producer.py"), "storm", bootstrap, name],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.acked = int(line)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self.reader.join(10)


def test_kill_9_of_the_service_mid_transaction_loses_nothing_committed(tmp_path):
    """TransactionsBounceTest (the coordinator bounced by kill -9 amid transactions) and
    TransactionsExpirationTest (an open transaction aborted at its transaction.timeout.ms after the restart).

    Before the kill: one transaction committed; one left open by a producer that died (records
    acknowledged, offsets pending); three producer processes committing back to back, killed with the
    service (a transaction under way in each: open, or its commit prepared). After the restart on the same data dir and port:
    the committed transaction's records and offsets are there, each storm transaction is visible
    whole or not at all (every acknowledged one visible) with its group's offset matching the last
    visible one, and the open transaction is aborted by its timeout: read_committed reads to the end
    and never shows its records; its offsets are never committed."""
    data_dir = tmp_path / "data"
    first = Daemon(data_dir, DAEMON_TOPICS, events=tmp_path / "events-1.jsonl", settings=DAEMON_SETTINGS)
    daemons = [first]
    storms: list[Storm] = []
    try:
        bs = first.bootstrap
        done = Producer({"bootstrap.servers": bs, "transactional.id": "done"})
        done.init_transactions(WAIT)
        done.begin_transaction()
        for i in range(20):
            done.produce(SINK, value=f"done-{i}".encode(), partition=i % 2)
        metadata = Consumer({"bootstrap.servers": bs, "group.id": "g-done"}).consumer_group_metadata()
        done.send_offsets_to_transaction([TopicPartition(SOURCE, 0, 7), TopicPartition(SOURCE, 1, 9)], metadata,
                                         WAIT)
        done.commit_transaction(WAIT)

        opened = subprocess.run([sys.executable, str(HERE / "txn_producer.py"), "open", bs, "open", "10"],
                                capture_output=True, text=True, timeout=60)
        assert opened.stdout.strip() == "open", opened.stderr

        storms = [Storm(bs, f"storm-{i}") for i in range(3)]
        wait_until(lambda: all(s.acked >= 20 or s.proc.poll() is not None for s in storms),
                   message="storms under way")
        assert [s.proc.poll() for s in storms] == [None] * 3
        first.kill()
        for s in storms:     # the producers die with the service: what they left is the coordinator's to finish
            s.kill()

        second = Daemon(data_dir, DAEMON_TOPICS, events=tmp_path / "events-2.jsonl", settings=DAEMON_SETTINGS,
                        port=first.port)
        daemons.append(second)
        assert second.bootstrap == bs

        # read_committed reaches the end only once the open transaction is aborted (its timeout)
        records = [v.decode() for _, v in read_all(bs, SINK, 2, timeout=15)]
        fenced = wait_until(lambda: [e["cause"] for e in second.events_where(transactional_id="open") if e["event"] == "transaction.fenced"],
                            message="the open transaction's transaction.fenced event")      # (events file buffered)
        assert fenced == ["timeout"]
        assert sorted(v for v in records if v.startswith("done-")) == sorted(f"done-{i}" for i in range(20))
        assert not [v for v in records if v.startswith("open-")]
        assert len([v for _, v in read_all(bs, SINK, 2, "read_uncommitted") if v.startswith(b"open-")]) == 10
        assert committed(bs, "g-done", SOURCE, 2) == {0: 7, 1: 9}
        assert committed(bs, "g-open", SOURCE, 2) == {0: -1001, 1: -1001}

        for s in storms:
            visible = Counter(int(v.split("/")[1]) for v in records if v.startswith(f"{s.name}/"))
            assert set(visible.values()) == {5}, f"{s.name}: a transaction partly visible {visible}"
            last = max(visible)
            assert sorted(visible) == list(range(1, last + 1))
            # every acknowledged commit visible; the one under way at the kill maybe (if its commit was prepared)
            assert last in (s.acked, s.acked + 1), (s.name, last, s.acked)
            assert committed(bs, s.name, SOURCE, 1) == {0: last}
    finally:
        for s in storms:
            s.kill()
        for d in daemons:
            d.close()
