"""Kafka's new consumer group protocol (KIP-848) with a real client: confluent-kafka consumers with
``group.protocol=consumer`` form a consumer group, re-settle after a graceful leave, commit and
read back offsets, and are described by the admin client; with the protocol switched off they get
a fatal error instead of waiting for ever; a regex subscription is resolved by the coordinator and
follows a topic created later."""
from __future__ import annotations

import pytest

from clients import (WAIT, ConfluentDriver, ConfluentMember, all_partitions, confluent_config,
                     coverage_problems, wait_until)

pytestmark = pytest.mark.interop

#: two topics of 8 partitions: ten members all get some (as in the issue's measurements)
TOPICS = {"t0": 8, "t1": 8}
PARTITIONS = all_partitions(TOPICS)


class ConsumerProtocolMember(ConfluentMember):
    """A confluent-kafka consumer of the consumer group protocol (librdkafka refuses the classic
    protocol's session.timeout.ms, heartbeat.interval.ms and partition.assignment.strategy with it)."""

    client = "confluent-kafka (group.protocol=consumer)"

    def _create(self):
        from confluent_kafka import Consumer

        conf = confluent_config(self.bootstrap, self.group_id, **{"client.id": self.name, "group.protocol": "consumer"})
        for key in ("session.timeout.ms", "heartbeat.interval.ms"):
            conf.pop(key)
        if self.strategy:
            conf["group.remote.assignor"] = self.strategy
        if self.instance_id:
            conf["group.instance.id"] = self.instance_id
        conf.update(self.extra)
        consumer = Consumer(conf)
        self._subscribe(consumer, self.topics)
        return consumer


def consumer_group(c, group_id: str):
    """(state, group epoch, {member id: member epoch}, committed offsets) of the consumer group, or None."""
    def snapshot():
        gc = c.gc.service.group_coordinator
        g = gc.consumer_group(group_id)
        if g is None:
            return None
        offsets = {(t, p): o.committed_offset for t, parts in gc.offsets.of(group_id).items() for p, o in parts.items()}
        return g.state, g.group_epoch, {m.member_id: m.member_epoch for m in g.members.values()}, offsets
    return c.gc.call(snapshot)


def wait_settled(c, group_id: str, members: list, timeout: float = WAIT):
    """Until the consumer group is Stable with these members and their own views cover every
    partition exactly once; the group's snapshot."""
    def ok():
        for m in members:
            m.check()
        snap = consumer_group(c, group_id)
        if snap is None or snap[0] != "Stable" or len(snap[2]) != len(members):
            return None
        return snap if not coverage_problems(members, PARTITIONS) else None
    return wait_until(ok, timeout, message=lambda: f"{group_id}: {coverage_problems(members, PARTITIONS)}; "
                                                   f"coordinator: {consumer_group(c, group_id)}")


@pytest.mark.parametrize("n,assignor", [(3, "uniform"), (3, "range"), (10, "uniform")])
def test_consumer_protocol_group_forms_and_resettles_after_a_leave(coord, closing, n, assignor):
    c = coord(topics=TOPICS)
    group = f"kip848-{n}-{assignor}"
    topics = sorted(TOPICS)
    members = [closing(ConsumerProtocolMember(f"m{i}", c.bootstrap, group, topics, assignor)).start()
               for i in range(n)]
    snap = wait_settled(c, group, members)
    assert set(snap[2]) == {m.member_id() for m in members}
    before = {m.name: m.owned for m in members}

    leaver, survivors = members[0], members[1:]
    leaver_id = leaver.member_id()
    leaver.close()
    epoch = snap[1]
    snap = wait_settled(c, group, survivors)
    assert snap[1] > epoch                                   # the leave bumped the group epoch
    if assignor == "uniform":
        # sticky: the survivors keep what they had and only take the leaver's partitions
        for m in survivors:
            assert before[m.name] <= m.owned, m.name
    assert [e["member"] for e in c.events_of(group, "consumer.member_left")] == [leaver_id]


def test_consumer_protocol_offsets_commit_and_read_back(coord, closing):
    c = coord(topics=TOPICS)
    driver = closing(ConfluentDriver(c.bootstrap))
    group = "kip848-offsets"
    members = [closing(ConsumerProtocolMember(f"m{i}", c.bootstrap, group, sorted(TOPICS), None)).start()
               for i in range(2)]
    wait_settled(c, group, members)
    produced = driver.produce([(t, p, f"{t}/{p}/{i}") for t, p in sorted(PARTITIONS) for i in range(3)])
    wait_until(lambda: sum(len(m.consumed()) for m in members) >= len(produced), message="consumed")
    # each record was committed synchronously (OffsetCommit v9 with the member epoch) as consumed
    committed = consumer_group(c, group)[3]
    assert committed == {tp: 3 for tp in PARTITIONS}
    for m in members:
        m.close()
    assert driver.committed(group, sorted(PARTITIONS)) == {tp: 3 for tp in PARTITIONS}


def test_admin_client_describes_the_consumer_group(coord, closing):
    from confluent_kafka.admin import AdminClient

    c = coord(topics=TOPICS)
    group = "kip848-describe"
    members = [closing(ConsumerProtocolMember(f"m{i}", c.bootstrap, group, sorted(TOPICS), None)).start()
               for i in range(2)]
    wait_settled(c, group, members)
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    desc = admin.describe_consumer_groups([group])[group].result(WAIT)
    assert desc.group_id == group and str(desc.type).endswith("CONSUMER")
    assert str(desc.state).endswith("STABLE")
    assert {m.member_id for m in desc.members} == {m.member_id() for m in members}
    described = {(tp.topic, tp.partition) for m in desc.members for tp in m.assignment.topic_partitions}
    assert described == PARTITIONS
    # our admin client (groupcoord groups --describe): DescribeGroups says "not a classic group",
    # ConsumerGroupDescribe tells the rest
    import asyncio

    from groupcoord.client.admin import AdminClient as OurAdmin

    async def describe():
        async with OurAdmin(c.bootstrap) as ours:
            return (await ours.describe_groups([group]))[group]
    d = asyncio.run(describe())
    assert (d.state, d.protocol_type, d.assignor) == ("Stable", "consumer", "uniform")
    assert {m.member_id for m in d.members} == {m.member_id() for m in members}
    assert {tuple(tp) for m in d.members for tp in m.assignment} == PARTITIONS


def test_with_the_consumer_protocol_off_the_client_gets_a_fatal_error(coord, closing):
    c = coord(topics=TOPICS, config={"group.coordinator.rebalance.protocols": "classic"})
    member = closing(ConsumerProtocolMember("m0", c.bootstrap, "kip848-off", sorted(TOPICS), None)).start()
    wait_until(lambda: member.errors, message="a fatal error from the consumer")
    assert "API version not supported: ConsumerGroupHeartbeat" in str(member.errors[0])


CRASHER = r"""
import sys
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "group.protocol": "consumer"})
c.subscribe(["t0", "t1"])
told = False
while True:
    c.poll(0.05)
    if c.assignment() and not told:
        print(c.memberid(), flush=True)
        told = True
"""


def test_a_killed_member_is_fenced_at_its_session_timeout_and_its_partitions_move(coord, closing):
    import subprocess
    import sys

    c = coord(topics=TOPICS)
    group = "kip848-crash"
    survivors = [closing(ConsumerProtocolMember(f"m{i}", c.bootstrap, group, sorted(TOPICS), None)).start()
                 for i in range(2)]
    proc = subprocess.Popen([sys.executable, "-c", CRASHER, c.bootstrap, group], stdout=subprocess.PIPE, text=True)
    try:
        doomed = proc.stdout.readline().strip()          # its member id, once it has partitions
        wait_until(lambda: (consumer_group(c, group) or (None, 0, {}))[2].keys() >= {doomed}
                   and consumer_group(c, group)[0] == "Stable", message="the three members stable")
        proc.kill()
        proc.wait(10)
        session_s = c.gc.service.config["group.consumer.session.timeout.ms"] / 1000
        wait_settled(c, group, survivors, timeout=session_s + WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
    fenced = c.events_of(group, "consumer.member_fenced")
    assert [(e["member"], e["reason"]) for e in fenced] == [(doomed, "session_timeout")]


def test_added_partitions_reach_the_members(coord, closing):
    c = coord(topics=TOPICS)
    group = "kip848-grow"
    members = [closing(ConsumerProtocolMember(f"m{i}", c.bootstrap, group, sorted(TOPICS), None)).start()
               for i in range(2)]
    epoch = wait_settled(c, group, members)[1]
    c.gc.call(lambda: c.gc.service.cluster.add_partitions("t0", 10))
    grown = PARTITIONS | {("t0", 8), ("t0", 9)}

    def covered():
        snap = consumer_group(c, group)
        return snap[0] == "Stable" and snap[1] > epoch and not coverage_problems(members, grown)
    wait_until(covered, message=lambda: f"cover of the grown topic: {coverage_problems(members, grown)}")


def test_a_static_member_restarted_within_its_session_gets_its_partitions_back(coord, closing):
    c = coord(topics=TOPICS)
    group = "kip848-static"
    members = [closing(ConsumerProtocolMember(f"s{i}", c.bootstrap, group, sorted(TOPICS), None,
                                              instance_id=f"instance-{i}")).start() for i in range(3)]
    snap = wait_settled(c, group, members)
    before = {m.name: m.owned for m in members}
    members[0].close()                                   # a static member leaves with epoch -2
    wait_until(lambda: -2 in consumer_group(c, group)[2].values(), message="the static leave")
    again = closing(ConsumerProtocolMember("s0", c.bootstrap, group, sorted(TOPICS), None,
                                           instance_id="instance-0")).start()
    after = wait_settled(c, group, [again, *members[1:]])
    assert again.owned == before["s0"]
    assert {m.name: m.owned for m in members[1:]} == {n: before[n] for n in ("s1", "s2")}
    assert after[1] == snap[1]                           # no rebalance: the same group epoch
    assert [e["event"] for e in c.events_of(group, "consumer.member_replaced")] == ["consumer.member_replaced"]


def test_a_regex_subscription_gets_the_matching_topics_then_one_created_later(coord, closing):
    c = coord(topics={**TOPICS, "u0": 4})
    group = "kip848-regex"
    members = [closing(ConsumerProtocolMember(f"m{i}", c.bootstrap, group, ["^t.*"], None)).start()
               for i in range(2)]
    epoch = wait_settled(c, group, members)[1]         # t0 and t1, not u0

    def subscriptions():
        g = c.gc.service.group_coordinator.consumer_group(group)
        return ({(m.subscribed_topic_names, m.subscribed_topic_regex) for m in g.members.values()},
                {regex: set(r.topics) for regex, r in g.resolved_regexes.items()})
    # librdkafka sends its "^" entries joined as "(r1)|(r2)": the broker matches whole names (RE2)
    assert c.gc.call(subscriptions) == ({((), "(^t.*)")}, {"(^t.*)": {"t0", "t1"}})

    c.gc.call(c.gc.service.create_topic, "t2", 4)
    c.gc.call(c.gc.service.create_topic, "u1", 2)
    grown = PARTITIONS | {("t2", p) for p in range(4)}

    def covered():
        for m in members:
            m.check()
        snap = consumer_group(c, group)
        return snap[0] == "Stable" and snap[1] > epoch and not coverage_problems(members, grown)
    # resolved again at the first heartbeat 10 s after the last resolution (Kafka's minimum)
    wait_until(covered, message=lambda: f"cover with t2: {coverage_problems(members, grown)}")
    assert c.gc.call(subscriptions)[1] == {"(^t.*)": {"t0", "t1", "t2"}}
