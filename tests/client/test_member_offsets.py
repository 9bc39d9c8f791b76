"""Member core in virtual time: commits, committed offsets, positions, auto-commit, fetching."""
from __future__ import annotations

import pytest

from groupcoord.client.member import (
    OFFSET_COMMIT, CommitFailedError, NoOffsetForPartitionError, OffsetAndMetadata, RebalanceInProgressError,
    RetriableCommitFailedError,
)
from groupcoord.protocol import records as rc
from groupcoord.protocol.errors import ErrorCode as E

from test_member_harness import TP, SimpleCooperative, Sim, all_tps

T0, T1, T2, T3 = (TP("t", p) for p in range(4))


def stored(sim) -> dict:
    g = sim.group()
    offsets = sim.service.group_coordinator.offsets.of(g.group_id) if g is not None else {}
    return {TP(t, p): o.committed_offset for t, parts in offsets.items() for p, o in parts.items()}


def produce(sim, topic: str, partition: int, n: int, prefix: str = "v") -> None:
    batch = rc.encode_batch([rc.Record(i, 0, f"k{i}".encode(), f"{prefix}{i}".encode()) for i in range(n)],
                            base_timestamp=1000)
    code, _ = sim.service.cluster.append(topic, partition, batch)
    assert code == 0


def commits_of(sm, kind=None):
    return [c for c in sm.commits if kind is None or c.kind == kind]


# ---------------------------------------------------------------------------------- explicit commits
def test_sync_and_async_commits_reach_the_coordinator_and_complete_in_order():
    sim = Sim({"t": 4})
    a = sim.add("a")
    sim.run_until_stable()
    m = a.member
    h1 = m.commit({T0: 5, T1: OffsetAndMetadata(7, "meta")}, sim.now)
    h2 = m.commit({T2: 9}, sim.now, sync=False)
    sim.advance(100)
    assert [(c.handle, c.error) for c in a.commits] == [(h1, None), (h2, None)]
    assert a.commits[1].kind == "async"
    assert stored(sim) == {T0: 5, T1: 7, T2: 9}
    h3 = m.fetch_committed([T0, T1, T3], sim.now)
    sim.advance(100)
    (res,) = a.fetched
    assert res.handle == h3 and res.error is None
    assert res.offsets == {T0: OffsetAndMetadata(5), T1: OffsetAndMetadata(7, "meta"), T3: None}


def test_commit_of_everything_consumed_uses_the_positions():
    sim = Sim({"t": 4})
    a = sim.add("a")
    sim.run_until_stable()
    sim.run(lambda: len(a.member.positions) == 4)
    a.member.seek(T1, 42)
    a.member.commit(None, sim.now)
    sim.advance(50)
    assert stored(sim) == {T0: 0, T1: 42, T2: 0, T3: 0}


def test_newly_assigned_partitions_start_at_the_committed_offset():
    sim = Sim({"t": 4})
    a = sim.add("a")
    sim.run_until_stable()
    a.member.commit({T0: 11, T1: 12, T2: 13, T3: 14}, sim.now)
    sim.advance(50)
    b = sim.add("b")
    sim.run_until_stable()
    sim.run(lambda: len(b.member.positions) == 2 and len(a.member.positions) == 2)
    for sm in (a, b):
        for tp in sm.assignment:
            assert sm.member.positions[tp] == 11 + tp.partition


@pytest.mark.parametrize("reset,expected", [("earliest", 0), ("latest", 5)])
def test_auto_offset_reset_without_a_committed_offset(reset, expected):
    sim = Sim({"t": 2})
    produce(sim, "t", 0, 5)
    produce(sim, "t", 1, 5)
    a = sim.add("a", config={"auto.offset.reset": reset})
    sim.run_until_stable()
    sim.run(lambda: len(a.member.positions) == 2)
    assert a.member.positions == {TP("t", 0): expected, TP("t", 1): expected}


def test_auto_offset_reset_none_raises_to_the_application():
    sim = Sim({"t": 2})
    a = sim.add("a", config={"auto.offset.reset": "none"})
    a.member.commit  # noqa: B018
    sim.run_until_stable()
    sim.run(lambda: a.errors)
    err = a.errors[0]
    assert not err.fatal and isinstance(err.error, NoOffsetForPartitionError)
    assert err.error.partitions == [TP("t", 0), TP("t", 1)]


# ---------------------------------------------------------------------------------- commit errors
def test_commit_while_rebalancing_fails_with_rebalance_in_progress():
    sim = Sim({"t": 2})
    a = sim.add("a")
    sim.add("b")
    sim.run(lambda: a.member.state.name == "PREPARING_REBALANCE" and a.member.generation_id < 0 or
            sim.group() is not None and sim.group().state == "PreparingRebalance")
    a.member.commit({TP("t", 0): 1}, sim.now)
    sim.settle()
    assert isinstance(a.commits[-1].error, RebalanceInProgressError)


def test_commit_unknown_member_id_fails_the_commit_and_rejoins():
    sim = Sim({"t": 2})
    a = sim.add("a")
    sim.run_until_stable()
    old = a.member.member_id
    sim.fail_next(OFFSET_COMMIT, E.UNKNOWN_MEMBER_ID)
    a.member.commit({TP("t", 0): 1}, sim.now)
    sim.advance(20)
    assert isinstance(a.commits[-1].error, CommitFailedError)
    sim.run_until_stable()
    assert a.member.member_id != old and "lost" in a.kinds()


def test_retriable_commit_errors_are_retried_by_sync_commits_only():
    sim = Sim({"t": 2})
    a = sim.add("a", config={"retry.backoff.ms": 50})
    sim.run_until_stable()
    sim.fail_next(OFFSET_COMMIT, E.COORDINATOR_LOAD_IN_PROGRESS, count=2)
    a.member.commit({TP("t", 0): 3}, sim.now)
    sim.advance(500)
    assert a.commits[-1].error is None and stored(sim)[TP("t", 0)] == 3
    sim.fail_next(OFFSET_COMMIT, E.COORDINATOR_LOAD_IN_PROGRESS)
    a.member.commit({TP("t", 0): 4}, sim.now, sync=False)
    sim.advance(500)
    assert isinstance(a.commits[-1].error, RetriableCommitFailedError)
    assert stored(sim)[TP("t", 0)] == 3


def test_sync_commit_times_out():
    sim = Sim({"t": 2})
    a = sim.add("a", config={"retry.backoff.ms": 100})
    sim.run_until_stable()
    sim.fail_next(OFFSET_COMMIT, E.COORDINATOR_LOAD_IN_PROGRESS, count=1000)
    a.member.commit({TP("t", 0): 3}, sim.now, timeout_ms=1000)
    t0 = sim.now
    sim.run(lambda: a.commits)
    assert a.commits[-1].error is not None and 900 <= sim.now - t0 <= 1100


# ---------------------------------------------------------------------------------- auto-commit
def test_auto_commit_every_interval():
    sim = Sim({"t": 2})
    a = sim.add("a", config={"enable.auto.commit": True, "auto.commit.interval.ms": 2000})
    sim.run_until_stable()
    sim.run(lambda: len(a.member.positions) == 2)
    a.member.seek(TP("t", 0), 17)
    t0 = sim.now
    sim.advance(10_000)
    autos = commits_of(a, "auto")
    assert 4 <= len(autos) <= 6 and all(c.error is None for c in autos)
    assert stored(sim)[TP("t", 0)] == 17
    times = [t for t, m, k, _ in sim.requests if k == OFFSET_COMMIT and t >= t0]
    assert all(1900 <= t2 - t1 <= 2100 for t1, t2 in zip(times, times[1:]))


def test_eager_rebalance_commits_before_revoking():
    sim = Sim({"t": 4})
    seen = {}

    def on_revoke(sm, action):
        if action.kind == "revoked" and action.partitions:
            seen[sm.name] = (dict(stored(sim)), {tp: sm.member.positions.get(tp) for tp in action.partitions})
    a = sim.add("a", config={"enable.auto.commit": True, "auto.commit.interval.ms": 60000}, listener=on_revoke)
    sim.run_until_stable()
    sim.run(lambda: len(a.member.positions) == 4)
    for tp in all_tps(sim, "t"):
        a.member.seek(tp, 100 + tp.partition)
    sim.add("b")
    sim.run_until_stable()
    committed_then, positions_then = seen["a"]
    assert positions_then == {tp: 100 + tp.partition for tp in all_tps(sim, "t")}
    assert all(committed_then[tp] == off for tp, off in positions_then.items())
    assert commits_of(a, "rebalance")[0].offsets.keys() == all_tps(sim, "t")
    # and b starts where a left off
    sim.run(lambda: len(sim["b"].member.positions) == 2)
    assert all(sim["b"].member.positions[tp] == 100 + tp.partition for tp in sim["b"].assignment)


def test_cooperative_rebalance_commits_the_revoked_partitions_before_revoking_them():
    sim = Sim({"t": 4})
    order = []

    def listener(sm, action):
        order.append(("callback", action.kind, sorted(action.partitions)))
    a = sim.add("a", assignors=[SimpleCooperative()],
                config={"enable.auto.commit": True, "auto.commit.interval.ms": 60000}, listener=listener)
    sim.run_until_stable()
    sim.run(lambda: len(a.member.positions) == 4)
    orig = a.member.commits.complete

    def spy(op, error):
        order.append(("commit", op.kind, sorted(op.offsets)))
        orig(op, error)
    a.member.commits.complete = spy
    for tp in all_tps(sim, "t"):
        a.member.seek(tp, 50 + tp.partition)
    sim.add("b", assignors=[SimpleCooperative()])
    # once the rebalance has begun (a's prepare commit went out), a keeps consuming
    sim.run(lambda: any(e[0] == "commit" for e in order))
    for tp in all_tps(sim, "t"):
        a.member.seek(tp, 70 + tp.partition)
    sim.run_until_stable()
    revoked = next(e[2] for e in order if e[:2] == ("callback", "revoked"))
    i = order.index(("callback", "revoked", revoked))
    assert order[i - 1] == ("commit", "rebalance", revoked)      # just the revoked ones, just before
    assert all(stored(sim)[tp] == 70 + tp.partition for tp in revoked)
    sim.run(lambda: len(sim["b"].member.positions) == 2)
    assert all(sim["b"].member.positions[tp] == 70 + tp.partition for tp in sim["b"].assignment)


def test_close_commits_revokes_and_leaves():
    sim = Sim({"t": 2})
    a = sim.add("a", config={"enable.auto.commit": True})
    sim.run_until_stable()
    sim.run(lambda: len(a.member.positions) == 2)
    a.member.seek(TP("t", 1), 9)
    a.member.close(sim.now)
    sim.run(lambda: a.closed)
    assert commits_of(a, "close")[0].error is None and stored(sim)[TP("t", 1)] == 9
    assert a.kinds()[-1] == "revoked"
    assert sim.group().state == "Empty"


# ---------------------------------------------------------------------------------- fetching
def test_fetching_records_advances_positions_and_commits_them():
    sim = Sim({"t": 2})
    produce(sim, "t", 0, 3)
    produce(sim, "t", 1, 2, prefix="w")
    a = sim.add("a", fetch=True)
    got = []
    sim.run(lambda: got.extend(a.member.take_records()) or len(got) == 5, max_ms=5000)
    by_tp = {}
    for r in got:
        by_tp.setdefault((r.topic, r.partition), []).append((r.offset, r.value))
    assert by_tp == {("t", 0): [(0, b"v0"), (1, b"v1"), (2, b"v2")], ("t", 1): [(0, b"w0"), (1, b"w1")]}
    assert a.member.positions == {TP("t", 0): 3, TP("t", 1): 2}
    produce(sim, "t", 0, 1, prefix="late")                   # a parked fetch is woken up
    sim.run(lambda: got.extend(a.member.take_records()) or len(got) == 6, max_ms=5000)
    assert got[-1].value == b"late0" and got[-1].offset == 3
    a.member.commit(None, sim.now)
    sim.advance(50)
    assert stored(sim) == {TP("t", 0): 4, TP("t", 1): 2}


def test_a_poll_that_changes_nothing_makes_one_pass():
    # a pass that changed nothing another step reads is not repeated: while the leader's connection
    # opens again, each poll looks at the fetch once (one shuffle of its partitions' order)
    import random

    class Counting(random.Random):
        shuffles = 0

        def shuffle(self, x):
            self.shuffles += 1
            super().shuffle(x)

    sim = Sim({"t": 2})
    produce(sim, "t", 0, 3)
    a = sim.add("a", fetch=True)
    got = []
    sim.run(lambda: got.extend(a.member.take_records()) or len(got) == 3, max_ms=5000)
    m = a.member
    m.fetcher.rng = Counting(1)
    sim.disconnect("a")
    m.poll(sim.now)                       # the connections go out again
    before = m.fetcher.rng.shuffles
    assert m.poll(sim.now) == [] and m.fetcher.rng.shuffles - before == 1
