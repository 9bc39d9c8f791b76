"""Offsets committed while partitions are revoked, by the clients' own auto-commit.

Consumers run with auto-commit on and an interval far beyond the test, so they commit only when
they give partitions up: in the rebalance's revocation step (eager protocols: while the group is
PreparingRebalance; cooperative: the partitions that move) and on close. Kafka accepts these
commits from members of the current generation; if we refused them, or stored them wrongly, the
partitions' new owners would start from older offsets and consume records a second time.
"""
from __future__ import annotations

import pytest

from clients import all_partitions, assert_exactly_once, wait_covered, wait_until

pytestmark = pytest.mark.interop

CASES = [("confluent-kafka", "range"), ("confluent-kafka", "cooperative-sticky"), ("kafka-python", "range"),
         ("kafka-python", "cooperative-sticky"), ("aiokafka", "roundrobin")]


@pytest.mark.parametrize("client,strategy", CASES, ids=[f"{c}-{s}" for c, s in CASES])
def test_offsets_committed_on_revocation_are_where_new_owners_resume(coord, driver_for, closing, client, strategy):
    c = coord()
    driver = driver_for(client, c.bootstrap)
    group = f"autocommit-{client}-{strategy}"
    topics = ["alpha", "beta"]
    everyone = []

    def member(i):
        m = closing(driver.member(f"{client}-auto-{i}", group, topics, strategy, autocommit=True))
        everyone.append(m)
        return m.start()

    def consumed():
        return [r for m in everyone for r in m.consumed()]

    tps = sorted(all_partitions())
    members = [member(0), member(1)]
    view = wait_covered(c, group, members)
    produced = driver.produce([(t, p, f"before/{i}") for i, (t, p) in enumerate(tps * 3)])
    wait_until(lambda: len(consumed()) >= len(produced), message="first records consumed")
    early = c.group(group).offsets
    assert all(off == 0 for off in early.values()), f"committed before any revocation: {early}"

    # a third member: partitions move; their offsets are committed as they are revoked
    seen = {m.name: len(m.revocations) for m in members}
    members.append(member(2))
    view = wait_covered(c, group, members, after=view.generation)
    moved = {tp for m in members[:2] for r in m.revocations[seen[m.name]:] for tp in r}
    assert moved, "some partitions should have changed hands"
    committed = c.group(group).offsets
    for tp in moved:
        assert committed.get(tp) == 3, f"{tp} revoked without its offset committed: {committed}"
    produced += driver.produce([(t, p, f"after/{i}") for i, (t, p) in enumerate(tps * 2)])
    wait_until(lambda: len(consumed()) >= len(produced), message="second records consumed")
    assert_exactly_once(consumed(), produced)

    # closing commits the rest
    for m in members:
        m.close()
    assert driver.committed(group, tps) == {tp: 5 for tp in tps}
