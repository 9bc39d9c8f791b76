"""The coordinator daemon is killed (SIGKILL) during a storm of synchronous offset commits and
restarted on the same port with the same --data-dir.

* Every commit a client saw acknowledged before the kill is still there after the restart.
* The Stable group comes back Stable with the same generation, members and assignments
  (as after a Kafka coordinator failover): its consumers, back within the session timeout,
  carry on committing at that generation without a rebalance.
"""
from __future__ import annotations

import threading

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from clients import Daemon, wait_until

pytestmark = pytest.mark.interop

TOPIC = "t"
PARTITIONS = 4
GROUP = "durable-storm"
SESSION_TIMEOUT_MS = 30_000


class Storm:
    """One consumer committing synchronously, on its own thread, the next offset of its partitions."""

    def __init__(self, bootstrap: str, name: str):
        self.revoked = 0
        self.assignment: list[int] = []
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": name,
            "enable.auto.commit": False, "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": 500, "partition.assignment.strategy": "range",
            "topic.metadata.refresh.interval.ms": 600_000, "socket.connection.setup.timeout.ms": 1000,
            "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 200,
        })
        self.consumer.subscribe([TOPIC], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self.acked: dict[int, int] = {}        # partition -> last acknowledged offset
        self.acks_after: int = 0               # acknowledged commits after resume
        self.committing = threading.Event()
        self.idle = threading.Event()
        self.stop = threading.Event()
        self.next = 1
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _on_assign(self, consumer, partitions):
        self.assignment = sorted(p.partition for p in partitions)

    def _on_revoke(self, consumer, partitions):
        if partitions:
            self.revoked += 1

    def _run(self):
        while not self.stop.is_set():
            self.consumer.poll(0.02)
            if not self.committing.is_set() or not self.assignment:
                self.idle.set()
                continue
            self.idle.clear()
            offset = self.next
            self.next += 1
            tps = [TopicPartition(TOPIC, p, offset) for p in self.assignment]
            try:
                result = self.consumer.commit(offsets=tps, asynchronous=False)
            except KafkaException:
                continue
            for tp in result:
                if tp.error is None:
                    self.acked[tp.partition] = max(self.acked.get(tp.partition, -1), tp.offset)
                    self.acks_after += 1
        self.idle.set()


def _committed(bootstrap: str) -> dict[int, int]:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    try:
        tps = reader.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=20)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        reader.close()


def _describe(bootstrap: str):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_consumer_groups([GROUP])[GROUP].result(timeout=20)


def test_acknowledged_commits_and_the_stable_group_survive_a_kill_9(tmp_path):
    data_dir = tmp_path / "data"
    first = Daemon(data_dir, {TOPIC: PARTITIONS}, events=tmp_path / "events-1.jsonl")
    daemons = [first]
    storms: list[Storm] = []
    try:
        storms = [Storm(first.bootstrap, f"storm-{i}") for i in range(3)]
        for s in storms:
            s.thread.start()
        wait_until(lambda: sum(len(s.assignment) for s in storms) == PARTITIONS and
                   all(s.assignment for s in storms), message="group formed")
        wait_until(lambda: _describe(first.bootstrap).state.name == "STABLE", message="stable before kill")
        before = _describe(first.bootstrap)
        members_before = sorted((m.member_id, tuple(sorted(tp.partition for tp in m.assignment.topic_partitions)))
                                for m in before.members)
        stable = [e for e in first.events_where(group=GROUP) if e["event"] == "group.state_change" and e["state_to"] == "Stable"]
        generation = stable[-1]["generation"]
        assert stable[-1]["members"] == 3
        for s in storms:
            s.revoked = 0     # the eager rebalances while the group formed

        for s in storms:
            s.committing.set()
        wait_until(lambda: sum(len(s.acked) and s.acks_after for s in storms) >= 300, message="storm under way")
        first.kill()                                 # mid-storm
        for s in storms:
            s.committing.clear()
        # every acknowledgement was received before the kill (nothing answers after it); a
        # commit in flight blocks in librdkafka until the coordinator is back
        acked = {}
        for s in storms:
            for p, o in list(s.acked.items()):
                acked[p] = max(acked.get(p, -1), o)
        assert sorted(acked) == list(range(PARTITIONS))

        second = Daemon(data_dir, {TOPIC: PARTITIONS}, events=tmp_path / "events-2.jsonl", port=first.port)
        daemons.append(second)
        assert second.bootstrap == first.bootstrap
        committed = _committed(second.bootstrap)
        for p in range(PARTITIONS):
            assert committed[p] >= acked[p], (p, committed, acked)

        wait_until(lambda: all(s.idle.is_set() for s in storms), timeout=60, message="storm paused")
        after = _describe(second.bootstrap)
        assert after.state.name == "STABLE"
        assert sorted((m.member_id, tuple(sorted(tp.partition for tp in m.assignment.topic_partitions)))
                      for m in after.members) == members_before

        # the consumers carry on, at the same generation, without a rebalance
        for s in storms:
            s.acks_after = 0
            s.committing.set()
        wait_until(lambda: all(s.acks_after >= 20 for s in storms), timeout=60, message="commits after restart")
        events = second.events_where(group=GROUP)
        commits = [e for e in events if e["event"] == "offset.committed" and e["errors"] == 0]
        assert commits and {e["generation"] for e in commits} == {generation}
        assert not [e for e in events if e["event"] in ("rebalance.started", "member.joined", "member.expired")]
        assert all(s.revoked == 0 for s in storms)
        assert _describe(second.bootstrap).state.name == "STABLE"
    finally:
        for s in storms:
            s.stop.set()
        for s in storms:
            s.thread.join(10)
        for d in daemons:
            d.close()
        for s in storms:
            try:
                s.consumer.close()
            except Exception:
                pass
