"""Transaction faults against a real client (confluent-kafka/librdkafka's transactional producer) over the
wire: each step of one producer's transaction failed once with a retriable error by its transactional id
(the client retries and the transaction commits: its record readable at read_committed, its offsets
committed), and a producer crashed between two steps (``crash_producer`` on ``transaction.partitions_added``):
its transaction aborted at its transaction.timeout.ms, or fenced by a new producer of the id, whose records
alone a read_committed reader sees; the crashed one, back, is fenced (librdkafka's _FENCED)."""
from __future__ import annotations

import threading

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from fault_clients import wait_until
from groupcoord.coordinator.embed import ThreadedCoordinator

pytestmark = pytest.mark.interop

RETRY = {"retry.backoff.ms": 20, "retry.backoff.max.ms": 100}


class Coordinator(ThreadedCoordinator):
    """A ThreadedCoordinator that records its transaction events."""

    def __init__(self, **kwargs):
        self.events: list[dict] = []
        self._lock = threading.Lock()
        super().__init__(emit=self._record, **kwargs)

    def _record(self, event):
        if event["event"].startswith("transaction."):
            with self._lock:
                self.events.append(event)

    def transaction_events(self, txn_id: str) -> list[tuple]:
        with self._lock:
            return [(e["event"], e.get("cause") or e.get("result")) for e in self.events
                    if e["transactional_id"] == txn_id]

    def faults(self, method: str, *args):
        return self.call(getattr(self.service.faults, method), *args)


@pytest.fixture
def gc():
    # timed-out transactions looked for every 100 ms, not every 10 s
    coordinator = Coordinator(topics={"in": 1, "out": 1},
                              config={"transaction.abort.timed.out.transaction.cleanup.interval.ms": 100}).start()
    yield coordinator
    coordinator.stop()


def producer(gc, txn_id: str, client_id: str, **config) -> Producer:
    return Producer({"bootstrap.servers": gc.bootstrap_servers, "transactional.id": txn_id, "client.id": client_id,
                     **RETRY, **config})


def read_committed(gc, topic: str = "out", expected: int = 1) -> list[bytes]:
    """The values a read_committed consumer reads from the topic's partition 0 (until ``expected`` of them)."""
    consumer = Consumer({"bootstrap.servers": gc.bootstrap_servers, "group.id": "reader",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    try:
        def read():
            m = consumer.poll(0.1)
            if m is not None and m.error() is None:
                values.append(m.value())
            return len(values) >= expected
        wait_until(read, 10, message=lambda: f"{expected} records read at read_committed, got {values}")
        return values
    finally:
        consumer.close()


def committed_offset(gc, group: str, topic: str = "in") -> int | None:
    consumer = Consumer({"bootstrap.servers": gc.bootstrap_servers, "group.id": group})
    try:
        return consumer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
    finally:
        consumer.close()


@pytest.mark.parametrize("api, error", [
    ("InitProducerId", "COORDINATOR_NOT_AVAILABLE"),
    ("AddPartitionsToTxn", "COORDINATOR_NOT_AVAILABLE"),
    ("Produce", "NOT_LEADER_OR_FOLLOWER"),
    ("AddOffsetsToTxn", "COORDINATOR_NOT_AVAILABLE"),
    ("TxnOffsetCommit", "COORDINATOR_NOT_AVAILABLE"),
    ("EndTxn", "COORDINATOR_NOT_AVAILABLE"),
])
def test_each_step_failed_once_is_retried_by_the_client_and_the_transaction_commits(gc, api, error):
    txn_id, group = f"pipeline-{api}", f"g-{api}"
    fault = gc.faults("add", {"api": api, "transactional_id": txn_id, "error": error, "count": 1})
    # another producer's same step is not failed
    bystander = gc.faults("add", {"api": api, "transactional_id": "someone-else", "error": error})
    p = producer(gc, txn_id, "pipeline")
    source = Consumer({"bootstrap.servers": gc.bootstrap_servers, "group.id": group})
    try:
        p.init_transactions(10)
        p.begin_transaction()
        p.produce("out", b"output")
        p.send_offsets_to_transaction([TopicPartition("in", 0, 7)], source.consumer_group_metadata(), 10)
        while True:         # commit_transaction raises what the application may retry (librdkafka's contract)
            try:
                p.commit_transaction(10)
                break
            except KafkaException as exc:
                if not exc.args[0].retriable():
                    raise
    finally:
        source.close()
    assert gc.faults("get", fault["id"])["fired"] == 1
    assert gc.faults("get", bystander["id"])["fired"] == 0
    assert gc.transaction_events(txn_id)[-1] == ("transaction.completed", "commit")
    assert read_committed(gc) == [b"output"]
    assert committed_offset(gc, group) == 7


def test_a_producer_crashed_between_steps_is_aborted_at_its_timeout_then_fenced(gc):
    txn_id = "crashing"
    gc.faults("add", {"id": "crash", "when": {"event": "transaction.partitions_added", "transactional_id": txn_id},
                      "do": {"action": "crash_producer"}})
    crashed = producer(gc, txn_id, "p1", **{"transaction.timeout.ms": 1000})
    crashed.init_transactions(10)
    crashed.begin_transaction()
    crashed.produce("out", b"lost")         # AddPartitionsToTxn answered, then the producer is cut off
    crashed.poll(0)
    wait_until(lambda: ("transaction.completed", "abort") in gc.transaction_events(txn_id),
               message=lambda: f"the open transaction aborted: {gc.transaction_events(txn_id)}")
    assert gc.transaction_events(txn_id)[1:] == [
        ("transaction.partitions_added", None), ("transaction.prepared", "abort"), ("transaction.fenced", "timeout"),
        ("transaction.completed", "abort")]
    injected = [f for f in gc.faults("list") if f.get("source") == "crash"]
    assert [(f["client_id"], f["transactional_id"], f["drop"]) for f in injected] == [("p1", txn_id, True)]

    restarted = producer(gc, txn_id, "p1-restarted")
    restarted.init_transactions(10)
    restarted.begin_transaction()
    restarted.produce("out", b"kept")
    restarted.commit_transaction(10)
    assert read_committed(gc) == [b"kept"]

    # the crashed producer let back: its epoch is stale, librdkafka reports it fenced
    gc.faults("remove", injected[0]["id"])
    with pytest.raises(KafkaException) as exc:
        crashed.abort_transaction(10)
    assert exc.value.args[0].fatal()


def test_a_producer_crashed_between_steps_is_fenced_by_its_restart(gc):
    txn_id = "restarting"
    gc.faults("add", {"when": {"event": "transaction.partitions_added", "transactional_id": txn_id},
                      "do": {"action": "crash_producer"}})
    crashed = producer(gc, txn_id, "p1")            # transaction.timeout.ms 60 s: no time-out in this test
    crashed.init_transactions(10)
    crashed.begin_transaction()
    crashed.produce("out", b"lost")
    crashed.poll(0)
    wait_until(lambda: [f for f in gc.faults("list") if f.get("source")], message="the producer crashed")
    restarted = producer(gc, txn_id, "p2")
    restarted.init_transactions(10)                 # fences the crashed one and aborts what it left open
    assert ("transaction.fenced", "init_producer_id") in gc.transaction_events(txn_id)
    restarted.begin_transaction()
    restarted.produce("out", b"kept")
    restarted.commit_transaction(10)
    assert read_committed(gc) == [b"kept"]
    gc.faults("clear")
    with pytest.raises(KafkaException) as exc:
        crashed.abort_transaction(10)
    assert exc.value.args[0].fatal()
