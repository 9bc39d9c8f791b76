"""Scenario files: the TOML format, round trips, overrides and clear errors."""
from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.sim import scenario
from groupcoord.sim.scenario import ScenarioError

EXAMPLES = sorted((Path(__file__).parents[2] / "examples" / "scenarios").glob("*.toml"))

BASE = {"topics": {"t": 6}, "groups": [{"name": "g", "topics": ["t"]}]}


def test_examples_load_and_round_trip():
    assert {p.name for p in EXAMPLES} >= {"rolling-restart-200.toml", "crashes-and-coordinator-move.toml"}
    for path in EXAMPLES:
        sc = scenario.load(path)
        assert sc.name == path.stem
        again = scenario.from_dict(sc.to_dict())
        assert again == sc, path


def test_rolling_restart_has_eager_and_cooperative_variants():
    sc = scenario.load(next(p for p in EXAMPLES if p.name == "rolling-restart-200.toml"))
    assert {g.protocol for g in sc.groups} == {"eager", "cooperative"}
    assert all(g.members == 200 and g.count == 1 for g in sc.groups)
    assert [e.action for e in sc.events] == ["restart"]


def test_defaults_and_protocol_derivation():
    sc = scenario.from_dict(BASE)
    g = sc.groups[0]
    assert (g.members, g.strategy, g.protocol, g.session_timeout_ms, g.heartbeat_interval_ms) == \
        (3, ["range"], "eager", 45000, 3000)
    coop = scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"], "strategy": "cooperative-sticky"}]})
    assert coop.groups[0].protocol == "cooperative"
    # the upgrade path: cooperative-sticky listed with range runs the eager protocol
    mixed = scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"],
                                                    "strategy": ["cooperative-sticky", "range"]}]})
    assert mixed.groups[0].protocol == "eager"


def test_group_copies_have_distinct_ids():
    sc = scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"], "count": 12}]})
    assert sc.group_ids()[:2] == ["g-00", "g-01"] and len(set(sc.group_ids())) == 12
    assert sc.spec_of("g-11") is sc.groups[0]


def test_overrides():
    sc = scenario.from_dict({**BASE, "events": [{"at_s": 1.5, "action": "crash", "count": 1}]})
    out = scenario.apply_overrides(sc, {"strategy": "cooperative-sticky", "members": 50, "static": True,
                                        "session_timeout_ms": 10000, "duration_s": 30, "seed": 9,
                                        "network.loss": 0.01, "coordinator.nodes": 3})
    g = out.groups[0]
    assert (g.strategy, g.protocol, g.members, g.static, g.session_timeout_ms) == \
        (["cooperative-sticky"], "cooperative", 50, True, 10000)
    assert (out.duration_s, out.seed, out.network.loss, out.coordinator.nodes) == (30, 9, 0.01, 3)
    assert out.events[0].at_ms == 1500
    assert sc.groups[0].strategy == ["range"]          # the original is untouched
    eager = scenario.apply_overrides(out, {"protocol": "eager"})
    assert eager.groups[0].protocol == "eager"
    with pytest.raises(ScenarioError, match="protocol"):
        scenario.apply_overrides(sc, {"strategy": "range", "protocol": "cooperative"})
    with pytest.raises(ScenarioError, match="override 'nope'"):
        scenario.apply_overrides(sc, {"nope": 1})


@pytest.mark.parametrize("change, message", [
    ({"topics": {}}, "topics"),
    ({"groups": [{"name": "g", "topics": ["missing"]}]}, r"groups\[0\].topics: 'missing'"),
    ({"groups": [{"name": "g", "topics": ["t"], "strategy": "fastest"}]}, "unknown assignor 'fastest'"),
    ({"groups": [{"name": "g", "topics": ["t"], "members": -1}]}, r"groups\[0\].members"),
    ({"groups": [{"name": "g", "topics": ["t"], "heartbeat_interval_ms": 50000}]}, "heartbeat_interval_ms"),
    ({"groups": [{"name": "g", "topics": ["t"], "sesion_timeout_ms": 1}]}, "unknown key 'sesion_timeout_ms'"),
    ({"events": [{"at_s": 1, "action": "explode"}]}, r"events\[0\].action"),
    ({"events": [{"action": "crash"}]}, "at_s and at_ms"),
    ({"events": [{"at_s": 1, "action": "slow", "members": [0]}]}, "duration_ms"),
    ({"events": [{"at_s": 1, "action": "crash", "group": "h"}]}, "no group 'h'"),
    ({"events": [{"at_s": 1, "action": "crash", "members": [0], "count": 1}]}, "not both"),
    ({"events": [{"at_s": 1, "action": "move_coordinator", "group": "g"}]}, "nodes >= 2"),
    ({"events": [{"at_s": 1, "action": "node_down", "node": 4}]}, "only 1 nodes"),
    ({"network": {"latency": {"dist": "pareto"}}}, "unknown distribution 'pareto'"),
    ({"network": {"latency": {"dist": "uniform", "min_ms": 1}}}, "max_ms"),
    ({"network": {"loss": 1.5}}, "loss"),
])
def test_errors_name_the_key(change, message):
    with pytest.raises(ScenarioError, match=message):
        scenario.from_dict({**BASE, **change})


def test_load_reports_bad_toml(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [\n")
    with pytest.raises(ScenarioError, match="not valid TOML"):
        scenario.load(bad)
