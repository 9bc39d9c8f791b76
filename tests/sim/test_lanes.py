"""The simulator's lanes of the steady state (Simulator._wake, _hb_arrive, _hb_deliver: a heartbeat
sent, answered and settled without the member's poll, the service's request context and the
driver's general hand-offs) must change nothing: the same scenario gives the same event log, and
the same run statistics, with every request taking the general way (Simulator.lanes off)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from groupcoord.sim import scenario, simulate
from test_quick_polls import _lossy

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


def _run(sc: scenario.Scenario, seed: int) -> tuple[list[str], dict]:
    s = simulate.Simulator(sc, seed)
    log = [json.dumps(e, sort_keys=True) for e in s.run()]
    return log, s.stats


def _both(monkeypatch, sc: scenario.Scenario, seed: int):
    lanes = _run(sc, seed)
    monkeypatch.setattr(simulate.Simulator, "lanes", False)
    general = _run(sc, seed)
    return lanes, general


@pytest.mark.parametrize("name,overrides", [
    ("crashes-and-coordinator-move", {}),
    ("slow-members", {}),
    ("static-rolling-restart", {}),
    ("rolling-restart-200", {"duration_s": 120}),
    ("crashes-and-coordinator-move", {"group_protocol": "consumer",
                                       "coordinator.config.group.consumer.min.session.timeout.ms": 5000,
                                       "coordinator.config.group.consumer.min.heartbeat.interval.ms": 1000}),
])
def test_an_example_gives_the_same_log_without_lanes(monkeypatch, name, overrides):
    sc = scenario.apply_overrides(scenario.load(EXAMPLES / f"{name}.toml"), overrides) if overrides \
        else scenario.load(EXAMPLES / f"{name}.toml")
    (log, stats), (general_log, general_stats) = _both(monkeypatch, sc, 3)
    assert len(log) > 500
    assert log == general_log
    assert stats == general_stats


@pytest.mark.parametrize("config", [{"strategy": "cooperative-sticky"}, {"strategy": "range", "auto_commit": False}])
def test_a_lossy_run_with_stalls_gives_the_same_log_without_lanes(monkeypatch, config):
    (log, stats), (general_log, general_stats) = _both(monkeypatch, _lossy(**config), 5)
    kinds = {json.loads(e)["event"] for e in log}
    assert {"client.stopped", "rebalance.completed"} <= kinds
    assert log == general_log
    assert stats == general_stats


def test_the_heartbeats_take_their_lane(monkeypatch):
    # the comparisons above are not of two general runs: the lanes carry most heartbeats
    counted = {"arrive": 0, "settled": 0}
    arrive, deliver = simulate.Simulator._hb_arrive, simulate.Simulator._hb_deliver

    def hb_arrive(self, arg):
        counted["arrive"] += 1
        return arrive(self, arg)

    def hb_deliver(self, arg):
        counted["settled"] += 1
        return deliver(self, arg)
    monkeypatch.setattr(simulate.Simulator, "_hb_arrive", hb_arrive)
    monkeypatch.setattr(simulate.Simulator, "_hb_deliver", hb_deliver)
    s = simulate.Simulator(_lossy(), 5)
    s.run()
    assert counted["arrive"] > 500 and counted["settled"] > 400
