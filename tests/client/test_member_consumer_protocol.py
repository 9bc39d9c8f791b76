"""The member with group.protocol=consumer (KIP-848) against our coordinator, in virtual time.

Kafka 4's client is the reference (ConsumerMembershipManager, ConsumerHeartbeatRequestManager,
CommitRequestManager): joining with epoch 0 and a full heartbeat, heartbeats with only the
changed fields at the coordinator's interval, incremental reconciliation (revoke, then assign
once released, then acknowledge), the auto-commit before a reconciliation, fencing and rejoin
with the same member id, static members leaving with -2, leaving with -1 on close,
STALE_MEMBER_EPOCH commits retried after the next heartbeat.
"""
from __future__ import annotations

import random

import pytest

from groupcoord.client.consumer_config import ConfigError
from groupcoord.client.member import Member, OFFSET_COMMIT, SendRequest
from groupcoord.client.member.consumer_protocol import CState
from groupcoord.protocol.errors import ErrorCode

from test_member_harness import GROUP, TP, Sim, SimMember, all_tps

CGH = 68
_E = ErrorCode

class RecSim(Sim):
    """The harness, keeping every request's body: (now, member name, api key, body)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.bodies: list = []

    def _execute(self, sm, a):
        if isinstance(a, SendRequest):
            self.bodies.append((self.now, sm.name, a.api_key, a.body))
        super()._execute(sm, a)

    def heartbeats(self, name: str) -> list:
        return [(t, b) for t, n, k, b in self.bodies if n == name and k == CGH]

    def add_consumer(self, name: str, topics=("t",), config: dict | None = None, listener=None) -> SimMember:
        cfg = {"group.id": GROUP, "client.id": name, "group.protocol": "consumer", "enable.auto.commit": False,
               "auto.offset.reset": "earliest", "max.poll.interval.ms": 60000}
        cfg.update(config or {})
        m = Member(cfg, topics=topics, now=self.now, rng=random.Random(name))
        sm = SimMember(name, m, listener=listener)
        self.members[name] = sm
        return sm

    def cgroup(self):
        return self.service.group_coordinator.consumer_group(GROUP)

    def settled(self, names=None) -> bool:
        """The consumer group at one epoch: every live member reconciled to it, acknowledged
        (stable on both sides), the members' assignments a partition of the subscribed partitions."""
        g = self.cgroup()
        live = self.live(names)
        if g is None or len(g.members) != len(live):
            return False
        owned = []
        for sm in live:
            m = sm.member
            cm = g.members.get(m.member_id)
            if (cm is None or not m.stable or m.membership.cstate is not CState.STABLE
                    or not cm.reconciled_to(g.group_epoch) or m.generation_id != g.group_epoch):
                return False
            owned += list(m.assignment)
        topics = {t for sm in live for t in sm.member.subscription}
        expected = {TP(t, p) for t in topics for p in range(self.service.partition_count(t) or 0)}
        return len(owned) == len(set(owned)) and set(owned) == expected

    def run_until_settled(self, names=None, max_ms: int = 120_000) -> None:
        assert self.run(lambda: self.settled(names), max_ms=max_ms), self.describe()


class Exclusive:
    """After every callback: no partition owned by two members."""

    def __init__(self, sim):
        self.sim, self.violations = sim, []

    def __call__(self, sm, action):
        if action.kind == "assigned":
            others = set().union(*(o.assignment for o in self.sim.live() if o is not sm))
            if others & set(action.partitions):
                self.violations.append((self.sim.now, sm.name, sorted(others & set(action.partitions))))


def interval(sim) -> int:
    return sim.service.group_coordinator.group_configs.default("consumer.heartbeat.interval.ms")


# ---------------------------------------------------------------------------------- joining
def test_member_joins_with_epoch_zero_and_a_full_heartbeat_then_sends_only_changes():
    sim = RecSim({"t": 4})
    a = sim.add_consumer("a", config={"client.rack": "r1", "group.remote.assignor": "range"})
    sim.run_until_settled()
    m = a.member
    assert len(m.member_id) == 22 and m.member_id in sim.cgroup().members      # the client's own Uuid
    assert a.assignment == all_tps(sim, "t") and a.callbacks("assigned") == [sorted(all_tps(sim, "t"))]
    hbs = sim.heartbeats("a")
    t0, join = hbs[0]
    assert join["member_epoch"] == 0 and join["member_id"] == m.member_id
    assert join["subscribed_topic_names"] == ["t"] and join["topic_partitions"] == []
    assert join["rebalance_timeout_ms"] == 60000 and join["rack_id"] == "r1" and join["server_assignor"] == "range"
    # the acknowledgement goes out at once, with the owned partitions and nothing else of the join
    t1, ack = hbs[1]
    assert t1 - t0 <= 5 and ack["member_epoch"] == m.generation_id == 2     # (a new group starts at 1: Kafka 4.3)
    assert [(p["partitions"]) for p in ack["topic_partitions"]] == [[0, 1, 2, 3]]
    assert {"subscribed_topic_names", "rebalance_timeout_ms", "rack_id", "server_assignor"}.isdisjoint(ack)
    # then plain heartbeats at the coordinator's interval
    sim.advance(3 * interval(sim) + 10)
    later = sim.heartbeats("a")[2:]
    assert len(later) == 3
    assert all(set(b) == {"group_id", "member_id", "member_epoch", "instance_id"} for _, b in later)
    assert [t for t, _ in later] == [t1 + interval(sim) * k for k in (1, 2, 3)]
    assert sim.cgroup().members[m.member_id].server_assignor == "range"



def test_a_join_answered_without_an_assignment_is_sent_again_in_full_at_once():
    """A coordinator may answer a join (epoch 0) with epoch 0 and no assignment (librdkafka's mock
    cluster does so for a member joining a running group): the member stays JOINING, as Kafka's
    (AbstractMembershipManager.onHeartbeatSuccess reaches processAssignmentReceived only with an
    assignment), and its next heartbeat is a full join again, not an epoch-0 heartbeat of the
    changed fields only (which a coordinator refuses as INVALID_REQUEST). It goes out as soon as
    the answer is in, not at the heartbeat interval: a JOINING member heartbeats "now"
    (AbstractMembershipManager.shouldHeartbeatNow; AbstractHeartbeatRequestManager.poll sends
    then whatever the interval timer and the backoff say)."""
    sim = RecSim({"t": 4})
    handle = sim.service.handle
    held = []

    def answer_the_first_join_without_an_assignment(ctx, body, respond):
        if ctx.api_key == CGH and not held:
            held.append(body)
            respond({"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": body["member_id"],
                     "member_epoch": 0, "heartbeat_interval_ms": interval(sim), "assignment": None})
            return
        handle(ctx, body, respond)
    sim.service.handle = answer_the_first_join_without_an_assignment
    a = sim.add_consumer("a")
    assert sim.run(lambda: held, max_ms=1000)
    sent_at = sim.now
    sim.run(lambda: sim.now > sent_at, max_ms=1000)      # the answer is in (latency 1)
    assert a.member.membership.cstate is CState.JOINING and not a.member.stable
    sim.run_until_settled()
    hbs = sim.heartbeats("a")
    first, again = hbs[0][1], hbs[1][1]
    assert first["member_epoch"] == again["member_epoch"] == 0
    assert again == first                                 # the full join, every field again
    assert hbs[1][0] - hbs[0][0] == sim.latency           # as soon as the answer came (not the interval)
    assert a.assignment == all_tps(sim, "t") and not a.errors


@pytest.mark.parametrize("error", [_E.COORDINATOR_LOAD_IN_PROGRESS, _E.NOT_COORDINATOR])
def test_a_join_failing_with_a_retriable_error_is_sent_again_at_once(error):
    """A join answered with a retriable error leaves the member JOINING; Kafka's next heartbeat goes
    out at once, not after retry.backoff.ms nor the heartbeat interval (onErrorResponse marks a failed
    attempt, but AbstractHeartbeatRequestManager.poll sends when shouldHeartbeatNow, JOINING, whatever
    the backoff); after NOT_COORDINATOR, as soon as the coordinator is found again. Every field again."""
    sim = RecSim({"t": 4})
    a = sim.add_consumer("a", config={"retry.backoff.ms": 500})
    sim.fail_next(CGH, error, member="a")
    sim.run_until_settled()
    hbs = sim.heartbeats("a")
    first, again = hbs[0], hbs[1]
    assert first[1] == again[1] and first[1]["member_epoch"] == 0 and "subscribed_topic_names" in again[1]
    assert again[0] - first[0] < 10                        # not 500 ms of backoff, nor 5 s of interval
    assert a.assignment == all_tps(sim, "t") and not a.errors


def test_classic_only_settings_and_client_assignors_are_refused():
    with pytest.raises(ConfigError, match="heartbeat.interval.ms cannot be set when group.protocol=CONSUMER"):
        Member({"group.id": GROUP, "group.protocol": "consumer", "heartbeat.interval.ms": 100})
    from groupcoord.client.assignors import RangeAssignor
    with pytest.raises(ConfigError):
        Member({"group.id": GROUP, "group.protocol": "consumer"}, [RangeAssignor()])


# ---------------------------------------------------------------------------------- reconciliation
def test_second_member_revoke_then_assign_with_only_the_changes():
    sim = RecSim({"t": 6})
    watch = Exclusive(sim)
    a = sim.add_consumer("a", listener=watch)
    sim.run_until_settled()
    epoch = sim.cgroup().group_epoch
    b = sim.add_consumer("b", listener=watch)
    sim.run_until_settled()
    assert len(a.assignment) == len(b.assignment) == 3 and not a.assignment & b.assignment
    # a: only what it gives up is revoked, and its assignment callback says nothing was added
    assert a.kinds() == ["assigned", "revoked", "assigned"]
    assert set(a.callbacks("revoked")[0]) == b.assignment and a.callbacks("assigned")[1] == []
    # b: nothing until a released them, then exactly its share
    assert b.callbacks("assigned") == [[], sorted(b.assignment)]
    revoked_at = next(t for t, k, _ in a.events if k == "revoked")
    got_at = [t for t, k, p in b.events if k == "assigned" and p][0]
    assert got_at > revoked_at
    assert watch.violations == []
    assert sim.cgroup().group_epoch == epoch + 1 == a.member.generation_id == b.member.generation_id
    # a acknowledged with its 3 partitions right after revoking
    ack = [b_ for t, b_ in sim.heartbeats("a") if t >= revoked_at and "topic_partitions" in b_][0]
    assert sorted(ack["topic_partitions"][0]["partitions"]) == sorted(tp.partition for tp in a.assignment)


def test_auto_commit_of_the_consumed_offsets_before_revoking():
    sim = RecSim({"t": 2})
    a = sim.add_consumer("a", config={"enable.auto.commit": True, "auto.commit.interval.ms": 600000})
    sim.run_until_settled()
    sim.run(lambda: len(a.member.positions) == 2)
    for tp in all_tps(sim, "t"):
        a.member.seek(tp, 40 + tp.partition)
    order = []
    a.listener = lambda sm, action: order.append(("callback", action.kind, sim.now))
    b = sim.add_consumer("b", config={"enable.auto.commit": True, "auto.commit.interval.ms": 600000})
    sim.run_until_settled()
    rebalance = [c for c in a.commits if c.kind == "rebalance"]
    assert len(rebalance) == 1 and rebalance[0].error is None
    assert {tp: om.offset for tp, om in rebalance[0].offsets.items()} == {TP("t", 0): 40, TP("t", 1): 41}
    commit_at = [t for t, n, k, body in sim.bodies if n == "a" and k == OFFSET_COMMIT][0]
    revoke_at = [t for kind_, k, t in order if k == "revoked"][0]
    assert commit_at < revoke_at
    # the commit carried the member id and its epoch (OffsetCommit v9)
    body = [body for t, n, k, body in sim.bodies if n == "a" and k == OFFSET_COMMIT][0]
    assert body["member_id"] == a.member.member_id and body["generation_id_or_member_epoch"] == 2
    # b starts where a stopped
    (tp,) = b.assignment
    sim.run(lambda: tp in b.member.positions)
    assert b.member.positions[tp] == 40 + tp.partition


# ---------------------------------------------------------------------------------- leaving
def test_close_leaves_with_epoch_minus_one_and_the_other_member_takes_over_at_once():
    sim = RecSim({"t": 4})
    a = sim.add_consumer("a")
    b = sim.add_consumer("b")
    sim.run_until_settled()
    owned = a.assignment
    a.member.close(sim.now)
    start = sim.now
    sim.run(lambda: a.closed)
    leave = sim.heartbeats("a")[-1][1]
    assert leave["member_epoch"] == -1 and leave["member_id"] == a.member.member_id
    assert a.kinds()[-1] == "revoked" and set(a.callbacks("revoked")[-1]) == owned
    sim.run_until_settled(["b"])
    assert b.assignment == all_tps(sim, "t")
    assert sim.now - start < 3 * interval(sim)          # long before any session timeout (45 s)
    assert a.member.member_id not in sim.cgroup().members


def test_static_member_leaves_with_minus_two_and_its_successor_gets_its_partitions_back():
    sim = RecSim({"t": 4})
    a = sim.add_consumer("a", config={"group.instance.id": "i-a"})
    b = sim.add_consumer("b")
    sim.run_until_settled()
    owned, old_id = a.assignment, a.member.member_id
    a.member.close(sim.now)
    sim.run(lambda: a.closed)
    leave = sim.heartbeats("a")[-1][1]
    assert leave["member_epoch"] == -2 and leave["instance_id"] == "i-a"
    # the coordinator keeps the partitions for the instance: b does not get them
    sim.advance(4 * interval(sim))
    assert b.assignment == all_tps(sim, "t") - owned
    assert sim.cgroup().members[old_id].member_epoch == -2
    a2 = sim.add_consumer("a2", config={"group.instance.id": "i-a"})
    sim.run_until_settled()
    assert a2.member.member_id != old_id and a2.assignment == owned
    assert a2.callbacks("assigned") == [sorted(owned)]
    assert old_id not in sim.cgroup().members


# ---------------------------------------------------------------------------------- fencing
@pytest.mark.parametrize("error", [_E.FENCED_MEMBER_EPOCH, _E.UNKNOWN_MEMBER_ID])
def test_fenced_member_loses_its_partitions_and_rejoins_with_epoch_zero_and_the_same_id(error):
    sim = RecSim({"t": 4})
    a = sim.add_consumer("a")
    b = sim.add_consumer("b")
    sim.run_until_settled()
    owned, member_id = a.assignment, a.member.member_id
    sim.fail_next(CGH, error, member="a")
    mark, events = len(sim.heartbeats("a")), len(a.events)
    sim.run(lambda: "lost" in a.kinds())
    assert a.callbacks("lost") == [sorted(owned)] and a.kinds()[events:] == ["lost"]
    sim.run_until_settled()
    rejoin = sim.heartbeats("a")[mark + 1][1]
    assert rejoin["member_epoch"] == 0 and rejoin["member_id"] == member_id
    assert rejoin["topic_partitions"] == [] and rejoin["subscribed_topic_names"] == ["t"]
    assert a.member.member_id == member_id and len(a.assignment) == 2
    assert a.kinds()[events:] == ["lost", "assigned"] and not a.assignment & b.assignment


# ---------------------------------------------------------------------------------- commits
def test_stale_member_epoch_commit_is_retried_after_the_next_heartbeat():
    sim = RecSim({"t": 2})
    a = sim.add_consumer("a")
    sim.run_until_settled()
    tp = TP("t", 0)
    sim.fail_next(OFFSET_COMMIT, _E.STALE_MEMBER_EPOCH, member="a")
    h = a.member.commit({tp: 7}, sim.now)
    sim.run(lambda: any(c.handle == h for c in a.commits), max_ms=30_000)
    done = [c for c in a.commits if c.handle == h][0]
    assert done.error is None and a.member.committed_offsets[tp] == 7
    commits = [t for t, n, k, _ in sim.bodies if n == "a" and k == OFFSET_COMMIT]
    assert len(commits) == 2
    hb_between = [t for t, _ in sim.heartbeats("a") if commits[0] < t <= commits[1]]
    assert hb_between, "the retry waits for a heartbeat"
    # an async commit does not retry: it fails with the error
    sim.fail_next(OFFSET_COMMIT, _E.STALE_MEMBER_EPOCH, member="a")
    h2 = a.member.commit({tp: 8}, sim.now, sync=False)
    sim.run(lambda: any(c.handle == h2 for c in a.commits), max_ms=30_000)
    err = [c for c in a.commits if c.handle == h2][0].error
    assert err is not None and err.code == _E.STALE_MEMBER_EPOCH


# ---------------------------------------------------------------------------------- poll timeout, subscription
def test_poll_timeout_loses_the_partitions_leaves_and_rejoins_at_the_next_poll():
    sim = RecSim({"t": 4})
    a = sim.add_consumer("a", config={"max.poll.interval.ms": 20000})
    b = sim.add_consumer("b")
    sim.run_until_settled()
    owned = a.assignment
    sim.freeze("a")
    frozen_at = sim.now
    sim.run(lambda: "lost" in a.kinds())
    assert sim.now - frozen_at <= 20000 and a.callbacks("lost") == [sorted(owned)]
    assert sim.heartbeats("a")[-1][1]["member_epoch"] == -1
    sim.run_until_settled(["b"])
    assert b.assignment == all_tps(sim, "t")
    sim.thaw("a")
    sim.run_until_settled()
    assert len(a.assignment) == len(b.assignment) == 2
    rejoin = [body for _, body in sim.heartbeats("a") if body["member_epoch"] == 0]
    assert len(rejoin) == 2 and rejoin[1]["member_id"] == a.member.member_id


def test_subscription_change_goes_out_at_once_and_moves_the_assignment():
    sim = RecSim({"t": 2, "u": 2})
    a = sim.add_consumer("a")
    sim.run_until_settled()
    sim.advance(1000)                          # no heartbeat in flight (one at a time)
    a.member.subscribe(["t", "u"], sim.now)
    at = sim.now
    sim.run_until_settled()
    sent = [(t, body) for t, body in sim.heartbeats("a") if body.get("subscribed_topic_names") == ["t", "u"]]
    assert sent and sent[0][0] == at
    assert a.assignment == all_tps(sim, "t", "u")
    assert a.callbacks("assigned")[-1] == sorted(all_tps(sim, "u"))
