"""A mixed cooperative-sticky group: our GroupConsumers and confluent-kafka (librdkafka) consumers.

Both sides speak KIP-429 with their own cooperative-sticky assignors: whichever member the
coordinator (ours, over TCP) makes leader computes the assignment for everyone from the others'
subscriptions (owned partitions, generation). The test checks that the group forms, that each
rebalance is incremental (nobody loses a partition it keeps; nothing is owned twice) and that it
ends balanced.
"""
from __future__ import annotations

import asyncio
import threading

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from groupcoord.client import GroupConsumer  # noqa: E402
from groupcoord.client.assignors import CooperativeStickyAssignor  # noqa: E402
from groupcoord.client.assignors.base import RebalanceProtocol  # noqa: E402
from groupcoord.client.assignors.base import TopicPartition as TP  # noqa: E402
from groupcoord.coordinator.embed import running  # noqa: E402

TOPIC, PARTITIONS, GROUP = "mixed", 8, "mixed-group"


class Confluent:
    """A confluent-kafka consumer polling on a thread of its own; ownership from its callbacks."""

    def __init__(self, name: str, bootstrap: str):
        self.name = name
        self.owned: set[TP] = set()
        self.events: list[tuple[str, frozenset]] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.error: Exception | None = None
        self.consumer = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": name,
            "partition.assignment.strategy": "cooperative-sticky", "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 200, "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "reconnect.backoff.ms": 50, "retry.backoff.ms": 50, "fetch.wait.max.ms": 100})
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _on(self, kind, partitions):
        tps = frozenset(TP(p.topic, p.partition) for p in partitions)
        with self.lock:
            self.events.append((kind, tps))
            if kind == "assigned":
                self.owned |= tps
            else:
                self.owned -= tps

    def _run(self):
        c = self.consumer
        try:
            c.subscribe([TOPIC], on_assign=lambda _, ps: self._on("assigned", ps),
                        on_revoke=lambda _, ps: self._on("revoked", ps),
                        on_lost=lambda _, ps: self._on("lost", ps))
            while not self.stop.is_set():
                msg = c.poll(0.05)
                if msg is not None and msg.error() and msg.error().fatal():
                    raise RuntimeError(str(msg.error()))
            c.close()
        except Exception as e:             # reported by the test
            self.error = e

    def start(self):
        self.thread.start()
        return self

    def close(self):
        self.stop.set()
        self.thread.join(15)

    def assignment(self) -> set[TP]:
        with self.lock:
            return set(self.owned)


class Ours:
    def __init__(self, name: str, bootstrap: str):
        self.name = name
        self.consumer = GroupConsumer(TOPIC, config={
            "bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": name,
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 200, "enable.auto.commit": False,
            "retry.backoff.ms": 50}, assignors=[CooperativeStickyAssignor()])

    @property
    def events(self):
        return self.consumer.rebalance_log

    def assignment(self) -> set[TP]:
        return self.consumer.assignment()


async def settle(gc, members, timeout=30.0):
    """Until the coordinator is Stable with every member and their (callback-tracked) assignments
    partition the topic; checks on the way that no partition is ever owned twice."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    ours = [m for m in members if isinstance(m, Ours)]
    everything = {TP(TOPIC, p) for p in range(PARTITIONS)}
    quiet_since = None
    while True:
        await asyncio.gather(*(m.consumer.poll(0.02) for m in ours))
        owned = [tp for m in members for tp in m.assignment()]
        assert len(owned) == len(set(owned)), f"a partition is owned twice: {[(m.name, sorted(m.assignment())) for m in members]}"
        for m in members:
            if isinstance(m, Confluent) and m.error:
                raise m.error
        g = gc.service.group_coordinator.group(GROUP)
        done = (g is not None and g.state == "Stable" and len(g.members) == len(members)
                and set(owned) == everything
                and all(o.consumer.member.stable for o in ours))
        if done:
            # stay quiet for a moment: a second cooperative round may still be due
            quiet_since = quiet_since or loop.time()
            if loop.time() - quiet_since > 0.6:
                return g
        else:
            quiet_since = None
        if loop.time() > deadline:
            raise AssertionError(f"no stable split: {g!r} {[(m.name, sorted(m.assignment())) for m in members]}")


def incremental(member, closed: bool = False) -> bool:
    """No revocation ever took everything the member held (but the one of its close): the
    cooperative protocol gives up only what moves; and nothing was ever lost."""
    held: set = set()
    events = member.events[:-1] if closed else member.events
    for kind, tps in events:
        if kind == "assigned":
            held |= tps
        elif kind == "revoked":
            if held and tps == held and len(held) > 1:
                return False
            held -= tps
        elif kind == "lost":
            return False
    return True


async def test_mixed_cooperative_group_forms_rebalances_incrementally_and_balances():
    events: list[dict] = []
    async with running(topics={TOPIC: PARTITIONS}, emit=events.append) as gc:
        bootstrap = gc.bootstrap_servers
        members: list = []

        def leaders() -> list[str]:
            """Client ids of the leaders of the generations so far."""
            return [e["leader"].rsplit("-", 5)[0] for e in events
                    if e["event"] == "rebalance.join_completed" and e["group"] == GROUP]
        try:
            o1 = Ours("ours-1", bootstrap)
            assert o1.consumer.member.protocol == RebalanceProtocol.COOPERATIVE
            await o1.consumer.start()
            members.append(o1)
            await settle(gc, members)
            c1 = Confluent("librd-1", bootstrap).start()
            members.append(c1)
            g = await settle(gc, members)
            assert g.protocol_name == "cooperative-sticky"
            assert sorted(len(m.assignment()) for m in members) == [4, 4]
            assert set(leaders()) == {"ours-1"}                 # ours assigned librdkafka's share
            c2 = Confluent("librd-2", bootstrap).start()
            o2 = Ours("ours-2", bootstrap)
            await o2.consumer.start()
            members += [c2, o2]
            await settle(gc, members)
            assert sorted(len(m.assignment()) for m in members) == [2, 2, 2, 2]
            kept = {m.name: m.assignment() for m in members}
            # the leader (ours) leaves: librdkafka takes over the assignment; only o1's partitions move
            await o1.consumer.close()
            members.remove(o1)
            await settle(gc, members)
            assert leaders()[-1].startswith("librd-")
            assert sorted(len(m.assignment()) for m in members) == [2, 3, 3]
            for m in members:
                assert kept[m.name] <= m.assignment(), m.name
            # a librdkafka member leaves too
            kept = {m.name: m.assignment() for m in members}
            await asyncio.to_thread(c1.close)      # off the loop: the coordinator runs on it
            members.remove(c1)
            await settle(gc, members)
            assert sorted(len(m.assignment()) for m in members) == [4, 4]
            for m in members:
                assert kept[m.name] <= m.assignment(), m.name
            for m in (c2, o2):
                assert incremental(m), (m.name, m.events)
            for m in (o1, c1):                     # closing revokes all that is left, as it should
                assert m.events[-1][0] == "revoked" and incremental(m, closed=True), (m.name, m.events)
        finally:
            for m in members:
                if isinstance(m, Confluent):
                    await asyncio.to_thread(m.close)
                else:
                    await m.consumer.close()
