"""Members change their subscriptions while in the group.

A member that rejoins with different subscription metadata while the group is Stable makes the
coordinator rebalance (a follower's change: "metadata changed"; the leader's: the leader rejoined),
and the leader then sees every member's new subscription: each topic is shared among the members
subscribed to it, every partition of the union owned exactly once, nothing of a topic nobody
subscribes to.
"""
from __future__ import annotations

import pytest

from clients import all_partitions, wait_covered

pytestmark = pytest.mark.interop

CASES = [("confluent-kafka", "range"), ("confluent-kafka", "cooperative-sticky"), ("kafka-python", "range"),
         ("kafka-python", "cooperative-sticky"), ("aiokafka", "range"), ("aiokafka", "sticky")]


def partitions_of(*topics: str):
    return frozenset(tp for tp in all_partitions() if tp[0] in topics)


@pytest.mark.parametrize("client,strategy", CASES, ids=[f"{c}-{s}" for c, s in CASES])
def test_subscription_changes_rebalance_the_group(coord, driver_for, closing, client, strategy):
    c = coord()
    driver = driver_for(client, c.bootstrap)
    group = f"resubscribe-{client}-{strategy}"

    def member(name):
        m = closing(driver.member(name, group, ["alpha"], strategy))
        if client == "kafka-python":
            m.poll_interval = 0.5       # see KafkaPythonMember.poll_interval
        return m.start()

    m1 = member(f"{client}-sub-1")
    wait_covered(c, group, [m1], partitions_of("alpha"))
    m2 = member(f"{client}-sub-2")
    view = wait_covered(c, group, [m1, m2], partitions_of("alpha"))
    leader = {m1.member_id(): m1, m2.member_id(): m2}[view.leader]
    follower = m2 if leader is m1 else m1

    # a follower adds a topic: beta goes to it alone
    follower.resubscribe(["alpha", "beta"])
    view = wait_covered(c, group, [m1, m2], partitions_of("alpha", "beta"), after=view.generation)
    assert partitions_of("beta") <= follower.owned

    # the leader drops alpha for beta: alpha goes to the follower alone, beta is shared
    leader.resubscribe(["beta"])
    view = wait_covered(c, group, [m1, m2], partitions_of("alpha", "beta"), after=view.generation)
    assert leader.owned <= partitions_of("beta")
    assert partitions_of("alpha") <= follower.owned
    assert c.events_of(group, "rebalance.started")[-1]["reason"] in ("leader_rejoined", "metadata_changed")
