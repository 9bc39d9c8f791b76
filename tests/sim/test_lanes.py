"""The simulator's lanes of the steady state (Simulator._wake, _hb_arrive, _hb_deliver: a heartbeat
sent, answered and settled without the member's poll, the service's request context and the
driver's general hand-offs; _wake, _commit_arrive and _commit_deliver: an auto-commit sent without
the member's poll, taken by the coordinator without the request's context and its answer settled
without its on_response; the flat lane, _Flat: both without the checks of what only an input can
change) must change nothing: the same scenario gives the same event log, and the same run
statistics, with every request taking the general way (Simulator.lanes off)."""
from __future__ import annotations

import copy
import dataclasses
import enum
import itertools
import json
from pathlib import Path

import pytest

from groupcoord.client.assignors.base import TopicPartition as TP
from groupcoord.client.member import Member
from groupcoord.client.member.connections import COORDINATOR
from groupcoord.coordinator.handlers import offset_commit as offset_commit_api
from groupcoord.coordinator.security import Acl, Authorizer
from groupcoord.sim import scenario, simulate
from test_quick_polls import _lossy

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


def _run(sc: scenario.Scenario, seed: int) -> tuple[list[str], dict]:
    """The log, and the run's statistics with what the log does not show of each client's member
    at the end (its committed offsets, requests in flight, timers, positions, the deadlines it
    keeps, when the application next polls and the member next wakes)."""
    s = simulate.Simulator(sc, seed)
    log = [json.dumps(e, sort_keys=True) for e in s.run()]
    members = {}
    for name, c in s.clients.items():
        m = c.handle.member if c.handle is not None else None
        if m is not None and hasattr(m, "commits"):
            hb = m.heartbeat
            r = c.handle
            members[name] = (sorted(m.commits.committed_offsets.items()), m.in_flight(), m.quiet_until,
                             m.commits.next_auto_commit, getattr(hb, "next", None), hb.session_deadline,
                             getattr(hb, "last_app_poll", None), sorted(m.positions.items()), m._static,
                             m.settled_deadline, r.next_poll, r.wake_at)
    return log, {**s.stats, "members": members}


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
    ("crashes-and-coordinator-move", {"network.codec": True}),
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


@pytest.mark.parametrize("config", [{"strategy": "cooperative-sticky"}, {"strategy": "range"},      # (range: eager)
                                    {"strategy": "range", "auto_commit": False}])
def test_a_lossy_run_with_stalls_gives_the_same_log_without_lanes(monkeypatch, config):
    (log, stats), (general_log, general_stats) = _both(monkeypatch, _lossy(**config), 5)
    kinds = {json.loads(e)["event"] for e in log}
    assert {"client.stopped", "rebalance.completed"} <= kinds
    assert log == general_log
    assert stats == general_stats


def test_a_run_with_request_faults_gives_the_same_log_without_lanes(monkeypatch):
    # faults on the heartbeats and commits for a while (the service's request hook installed, then
    # gone again): the lanes step aside meanwhile and take over again after
    def run() -> tuple[list[str], dict]:
        s = simulate.Simulator(_lossy(), 5)
        faults = s.service.faults
        s.at(50_000, lambda: faults.add({"api": "Heartbeat", "count": 12, "error": "REBALANCE_IN_PROGRESS"}))
        s.at(90_000, lambda: faults.add({"api": "OffsetCommit", "count": 6, "latency_ms": 400}))
        log = [json.dumps(e, sort_keys=True) for e in s.run()]
        return log, s.stats, [f["fired"] for f in faults.list()], len(s.service.before_request)
    with_lanes = run()
    monkeypatch.setattr(simulate.Simulator, "lanes", False)
    assert with_lanes == run()
    assert with_lanes[2:] == ([12, 6], 0)          # the faults fired, and their hook is gone


def test_the_lanes_are_taken(monkeypatch):
    # the comparisons above are not of two general runs: the lanes carry most heartbeats and
    # auto-commits, and step aside for some (the flat lane off: it takes most of them without
    # these calls, see test_the_flat_lane_is_taken)
    monkeypatch.setattr(simulate.Simulator, "flat_lane", False)
    taken: dict[str, list[bool]] = {}
    for name in ("quick_heartbeat", "heartbeat_settled", "quick_auto_commit", "commit_settled"):
        def wrapped(self, *args, original=getattr(Member, name), name=name):
            out = original(self, *args)
            taken.setdefault(name, []).append(out is not None)
            return out
        monkeypatch.setattr(Member, name, wrapped)
    simulate.Simulator(_lossy(), 5).run()
    for name, outcomes in taken.items():
        assert sum(outcomes) > 300, name
        assert not all(outcomes), name                 # (some fell back on the general way)
    assert len(taken) == 4


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_the_rebalances_lane_is_taken(monkeypatch, strategy):
    # Member.idle_poll (Simulator._drive's polls after a JoinGroup's or a SyncGroup's answer and
    # after the listener's callback) takes a follower's JoinGroup answered, a SyncGroup answered
    # waiting for the listener and the assignment taken once the listener is done, and steps
    # aside for the rest (the leader, errors, a heartbeat answered REBALANCE_IN_PROGRESS,
    # partitions whose offsets are fetched): the same log, statistics and members' state as
    # every poll a whole one
    d = scenario.load(EXAMPLES / "hour-1000.toml").to_dict()
    d.update(duration_s=150.0, topics={"t": 8})                # (4 of 12 members without a partition)
    d["groups"][0].update(count=2, members=12, strategy=strategy)
    d["groups"][0].pop("protocol", None)
    d["events"][0].pop("at_ms", None)
    d["events"][0].update(at_s=40.0, interval_ms=3000)
    sc = scenario.from_dict(d)
    taken: dict[tuple[str, bool], int] = {}

    def wrapped(self, now, original=Member.idle_poll):
        case = _case(self)
        out = original(self, now)
        taken[case, out is not None] = taken.get((case, out is not None), 0) + 1
        return out
    monkeypatch.setattr(Member, "idle_poll", wrapped)
    (log, stats), (general_log, general_stats) = _both(monkeypatch, sc, 3)
    assert log == general_log
    assert stats == general_stats
    assert taken["joined", True] > 200                 # followers' JoinGroup answers
    assert taken["synced", True] > 80                  # SyncGroup answers, the listener's turn
    assert taken["assigned", True] > 80                # the listener done
    assert taken["assigned", False] > 20               # (an assignment whose offsets are fetched)
    assert taken["other", False] > 50                  # (heartbeats answered REBALANCE_IN_PROGRESS)
    assert ("other", True) not in taken
    monkeypatch.setattr(simulate.Simulator, "lanes", True)
    monkeypatch.setattr(Member, "idle_poll", lambda self, now: None)   # (the other lanes on, this one off)
    assert _run(sc, 3) == (log, stats)


def _case(m: Member) -> str:
    """Which of Member.idle_poll's cases the member is in, if any."""
    group = m.membership
    c = group.completion
    if group.state.name == "COMPLETING_REBALANCE":
        return "joined"
    if c is None or c.stage.name != "ASSIGN" or c.token is None:
        return "other"
    return "synced" if c.token in group.callbacks_pending else "assigned"


_NOT_OURS = ("member", "net", "discovery", "group", "config", "rng")     # (back references, shared parts)


def _state(v, depth: int = 4):
    """What a value holds, its parts' too, down to ``depth`` (callables out, and the parts'
    references to the member's other parts)."""
    if isinstance(v, (list, tuple)):
        return [_state(x, depth) for x in v]
    if isinstance(v, dict):
        return {k: _state(x, depth) for k, x in v.items()}
    if isinstance(v, itertools.count):
        return repr(v)
    if isinstance(v, Member):
        return {k: _state(x, depth - 1) for k, x in vars(v).items() if not callable(x)}
    if callable(v) or isinstance(v, (enum.Enum, type)):
        return v if isinstance(v, enum.Enum) else "callable"
    if dataclasses.is_dataclass(v) or hasattr(v, "__dict__"):
        if depth == 0:
            return type(v).__name__
        fields = ({f.name: getattr(v, f.name) for f in dataclasses.fields(v)} if dataclasses.is_dataclass(v)
                  else vars(v))
        return type(v).__name__, {k: _state(x, depth - 1) for k, x in fields.items()
                                  if not callable(x) and k not in _NOT_OURS}
    return v


def _actions(actions) -> list:
    return [(type(a).__name__, getattr(a, "api_key", None), getattr(a, "body", None),
             getattr(a, "deadline", None), getattr(a, "partitions", None)) for a in actions]


def test_the_rebalances_lane_steps_aside_when_a_timer_has_come(monkeypatch):
    # members caught where Member.idle_poll took their poll (a follower's JoinGroup answered, a
    # SyncGroup answered, the listener done): there idle_poll hands out what poll() hands out and
    # leaves the member as poll() leaves it; with another part's time come (or a part with
    # work) it steps aside (None, nothing changed), and poll() does more than idle_poll would have
    d = scenario.load(EXAMPLES / "hour-1000.toml").to_dict()
    d.update(duration_s=60.0, topics={"t": 8})
    d["groups"][0].update(count=1, members=12)
    d["events"][0].pop("at_ms", None)
    d["events"][0].update(at_s=20.0, interval_ms=3000)
    caught: dict[str, tuple[Member, int]] = {}

    def wrapped(self, now, original=Member.idle_poll):
        case = _case(self)
        before = copy.deepcopy(self) if case not in caught and case != "other" else None
        out = original(self, now)
        if out is not None and before is not None:
            caught[case] = (before, now)
        return out
    monkeypatch.setattr(Member, "idle_poll", wrapped)
    simulate.Simulator(scenario.from_dict(d), 3).run()
    monkeypatch.undo()
    assert set(caught) == {"joined", "synced", "assigned"}

    def changes(m: Member, now: int) -> dict:
        """What may come, and in which of the cases the lane must step aside for it."""
        hb, metadata, group, commits = m.heartbeat, m.metadata, m.membership, m.commits
        every = {"joined", "synced", "assigned"}

        def auto_commit_due():
            commits.auto_commit, commits.next_auto_commit = True, now
        out = {
            "heartbeat due": (every, lambda: setattr(hb, "next", now)),
            "session over": (every, lambda: setattr(hb, "session_deadline", now)),
            "poll timeout": (every, lambda: setattr(hb, "last_app_poll", now - hb.max_poll_interval_ms)),
            "metadata refresh": (every, lambda: setattr(metadata, "next_refresh", now)),
            "coordinator unknown": (every, lambda: setattr(m.discovery, "coordinator", None)),
            "offsets to fetch": (every, lambda: m.offsets.need_committed.add(TP("t", 0))),
            "offsets to reset": (every, lambda: m.offsets.need_reset.add(TP("t", 0))),
            "metadata asked for": (every, lambda: (setattr(metadata, "requested", True),
                                                   setattr(metadata, "retry_at", now))),
            "coordinator's connection gone": (every, lambda: m.net.by_key.pop(COORDINATOR)),
            "close asked for": (every, lambda: m.close(now)),
            "a commit under way": (every, lambda: m.commit({TP("t", 0): 5}, now, sync=False)),
            # (an auto-commit due, or a rejoin asked for, waits while the rebalance does)
            "auto-commit due": ({"assigned"}, auto_commit_due),
            "rejoin asked for": ({"assigned"}, lambda: setattr(group, "rejoin_needed", True)),
            "subscription changed": ({"assigned"}, lambda: setattr(group, "joined_subscription", frozenset({"u"}))),
            "unsubscribed": ({"assigned"}, lambda: setattr(m, "subscription", frozenset())),
        }
        if group.completion is not None:
            # (the cooperative protocol's rejoin after a revocation: onJoinComplete's)
            out["partitions revoked"] = ({"assigned"},
                                         lambda: setattr(group.completion, "revoked", frozenset({TP("t", 0)})))
        if m.net.inflight:
            out["request timed out"] = (every, lambda: setattr(next(iter(m.net.inflight.values())), "deadline", now))
        return out
    for case, (member, now) in caught.items():
        for what in [None, *changes(member, now)]:
            lane, whole = copy.deepcopy(member), copy.deepcopy(member)
            if what is not None:
                changes(lane, now)[what][1]()
                changes(whole, now)[what][1]()
            if what is None or case not in changes(member, now)[what][0]:
                out = lane.idle_poll(now)
                assert out is not None, (case, what)
                assert _actions(out) == _actions(whole.poll(now)), (case, what)
                assert _state(lane) == _state(whole), (case, what)
                continue
            untouched = _state(whole)
            assert lane.idle_poll(now) is None, (case, what)
            assert _state(lane) == untouched, (case, what)          # (nothing changed)
            whole.poll(now)
            idle = copy.deepcopy(member)
            idle.idle_poll(now)
            after = changes(idle, now).get(what)        # (a change of the completion: taken with it)
            if after is not None:
                after[1]()
            assert _state(whole) != _state(idle), (case, what)      # the general poll did more


def test_members_without_partitions_take_the_auto_commits_lane(monkeypatch):
    # 12 members of a 4-partition topic, a rolling restart among them: the members without a
    # partition never commit (their OffsetCommit version is never picked), and their auto-commits
    # of nothing go the lane as well, with the same log and statistics as the general way
    d = scenario.load(EXAMPLES / "hour-1000.toml").to_dict()
    d.update(duration_s=240.0, topics={"t": 4})
    d["groups"][0].update(count=1, members=12)
    d["events"][0].pop("at_ms", None)
    d["events"][0].update(at_s=60.0, interval_ms=5000)
    sc = scenario.from_dict(d)
    empty: list[bool] = []

    def wrapped(self, now, original=Member.quick_auto_commit):
        out = original(self, now)
        if not self.assignment:
            empty.append(out == [])
        return out
    monkeypatch.setattr(Member, "quick_auto_commit", wrapped)
    flat = _run(sc, 3)
    monkeypatch.setattr(simulate.Simulator, "flat_lane", False)      # (the flat lane takes them without the call)
    (log, stats), (general_log, general_stats) = _both(monkeypatch, sc, 3)
    assert log == general_log
    assert stats == general_stats
    assert flat == (log, stats)
    assert sum(empty) > 250        # (404 of 496 calls in the runs with the flat lane off and on, which
                                   # takes most of them without the call; the others at wake-ups where it is not due)


@pytest.mark.parametrize("case", ["hour-1000", "lossy"])
def test_the_flat_lane_is_taken(monkeypatch, case):
    # the flat lane (Simulator._flat_wake, _flat_settle, _flat_commit_settle: a steady member's
    # heartbeats, auto-commits and their answers without the checks _Flat keeps) takes most of
    # the steady state's requests, of members with partitions and without, steps aside for some
    # (a lossy run's with stalls and losses: for answers too), and leaves the same log, statistics
    # and members as the lanes without it and as the general way
    sc = scenario.apply_overrides(scenario.load(EXAMPLES / "hour-1000.toml"), {"duration_s": 300, "members": 40}) \
        if case == "hour-1000" else _lossy()
    taken: dict[str, list[bool]] = {}
    for fn in ("_flat_wake", "_flat_settle", "_flat_commit_settle"):
        def wrapped(self, r, *args, original=getattr(simulate.Simulator, fn), fn=fn):
            out = original(self, r, *args)
            taken.setdefault(fn, []).append(out)
            if fn == "_flat_wake" and out:
                taken.setdefault("empty" if r.flat.empty else "owning", []).append(True)
            return out
        monkeypatch.setattr(simulate.Simulator, fn, wrapped)
    flat = _run(sc, 3 if case == "hour-1000" else 5)
    for fn in ("_flat_wake", "_flat_settle", "_flat_commit_settle"):
        outcomes = taken[fn]
        assert sum(outcomes) > 100, fn
        if case == "lossy":
            assert not all(outcomes), fn             # (some went the lanes' or the general way)
    if case == "hour-1000":
        assert len(taken["empty"]) > 100 and len(taken["owning"]) > 100
    monkeypatch.setattr(simulate.Simulator, "flat_lane", False)
    assert _run(sc, 3 if case == "hour-1000" else 5) == flat
    monkeypatch.setattr(simulate.Simulator, "lanes", False)
    assert _run(sc, 3 if case == "hour-1000" else 5) == flat


def test_the_coordinators_commit_lane_steps_aside_for_an_authorizer(monkeypatch):
    # OffsetCommits the API layer passes whole go to the coordinator without a request context
    # (Simulator._commit_arrive); with an authorizer (here one denying the topic's READ for a
    # while: the commits refused meanwhile) each takes the general way, with the same log and
    # statistics as with no lane at all
    whole: list[bool] = []

    def passes(service, version, body, original=offset_commit_api.passes_whole):
        out = original(service, version, body)
        whole.append(out)
        return out
    monkeypatch.setattr(offset_commit_api, "passes_whole", passes)

    def run() -> tuple[list[str], dict]:
        s = simulate.Simulator(_lossy(), 5)
        security = s.service.security
        deny = Authorizer([Acl("User:ANONYMOUS", "TOPIC", "t", "READ", "DENY")], allow_everyone_if_no_acl_found=True)
        s.at(60_000, lambda: setattr(security, "authorizer", deny))
        s.at(120_000, lambda: setattr(security, "authorizer", None))
        log = s.run()
        commits = [e["ts_ms"] for e in log if e["event"] == "offset.committed"]
        assert min(commits) < 60_000 and max(commits) > 120_000
        assert not [t for t in commits if 60_100 < t < 120_000]     # (refused meanwhile)
        return [json.dumps(e, sort_keys=True) for e in log], s.stats
    with_lanes = run()
    taken = whole.count(True)
    assert taken > 300 and whole.count(False) > 50
    monkeypatch.setattr(simulate.Simulator, "lanes", False)
    assert run() == with_lanes
    assert whole.count(True) == taken          # (without lanes nothing asks)


def test_an_offset_commit_passed_whole_is_answered_as_by_its_handler():
    # commit_whole against handle() on two services alike (two nodes): the same answers, events
    # and offsets for the commits the API layer passes whole, to the group's coordinator or not,
    # of a simple group or of a member of none; passes_whole refuses what the API layer answers
    # itself (an empty commit included: handle() answers it without the coordinator)
    from groupcoord.coordinator.config import BrokerConfig
    from groupcoord.coordinator.context import RequestContext
    from groupcoord.coordinator.service import Service

    def service() -> tuple[Service, list]:
        events: list = []
        s = Service(BrokerConfig({}, environ={}), nodes=2, clock=lambda: 1000, emit=events.append)
        s.create_topic("t", 3)
        return s, events

    def body(*partitions, topic="t", group="g", generation=-1, member="") -> dict:
        return {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
                "group_instance_id": None, "retention_time_ms": -1, "topics": [{"name": topic, "partitions": [
                    {"partition_index": p, "committed_offset": 7 + p, "committed_leader_epoch": -1,
                     "committed_metadata": "m"} for p in partitions]}]}
    (a, a_events), (b, b_events) = service(), service()
    node, other = a.cluster.coordinator_for("g"), a.cluster.coordinator_for("h")
    answers = []
    for version, req, at in [(v, body(0, 2), node) for v in (2, 8, 9)] + [
            (9, body(1), 1 - node),                                     # NOT_COORDINATOR
            (9, body(1, generation=3, member="m-1"), node),             # UNKNOWN_MEMBER_ID (the simple group's)
            (9, body(1, group="h", generation=3, member="m-1"), other),     # GROUP_ID_NOT_FOUND
            (7, body(1, group="h", generation=3, member="m-1"), other)]:    # ILLEGAL_GENERATION before v9
        assert offset_commit_api.passes_whole(a, version, req)
        got, want = [], []
        offset_commit_api.commit_whole(a, at, version, req, got.append)
        offset_commit_api.handle(RequestContext(b, at, "c", "/127.0.0.1", 8, version, 1), version, req, want.append)
        assert got == want
        answers.append(got[0]["topics"][0]["partitions"][-1]["error_code"])
    assert answers == [0, 0, 0, 16, 25, 69, 22]
    assert a_events == b_events and len(a_events) > 3
    assert a.group_coordinator.offsets.of("g") == b.group_coordinator.offsets.of("g") != {}
    assert not offset_commit_api.passes_whole(a, 9, body(0, 3))            # beyond the topic's partitions
    assert not offset_commit_api.passes_whole(a, 9, body(0, topic="u"))    # an unknown topic
    assert not offset_commit_api.passes_whole(a, 9, body())                # a topic without partitions
    assert not offset_commit_api.passes_whole(a, 9, {**body(0), "topics": []})     # no topic
    assert not offset_commit_api.passes_whole(a, 10, body(0))             # topics by id
    a.security.authorizer = Authorizer(allow_everyone_if_no_acl_found=True)
    assert not offset_commit_api.passes_whole(a, 9, body(0))


def test_the_flat_lanes_commits_are_checked_again_at_every_cluster_change(monkeypatch):
    # the flat lane's OffsetCommits reach the coordinator without the API layer's checks of each
    # (Simulator._commit_arrive), as what _flat_commits_pass found holds until the cluster's epoch
    # changes: here partitions added (the members then rejoin), a group's coordinator moved, a
    # broker down and up again. Each change has the finding made again, and the run gives the same
    # log, statistics and members as the lanes without the flat lane and as the general way
    d = scenario.load(EXAMPLES / "crashes-and-coordinator-move.toml").to_dict()
    d["events"] = [{"at_s": 60.0, "action": "add_partitions", "topic": "payments", "partitions": 30},
                   {"at_s": 120.0, "action": "move_coordinator", "group": "billing-0"},
                   {"at_s": 180.0, "action": "node_down", "node": 1},
                   {"at_s": 220.0, "action": "node_up", "node": 1}]
    sc = scenario.from_dict(d)
    found: list[tuple[int, int, bool]] = []
    whole: list[bool] = []

    def wrapped(self, f, conn, body, original=simulate.Simulator._flat_commits_pass):
        out = original(self, f, conn, body)
        found.append((self.now, self.service.cluster.epoch, out))
        return out

    def commit_whole(*args, original=offset_commit_api.commit_whole):
        whole.append(True)
        return original(*args)
    monkeypatch.setattr(simulate.Simulator, "_flat_commits_pass", wrapped)
    monkeypatch.setattr(offset_commit_api, "commit_whole", commit_whole)
    flat = _run(sc, 3)
    commits = sum(json.loads(e)["event"] == "offset.committed" for e in flat[0])
    assert len(whole) < commits / 4              # (most commits went past the API layer's checks)
    assert sum(out for *_, out in found) > 20
    epochs = {epoch for _, epoch, out in found if out}
    assert len(epochs) >= 4                      # found again after each change
    assert any(not out for *_, out in found)     # (the moved coordinator's commits: NOT_COORDINATOR)
    monkeypatch.setattr(simulate.Simulator, "flat_lane", False)
    assert _run(sc, 3) == flat
    monkeypatch.setattr(simulate.Simulator, "lanes", False)
    assert _run(sc, 3) == flat
