"""A member's quick polls (Member._quick_poll: a poll between inputs that may only heartbeat and
commit) and the simulator's application polls counted late for them must change nothing: the same
scenario gives the same event log with every poll a whole one (Member.quick_polls off)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from groupcoord.client.member import Member
from groupcoord.sim import scenario, simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


def _log(sc: scenario.Scenario, seed: int) -> list[str]:
    return [json.dumps(e, sort_keys=True) for e in simulate.Simulator(sc, seed).run()]


def _both(monkeypatch, sc: scenario.Scenario, seed: int) -> tuple[list[str], list[str]]:
    quick = _log(sc, seed)
    monkeypatch.setattr(Member, "quick_polls", False)
    whole = _log(sc, seed)
    return quick, whole


def _lossy(**config) -> scenario.Scenario:
    """Members that lose messages (request timeouts, reconnects), stall past their poll timeout,
    crash and restart, with auto-commits often and a coordinator that moves."""
    return scenario.from_dict({
        "duration_s": 240, "topics": {"t": 12},
        "coordinator": {"nodes": 2, "config": {"group.initial.rebalance.delay.ms": 0}},
        "network": {"latency": {"dist": "lognormal", "median_ms": 3, "sigma": 0.8}, "loss": 0.02},
        "groups": [{"name": "g", "topics": ["t"], "members": 5, "strategy": "cooperative-sticky",
                    "session_timeout_ms": 8000, "heartbeat_interval_ms": 1000, "auto_commit_interval_ms": 700,
                    "max_poll_interval_ms": 20000, "request_timeout_ms": 4000, **config}],
        "events": [{"at_s": 40, "action": "slow", "kind": "poll", "group": "g", "members": [1], "duration_ms": 25000},
                   {"at_s": 70, "action": "crash", "group": "g", "members": [2], "restart_after_ms": 5000},
                   {"at_s": 100, "action": "move_coordinator", "group": "g"},
                   {"at_s": 130, "action": "slow", "kind": "heartbeat", "group": "g", "members": [3],
                    "duration_ms": 9000},
                   {"at_s": 160, "action": "network_partition", "group": "g", "members": [4], "duration_ms": 3000}]})


@pytest.mark.parametrize("name", ["crashes-and-coordinator-move", "slow-members"])
def test_an_example_gives_the_same_log_with_whole_polls(monkeypatch, name):
    sc = scenario.load(EXAMPLES / f"{name}.toml")
    quick, whole = _both(monkeypatch, sc, 3)
    assert len(quick) > 500
    assert quick == whole


@pytest.mark.parametrize("strategy", ["cooperative-sticky", "range"])
def test_a_lossy_run_with_stalls_gives_the_same_log_with_whole_polls(monkeypatch, strategy):
    quick, whole = _both(monkeypatch, _lossy(strategy=strategy), 5)
    kinds = {json.loads(e)["event"] for e in quick}
    assert {"client.committed", "client.stopped", "rebalance.completed"} <= kinds
    assert quick == whole


def test_quick_polls_happen(monkeypatch):
    # the comparison above is not of two whole-poll runs: quick polls do run
    calls = []
    original = Member._quick_poll

    def counted(self, now):
        calls.append(now)
        return original(self, now)
    monkeypatch.setattr(Member, "_quick_poll", counted)
    _log(_lossy(), 5)
    assert len(calls) > 500
