"""Real Kafka consumers (confluent-kafka, kafka-python) for the fault tests, each polled by a thread.

A record counts as consumed only once its offset is committed (synchronously, retried while the
error is retriable), so "every record consumed exactly once" also means "no committed offset lost".
Also: a producer, a committed-offset reader, :func:`wait_until` (every wait: a condition polled
to a deadline) and :class:`Seen` (the service's answers, recorded by an after_request hook).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

#: librdkafka, told of a coordinator error, can go on for seconds finding the coordinator again: each
#: FindCoordinator answer (behind the connection's Fetch, up to fetch.wait.max.ms, as Kafka serves a
#: connection's requests one at a time) renames its coordinator connection, which closes it and fails
#: the commit or heartbeat queued there, which marks the coordinator dead again. With two busy processes
#: beside it, at 6 s one run of test_injected_coordinator_errors_are_survived[confluent-kafka] in 12
#: ended in the member's own session timeout (SESSTMOUT) and a rebalance; at 20 s none of 15 did, two
#: of them taking 23 s where the others took 2-8 s.
SESSION_TIMEOUT_MS = 20000
HEARTBEAT_MS = 300
WAIT = 30.0
GROUP_APIS = {8: "OffsetCommit", 9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
              13: "LeaveGroup", 14: "SyncGroup"}


def wait_until(cond: Callable[[], object], timeout: float = WAIT, message="condition") -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for "
                                 f"{message() if callable(message) else message}")
        time.sleep(0.05)


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    value: str


class Member(threading.Thread):
    """One consumer of a group; ``records`` are those consumed and committed."""

    client = "?"

    def __init__(self, name: str, bootstrap: str, group: str, topics: list[str]):
        super().__init__(name=f"member-{name}", daemon=True)
        self.member_name, self.bootstrap, self.group, self.topics = name, bootstrap, group, topics
        self.lock = threading.Lock()
        self.records: list[Record] = []
        self.owned: set[tuple[str, int]] = set()
        self.errors: list[BaseException] = []
        self.commit_retries = 0
        self._stop_event = threading.Event()
        self._ready = threading.Event()
        self.consumer = None
        self.member_id: str | None = None

    def begin(self) -> "Member":
        self.start()
        assert self._ready.wait(WAIT), f"{self.member_name} did not start"
        self.check()
        return self

    def run(self) -> None:
        try:
            self.consumer = self.create()
        except BaseException as exc:
            self.errors.append(exc)
            return
        finally:
            self._ready.set()
        try:
            while not self._stop_event.is_set():
                self.poll_once()
                self.member_id = self.current_member_id()
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            try:
                self.consumer.close()
            except BaseException as exc:
                self.errors.append(exc)

    def close(self) -> None:
        self._stop_event.set()
        if self.is_alive():
            self.join(WAIT)

    def check(self) -> None:
        if self.errors:
            raise AssertionError(f"{self.member_name} failed: {self.errors[0]!r}") from self.errors[0]

    def consumed(self) -> list[Record]:
        with self.lock:
            return list(self.records)

    def owns(self) -> frozenset:
        with self.lock:
            return frozenset(self.owned)

    def _assigned(self, tps) -> None:
        with self.lock:
            self.owned |= set(tps)

    def _revoked(self, tps) -> None:
        with self.lock:
            self.owned -= set(tps)

    def create(self):
        raise NotImplementedError

    def poll_once(self) -> None:
        raise NotImplementedError

    def current_member_id(self) -> str | None:
        raise NotImplementedError


class ConfluentMember(Member):
    client = "confluent-kafka"

    def create(self):
        from confluent_kafka import Consumer

        consumer = Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": self.group, "client.id": self.member_name,
            "session.timeout.ms": SESSION_TIMEOUT_MS, "heartbeat.interval.ms": HEARTBEAT_MS,
            "auto.offset.reset": "earliest", "enable.auto.commit": False, "partition.assignment.strategy": "range",
            "socket.connection.setup.timeout.ms": 5000, "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
            "retry.backoff.ms": 50, "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 1000,
        })

        def tps(ps):
            return [(p.topic, p.partition) for p in ps]
        consumer.subscribe(self.topics, on_assign=lambda c, ps: self._assigned(tps(ps)),
                           on_revoke=lambda c, ps: self._revoked(tps(ps)), on_lost=lambda c, ps: self._revoked(tps(ps)))
        return consumer

    def poll_once(self) -> None:
        from confluent_kafka import KafkaException

        msg = self.consumer.poll(0.05)
        if msg is None or (msg.error() and not msg.error().fatal()):
            return
        if msg.error():
            raise RuntimeError(f"consumer error: {msg.error()}")
        deadline = time.monotonic() + WAIT
        while True:
            try:
                self.consumer.commit(message=msg, asynchronous=False)
                break
            except KafkaException as exc:
                err = exc.args[0]
                if err.retriable() and time.monotonic() < deadline and not self._stop_event.is_set():
                    self.commit_retries += 1
                    continue
                return          # not committed (e.g. the generation moved on): not consumed either
        with self.lock:
            self.records.append(Record(msg.topic(), msg.partition(), msg.offset(), msg.value().decode()))

    def current_member_id(self):
        return self.consumer.memberid()


class KafkaPythonMember(Member):
    client = "kafka-python"

    def create(self):
        from kafka import KafkaConsumer
        from kafka.consumer.subscription_state import ConsumerRebalanceListener
        from kafka.coordinator.assignors.range import RangePartitionAssignor

        member = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                member._revoked((tp.topic, tp.partition) for tp in revoked)

            def on_partitions_assigned(self, assigned):
                member._assigned((tp.topic, tp.partition) for tp in assigned)

        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap, group_id=self.group, client_id=self.member_name,
            session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS, auto_offset_reset="earliest",
            enable_auto_commit=False, request_timeout_ms=10000, retry_backoff_ms=50, reconnect_backoff_ms=50,
            reconnect_backoff_max_ms=500, fetch_max_wait_ms=100, metadata_max_age_ms=1000,
            partition_assignment_strategy=[RangePartitionAssignor])
        consumer.subscribe(self.topics, listener=Listener())
        # kafka-python joins before its metadata has the topics (see tests/interop/clients.py): wait for them
        wait_until(lambda: all(consumer._coordinator._metadata_snapshot.get(t) for t in self.topics), 15,
                   message="kafka-python metadata")
        return consumer

    def poll_once(self) -> None:
        from kafka.errors import CommitFailedError

        batches = self.consumer.poll(timeout_ms=50)
        if not batches:
            return
        try:
            self.consumer.commit()      # synchronous; retries retriable errors itself
        except CommitFailedError:
            return
        with self.lock:
            self.records.extend(Record(r.topic, r.partition, r.offset, r.value.decode())
                                for recs in batches.values() for r in recs)

    def current_member_id(self):
        return self.consumer._coordinator._generation.member_id


MEMBERS = {"confluent-kafka": ConfluentMember, "kafka-python": KafkaPythonMember}


def produce(bootstrap: str, messages: list[tuple[str, int, str]]) -> list[Record]:
    """(topic, partition, value) produced with confluent-kafka; the acknowledged records."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                         "enable.idempotence": False, "retry.backoff.ms": 50})
    acked, failures = [], []

    def report(err, msg):
        if err is not None:
            failures.append(err)
        else:
            acked.append(Record(msg.topic(), msg.partition(), msg.offset(), msg.value().decode()))
    for topic, partition, value in messages:
        producer.produce(topic, value=value.encode(), partition=partition, on_delivery=report)
    remaining = producer.flush(WAIT)
    assert remaining == 0 and not failures, f"produce failed: {failures}, {remaining} undelivered"
    return acked


def committed(bootstrap: str, group: str, tps) -> dict:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return {(r.topic, r.partition): r.offset
                for r in consumer.committed([TopicPartition(t, p) for t, p in tps], timeout=WAIT)}
    finally:
        consumer.close()


@dataclass(frozen=True)
class Answer:
    node: int
    api: str
    group: str | None
    error: int


class Seen:
    """Every answer of the service to a group API (node, API, group, error), via after_request."""

    def __init__(self, gc):
        self.gc = gc
        self.answers: list[Answer] = []
        gc.call(gc.service.after_request.append, self._after)

    def _after(self, ctx, body, response, seconds) -> None:
        api = GROUP_APIS.get(ctx.api_key)
        if api is None or response is None:
            return
        if ctx.api_key == 10:
            group = body.get("key") if "key" in body else (body.get("coordinator_keys") or [None])[0]
            error = response.get("error_code", (response.get("coordinators") or [{}])[0].get("error_code", 0))
        else:
            group = body.get("group_id")
            error = response.get("error_code", 0)
            if not error:
                for t in response.get("topics", ()):
                    for p in t.get("partitions", ()):
                        error = error or p.get("error_code", 0)
        self.answers.append(Answer(ctx.node_id, api, group, error))

    def snapshot(self) -> list[Answer]:
        return self.gc.call(list, self.answers)
