"""The coordinator's cost of a rebalance round grows linearly with the group's members: counted in
executed lines of coordinator/ (rebalance_round.py's lines(): sys.settrace), not timed, so the
test does not depend on the machine's load. A step quadratic in members (a walk over the members
per JoinGroup, SyncGroup or heartbeat) makes 4 times the members cost about 8 times the lines at
these sizes, where a linear round costs 4 times."""
from __future__ import annotations

import rebalance_round as rebalance


def test_a_rebalance_round_costs_the_coordinator_lines_linear_in_members():
    small = rebalance.lines(100, partitions=100)
    large = rebalance.lines(400, partitions=100)
    assert 3.5 < large / small < 4.4, (small, large)


def test_the_round_is_a_whole_rebalance():
    group = rebalance.Group(50, partitions=10)
    generation = group.generation
    steps = group.round()
    assert set(steps) == {"join", "sync", "beat"}
    g = group.service.group_coordinator.group(rebalance.GROUP)
    assert g.state == "Stable" and g.generation_id == generation + 1 == group.generation
    assert len(g.members) == 50
