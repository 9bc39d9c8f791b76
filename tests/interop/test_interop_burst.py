"""Many members arriving and leaving at once.

Eight consumers start together (their JoinGroups, KIP-394 member-id round trips and SyncGroups
interleave), then half of them close together: every time the group settles with every partition
owned exactly once and every member owning some.
"""
from __future__ import annotations

import concurrent.futures

import pytest

from clients import wait_covered, wait_until

pytestmark = pytest.mark.interop

TOPICS = {"burst": 16}
PARTITIONS = frozenset(("burst", p) for p in range(16))
CASES = [("confluent-kafka", "range"), ("confluent-kafka", "cooperative-sticky"), ("aiokafka", "roundrobin")]


@pytest.mark.parametrize("client,strategy", CASES, ids=[f"{c}-{s}" for c, s in CASES])
def test_eight_members_join_together_then_half_leave_together(coord, driver_for, closing, client, strategy):
    c = coord(topics=TOPICS)
    driver = driver_for(client, c.bootstrap)
    group = f"burst-{client}-{strategy}"
    members = [closing(driver.member(f"{client}-burst-{i}", group, ["burst"], strategy)) for i in range(8)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda m: m.start(), members))
    view = wait_covered(c, group, members, PARTITIONS)
    # (cooperative-sticky may be Stable, every partition owned once, between its two rounds: the
    # balanced split comes with the second)
    wait_until(lambda: all(len(m.owned) == 2 for m in members), 30,
               message=lambda: f"owned: {[len(m.owned) for m in members]}")
    view = wait_covered(c, group, members, PARTITIONS)

    leaving, staying = members[::2], members[1::2]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda m: m.close(), leaving))
    view = wait_covered(c, group, staying, PARTITIONS, after=view.generation)
    assert all(len(m.owned) == 4 for m in staying)
    assert not c.events_of(group, "member.expired", "member.removed")
