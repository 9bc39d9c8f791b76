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
    assert (g.members, g.strategy, g.protocol, g.group_protocol, g.session_ms, g.heartbeat_ms) == \
        (3, ["range"], "eager", "classic", 45000, 3000)
    coop = scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"], "strategy": "cooperative-sticky"}]})
    assert coop.groups[0].protocol == "cooperative"
    # the upgrade path: cooperative-sticky listed with range runs the eager protocol
    mixed = scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"],
                                                    "strategy": ["cooperative-sticky", "range"]}]})
    assert mixed.groups[0].protocol == "eager"


def test_consumer_protocol_groups():
    sc = scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"], "group_protocol": "consumer"}]})
    g = sc.groups[0]
    assert (g.consumer, g.session_ms, g.heartbeat_ms, g.group_configs()) == (True, None, None, {})
    assert scenario.from_dict(sc.to_dict()) == sc
    # explicit timeouts become the group's configs, once the coordinator's bounds allow them
    wide = {"group.consumer.min.session.timeout.ms": 6000, "group.consumer.min.heartbeat.interval.ms": 1000}
    sc = scenario.from_dict({**BASE, "coordinator": {"config": wide},
                             "groups": [{"name": "g", "topics": ["t"], "group_protocol": "consumer",
                                         "remote_assignor": "range", "session_timeout_ms": 10000,
                                         "heartbeat_interval_ms": 1000}]})
    assert sc.groups[0].group_configs() == {"consumer.session.timeout.ms": 10000, "consumer.heartbeat.interval.ms": 1000}
    # --set group_protocol=consumer on a classic scenario without explicit timeouts, and back
    classic = scenario.from_dict(BASE)
    out = scenario.apply_overrides(classic, {"group_protocol": "consumer", "remote_assignor": "uniform"})
    assert (out.groups[0].group_protocol, out.groups[0].remote_assignor, out.groups[0].session_ms) == \
        ("consumer", "uniform", None)
    back = scenario.apply_overrides(out, {"group_protocol": "classic"})
    assert (back.groups[0].session_ms, back.groups[0].heartbeat_ms) == (45000, 3000)
    # explicit classic timeouts outside the consumer bounds: the error says how to widen them
    explicit = scenario.from_dict({**BASE, "groups": [{"name": "g", "topics": ["t"], "heartbeat_interval_ms": 3000}]})
    with pytest.raises(ScenarioError, match="group.consumer.min.heartbeat.interval.ms"):
        scenario.apply_overrides(explicit, {"group_protocol": "consumer"})


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
    ({"groups": [{"name": "g", "topics": ["t"], "group_protocol": "new"}]}, r"groups\[0\].group_protocol"),
    ({"groups": [{"name": "g", "topics": ["t"], "group_protocol": "consumer", "remote_assignor": "sticky"}]},
     r"groups\[0\].remote_assignor: expected one of uniform, range"),
    # a consumer group's timeouts are group configs within the coordinator's bounds
    ({"groups": [{"name": "g", "topics": ["t"], "group_protocol": "consumer", "session_timeout_ms": 10000}]},
     r"groups\[0\].session_timeout_ms: 10000 is outside 45000 to 60000.*group.consumer.min.session.timeout.ms"),
    ({"groups": [{"name": "g", "topics": ["t"], "group_protocol": "consumer", "heartbeat_interval_ms": 3000}]},
     r"heartbeat_interval_ms: 3000 is outside 5000 to 15000"),
])
def test_errors_name_the_key(change, message):
    with pytest.raises(ScenarioError, match=message):
        scenario.from_dict({**BASE, **change})


def test_load_reports_bad_toml(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [\n")
    with pytest.raises(ScenarioError, match="not valid TOML"):
        scenario.load(bad)
