"""Each real client, with each assignment strategy it has, runs a group's whole life against us.

One scenario per (client, strategy), on two topics (alpha: 4 partitions, beta: 3):

1. three consumers form a group; their own rebalance callbacks (and assignment() APIs) cover every
   partition exactly once, and the coordinator selected the strategy's protocol;
2. records produced by the client's own producer are consumed exactly once across the group, each
   offset committed synchronously before it counts as consumed;
3. a member leaves (close) and the other two cover everything again; more records, exactly once
   (partitions that changed hands resume from the committed offsets: a wrong OffsetFetch answer
   shows up as duplicates or losses);
4. a new member joins and the four cover everything exactly once; more records, exactly once;
5. all close; a fresh consumer of the group reads back (committed()) the end offset of every partition.
"""
from __future__ import annotations

import pytest

from clients import (DRIVERS, TOPICS, Record, all_partitions, assert_exactly_once, wait_covered,
                     wait_until)

pytestmark = pytest.mark.interop

CASES = [(client, strategy) for client, driver in DRIVERS.items() for strategy in driver.strategies]
RECORDS_PER_BATCH = 35          # 5 per partition


def batch(group_id: str, n: int) -> list[tuple[str, int, str]]:
    tps = sorted(all_partitions())
    return [(t, p, f"{group_id}/{n}/{i}") for i, (t, p) in enumerate(tps * (RECORDS_PER_BATCH // len(tps)))]


def consumed_by(members) -> list[Record]:
    return [r for m in members for r in m.consumed()]


@pytest.mark.parametrize("client,strategy", CASES, ids=[f"{c}-{s}" for c, s in CASES])
def test_group_lifecycle(coord, driver_for, closing, client, strategy):
    c = coord()
    driver = driver_for(client, c.bootstrap)
    group = f"lifecycle-{client}-{strategy}"
    topics = sorted(TOPICS)
    everyone = []

    def new_member(i):
        m = closing(driver.member(f"{client}-{i}", group, topics, strategy))
        everyone.append(m)
        return m.start()

    # 1. three members form the group
    members = [new_member(i) for i in range(3)]
    view = wait_covered(c, group, members)
    assert view.protocol_type == "consumer"
    assert view.protocol == strategy

    # 2. produce with the client's own producer; consumed exactly once across the group
    produced = driver.produce(batch(group, 1))
    assert len(produced) == RECORDS_PER_BATCH
    assert len({(r.topic, r.partition, r.offset) for r in produced}) == RECORDS_PER_BATCH
    wait_until(lambda: len(consumed_by(everyone)) >= len(produced), message="first batch consumed")
    assert_exactly_once(consumed_by(everyone), produced)
    generation = view.generation

    # 3. a member leaves: the two others take everything over
    leaver = members.pop(1)
    had = leaver.owned
    leaver.close()
    view = wait_covered(c, group, members, after=generation)
    assert had <= members[0].owned | members[1].owned
    more = driver.produce(batch(group, 2))
    produced += more
    wait_until(lambda: len(consumed_by(everyone)) >= len(produced), message="second batch consumed")
    assert_exactly_once(consumed_by(everyone), produced)
    generation = view.generation

    # 4. a new member joins: four members, each with something, exactly once
    members.append(new_member(3))
    view = wait_covered(c, group, members, after=generation)
    more = driver.produce(batch(group, 3))
    produced += more
    wait_until(lambda: len(consumed_by(everyone)) >= len(produced), message="third batch consumed")
    assert_exactly_once(consumed_by(everyone), produced)
    for m in everyone:
        m.check()

    # 5. everybody leaves; a fresh consumer of the group reads the committed offsets back
    for m in members:
        m.close()
    wait_until(lambda: (v := c.group(group)) is not None and v.state == "Empty", 15,
               message=lambda: f"group {group} empty: {c.group(group)}")
    end = {tp: 0 for tp in all_partitions()}
    for r in produced:
        end[r.tp] = max(end[r.tp], r.offset + 1)
    assert driver.committed(group, sorted(all_partitions())) == end
