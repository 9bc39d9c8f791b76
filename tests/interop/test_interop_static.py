"""KIP-345 static membership (group.instance.id) with librdkafka, kafka-python and aiokafka.

A static member that is closed does not leave the group (none of these clients sends LeaveGroup for
it); started again with the same group.instance.id within its session timeout, it takes its old
place: the coordinator fences the old member id, answers the JoinGroup with the current generation
and the SyncGroup with the stored assignment. No rebalance: the generation does not change, the
other members see no revocation, and the restarted member gets exactly its partitions back.
Both a follower and the leader are restarted (the leader must not be handed the assignment job:
Kafka answers with the *old* leader id so that it stays a follower).
"""
from __future__ import annotations

import pytest

from clients import SESSION_TIMEOUT_MS, TOPICS, ConfluentMember, wait_covered, wait_until

pytestmark = pytest.mark.interop

GROUP = "static"
CASES = [("confluent-kafka", "range"), ("confluent-kafka", "cooperative-sticky"), ("kafka-python", "range"),
         ("aiokafka", "roundrobin")]


@pytest.mark.parametrize("client,strategy", CASES, ids=[f"{c}-{s}" for c, s in CASES])
def test_static_member_restart_within_session_timeout_keeps_partitions_without_rebalance(
        coord, driver_for, closing, client, strategy):
    c = coord()
    driver = driver_for(client, c.bootstrap)
    topics = sorted(TOPICS)
    group = f"{GROUP}-{client}-{strategy}"
    starts = iter(range(100))

    def member(instance: str):
        return closing(driver.member(f"{instance}-run{next(starts)}", group, topics, strategy,
                                     instance_id=instance)).start()

    members = {f"instance-{i}": member(f"instance-{i}") for i in range(3)}
    view = wait_covered(c, group, list(members.values()))
    assert sorted(view.members.values()) == sorted(members)          # every member is static
    generation = view.generation
    leader_instance = view.members[view.leader]
    follower_instance = next(i for i in sorted(members) if i != leader_instance)

    for instance in (follower_instance, leader_instance):
        before = c.group(group)
        old_member_id = next(m for m, i in before.members.items() if i == instance)
        partitions = members[instance].owned
        others = [m for i, m in members.items() if i != instance]
        revocations = {m.name: m.revocation_count() for m in others}
        rebalances = len(c.events_of(group, "rebalance.started"))

        members[instance].close()
        # a closed static member stays in the group until its session times out
        assert c.group(group).members.get(old_member_id) == instance
        assert not c.events_of(group, "member.left")

        restarted = members[instance] = member(instance)
        wait_until(lambda: restarted.owned == partitions, 15,
                   message=lambda: f"{instance} gets {sorted(partitions)} back, has {sorted(restarted.owned)}")
        view = wait_covered(c, group, list(members.values()))

        assert view.generation == generation, "a static member's restart must not bump the generation"
        assert len(c.events_of(group, "rebalance.started")) == rebalances
        assert old_member_id not in view.members
        new_member_id = next(m for m, i in view.members.items() if i == instance)
        assert restarted.member_id() == new_member_id
        replaced = [e for e in c.events_of(group, "member.replaced") if e["instance_id"] == instance]
        assert replaced and replaced[-1]["old_member"] == old_member_id and replaced[-1]["rebalance"] is False
        for m in others:
            assert m.revocation_count() == revocations[m.name], f"{m.name} saw a revocation"
            m.check()
        if instance == leader_instance:
            # Kafka moves the leadership to the new member id (and answered its JoinGroup with the
            # old leader id, so that it did not compute an assignment)
            assert view.leader == new_member_id
            assert c.events_of(group, "group.leader_changed")[-1]["reason"] == "static_member_replaced"
        else:
            assert view.leader == before.leader

    assert not c.events_of(group, "member.expired", "member.removed", "member.left")


def test_static_member_not_back_within_session_timeout_is_expired(coord, closing):
    """The same, but the member does not come back: after session.timeout.ms the coordinator expires
    it and the others take its partitions over. With cooperative-sticky they only gain partitions:
    nothing is revoked from them."""
    c = coord()
    group = f"{GROUP}-expiry"
    topics = sorted(TOPICS)
    members = [closing(ConfluentMember(f"expiring-{i}", c.bootstrap, group, topics, "cooperative-sticky",
                                       instance_id=f"expiring-{i}")).start() for i in range(3)]
    view = wait_covered(c, group, members)
    generation = view.generation
    gone, rest = members[0], members[1:]
    before = {m.name: (m.owned, m.revocation_count()) for m in rest}
    gone.close()
    view = wait_covered(c, group, rest, timeout=SESSION_TIMEOUT_MS / 1000 + 15)
    assert view.generation > generation
    expired = c.events_of(group, "member.expired")
    assert [e["instance_id"] for e in expired] == ["expiring-0"]
    assert expired[0]["reason"] == "session_timeout"
    assert not c.events_of(group, "member.left")
    for m in rest:
        owned, revocations = before[m.name]
        assert owned <= m.owned, f"{m.name} lost partitions"
        assert m.revocation_count() == revocations, f"{m.name} had partitions revoked"
