"""The analysis model (no Spark) over simulations of the shipped scenarios (examples/scenarios)."""
from __future__ import annotations

import json
from pathlib import Path

from groupcoord.client.analytics.model import analyze_group, group_partitions
from groupcoord.client.fleet import scenario, simulate

SCENARIOS = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


def rows_of(name: str, seed: int, group: str, **overrides) -> tuple[list[dict], dict, dict]:
    sc = scenario.apply_overrides(scenario.load(SCENARIOS / f"{name}.toml"), overrides)
    events, summary, resolved = simulate.simulate(sc, seed)
    r = analyze_group(group, [e for e in events if e["group"] == group],
                      group_partitions(json.loads(json.dumps(resolved)), group))
    return r["rebalances"], r, summary["groups"][group]


KEYS = ("generation", "start_ms", "end_ms", "settle_ms", "partitions_moved", "min_moves", "partitions_revoked",
        "balance")


def test_an_assignment_arriving_after_the_next_rebalance_started_belongs_to_its_generation():
    # seed 1, billing-4: m003 is alone in generation 1 (completed at 21 ms), m001 joins at 21 ms and
    # starts the next rebalance, and only then (22 ms) does m003's client.assigned of generation 1
    # arrive: it took all 24 partitions in generation 1 (before: a KeyError, the member id of m003
    # being unknown when generation 1 was finalised), and it holds them going into generation 2,
    # the first cooperative round, where it gives up 20 of them
    rows, _, _ = rows_of("crashes-and-coordinator-move", 1, "billing-4", duration_s=3)
    assert [tuple(r[k] for k in KEYS) for r in rows] == [
        (1, 14, 21, 22, 24, 24, 0, 0),
        (2, 21, 1032, 1037, 20, 20, 20, 4),
        (3, 1041, 2043, 2047, 20, 20, 0, 0)]


def test_partitions_moved_is_never_below_the_minimum_near_90_s():
    # seed 7, billing-4: the crashed members return at 90 s; in the first cooperative round
    # (generation 4) four members each give up 2 of their 6 partitions. The last revocation (90086)
    # comes after the follow-up rebalance started (90085): it still belongs to generation 4, so 8
    # partitions moved, the minimum (before: 6, below the minimum of 8)
    rows, _, _ = rows_of("crashes-and-coordinator-move", 7, "billing-4", duration_s=95)
    assert [tuple(r[k] for k in KEYS) for r in rows if r["start_ms"] > 80000] == [
        (4, 90022, 90085, 90101, 8, 8, 8, 4),
        (5, 90097, 91096, 91111, 8, 8, 0, 0)]
