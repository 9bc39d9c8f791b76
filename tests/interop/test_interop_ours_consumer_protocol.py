"""Our own member (groupcoord's GroupConsumer with ``group_protocol="consumer"``) and confluent-kafka
members of the consumer protocol (KIP-848) in one consumer group on two topics: the group forms
with every partition owned exactly once; one of ours and one confluent member leave, and the
survivors take over everything, again exactly once. The coordinator is sampled all along (its
model also raises on a partition added to a second owner): no partition ever has two owners."""
from __future__ import annotations

import asyncio
import concurrent.futures

import pytest

from clients import WAIT, LoopThread, Member, all_partitions, coverage_problems, wait_until
from test_interop_consumer_protocol import ConsumerProtocolMember
from test_interop_mixed_group import OwnershipWatch

pytestmark = pytest.mark.interop

TOPICS = {"t0": 8, "t1": 8}
PARTITIONS = all_partitions(TOPICS)
GROUP = "ours-and-confluent"


class OurConsumerProtocolMember(Member):
    """Our GroupConsumer (group.protocol=consumer) polled on a shared asyncio loop thread; ownership
    from its rebalance listener."""

    client = "groupcoord GroupConsumer (group.protocol=consumer)"

    def __init__(self, *args, loop_thread: LoopThread, **kwargs):
        super().__init__(*args, **kwargs)
        self.lt = loop_thread
        self.consumer = None
        self._task: concurrent.futures.Future | None = None

    def start(self) -> "OurConsumerProtocolMember":
        self.lt.run(self._start())
        self._task = self.lt.submit(self._loop())
        return self

    async def _start(self):
        from groupcoord.client import GroupConsumer

        member = self

        class Listener:
            def on_partitions_assigned(self, tps):
                member._assigned((tp.topic, tp.partition) for tp in tps)

            def on_partitions_revoked(self, tps):
                member._revoked((tp.topic, tp.partition) for tp in tps)

            def on_partitions_lost(self, tps):
                member._revoked((tp.topic, tp.partition) for tp in tps)

        config = {"bootstrap.servers": self.bootstrap, "group.id": self.group_id, "client.id": self.name,
                  "group.protocol": "consumer", "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "retry.backoff.ms": 50}
        if self.strategy:
            config["group.remote.assignor"] = self.strategy
        config.update(self.extra)
        self.consumer = GroupConsumer(*self.topics, config=config, listener=Listener())
        await self.consumer.start()

    async def _loop(self):
        try:
            while True:
                await self.consumer.poll(0.1)
        except asyncio.CancelledError:
            pass
        except BaseException as exc:
            self.errors.append(exc)

    def close(self) -> None:
        if self.closed:
            return

        async def _close():
            if self._task is not None:
                self._task.cancel()
            await self.consumer.close(timeout=5)
        if self.consumer is not None:
            self.lt.run(_close())
        with self.lock:
            self.closed = True

    def api_assignment(self):
        async def _get():
            return frozenset((tp.topic, tp.partition) for tp in self.consumer.assignment())
        return self.lt.run(_get())

    def member_id(self) -> str:
        async def _get():
            return self.consumer.member.member_id
        return self.lt.run(_get())


def consumer_group(c):
    """(state, group epoch, {member id: member epoch}) of the consumer group, or None."""
    def snapshot():
        g = c.gc.service.group_coordinator.consumer_group(GROUP)
        if g is None:
            return None
        return g.state, g.group_epoch, {m.member_id: m.member_epoch for m in g.members.values()}
    return c.gc.call(snapshot)


def wait_settled(c, members):
    """Until the group is Stable with exactly these members, every member's epoch the group's,
    and the members' own views (listener callbacks) cover every partition exactly once; then
    their assignment() APIs agree with their callbacks."""
    ids = {m.member_id() for m in members}

    def ok():
        for m in members:
            m.check()
        snap = consumer_group(c)
        if snap is None or snap[0] != "Stable" or set(snap[2]) != ids:
            return None
        if any(epoch != snap[1] for epoch in snap[2].values()):
            return None
        return snap if not coverage_problems(members, PARTITIONS) else None
    snap = wait_until(ok, WAIT, message=lambda: f"{coverage_problems(members, PARTITIONS)}; "
                                                f"coordinator: {consumer_group(c)}")
    for m in members:
        wait_until(lambda: m.api_assignment() == m.owned, 10,
                   message=lambda: f"{m.name}: assignment() {m.api_assignment()} == callbacks {m.owned}")
    return snap


def test_our_members_and_confluent_members_share_a_consumer_group(coord, closing):
    c = coord(topics=TOPICS)
    topics = sorted(TOPICS)
    lt = closing(LoopThread())
    with OwnershipWatch(c, GROUP) as watch:
        ours = [closing(OurConsumerProtocolMember(f"ours-{i}", c.bootstrap, GROUP, topics, None, loop_thread=lt))
                for i in range(2)]
        theirs = [closing(ConsumerProtocolMember(f"confluent-{i}", c.bootstrap, GROUP, topics, None))
                  for i in range(2)]
        for m in (ours[0], theirs[0], ours[1], theirs[1]):
            m.start()
        members = ours + theirs
        snap = wait_settled(c, members)
        assert sorted(len(m.owned) for m in members) == [4, 4, 4, 4]        # uniform: 16 over 4
        before = {m.name: m.owned for m in members}
        left = [ours[0].member_id(), theirs[0].member_id()]
        revoked = {m.name: m.revocation_count() for m in members}

        ours[0].close()
        theirs[0].close()
        survivors = [ours[1], theirs[1]]
        after = wait_settled(c, survivors)
        assert after[1] > snap[1]
        assert sorted(len(m.owned) for m in survivors) == [8, 8]
        for m in survivors:                     # the uniform assignor is sticky: survivors keep theirs
            assert before[m.name] <= m.owned, m.name
    assert watch.samples > 20
    assert watch.doubles == [], watch.doubles[:5]
    assert watch.types == ["consumer"]
    assert sorted(e["member"] for e in c.events_of(GROUP, "consumer.member_left")) == sorted(left)
    # the survivors gave nothing up to take the leavers' partitions (no revocation, no loss)
    for m in survivors:
        assert all(not r for r in m.revocations[revoked[m.name]:]), (m.name, m.revocations)
