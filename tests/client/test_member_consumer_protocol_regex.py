"""The member with group.protocol=consumer subscribed to a regular expression (Kafka's
``subscribe(SubscriptionPattern)``), against our coordinator, in virtual time; and its partial
reconciliation of a target naming topic ids its metadata does not know yet.

Kafka 4's client is the reference: ConsumerHeartbeatRequestManager.HeartbeatState sends
SubscribedTopicRegex when joining with one or when it changed ("" when dropped) and
SubscribedTopicNames (empty with a pattern: SubscriptionState.subscription() holds no name then);
ConsumerMetadata asks Metadata for the assigned topic ids (forTopicIds) to learn their names;
AbstractMembershipManager.maybeReconcile reconciles the resolvable part of a target
(findResolvableAssignmentAndTriggerMetadataUpdate) and the rest once metadata names it.
"""
from __future__ import annotations

import pytest

from groupcoord.client.member import METADATA, Member, UnsupportedOperationError
from groupcoord.client.member.consumer_protocol import CState

from test_member_consumer_protocol import RecSim, interval
from test_member_harness import GROUP, all_tps

REFRESH_MS = 10_000                    # the coordinator's minimum between two resolutions of a group's regexes


def metadata_requests(sim, name):
    return [(t, b) for t, n, k, b in sim.bodies if n == name and k == METADATA]


def at_rest(sim, sm, expected) -> bool:
    """The member reconciled and acknowledged ``expected`` at the group's epoch."""
    g = sim.cgroup()
    m = sm.member
    cm = g.members.get(m.member_id) if g is not None else None
    return (cm is not None and m.stable and m.membership.cstate is CState.STABLE and m.generation_id == g.group_epoch
            and cm.reconciled_to(g.group_epoch) and sm.assignment == expected)


def run_to_rest(sim, sm, expected, max_ms=60_000):
    assert sim.run(lambda: at_rest(sim, sm, expected), max_ms=max_ms), (sim.describe(), sorted(sm.assignment))


# ---------------------------------------------------------------------------------- subscribing
def test_a_pattern_member_gets_the_matching_topics_by_id_and_learns_their_names_by_id():
    sim = RecSim({"t0": 2, "t1": 1, "u0": 2})
    a = sim.add_consumer("a", topics=())
    a.member.subscribe_pattern("t.*", sim.now)
    run_to_rest(sim, a, all_tps(sim, "t0", "t1"))
    assert not a.assignment & all_tps(sim, "u0")
    join = sim.heartbeats("a")[0][1]
    assert join["member_epoch"] == 0 and join["subscribed_topic_regex"] == "t.*"
    assert join["subscribed_topic_names"] == []              # SubscriptionState.subscription(): no name
    assert sim.cgroup().members[a.member.member_id].subscribed_topic_regex == "t.*"
    # the later heartbeats carry neither field again
    assert all("subscribed_topic_regex" not in b and "subscribed_topic_names" not in b
               for _, b in sim.heartbeats("a")[1:])
    # the names came from Metadata asked by topic id, for the assigned ids only (never u0's, never by name)
    ids = {sim.service.cluster.topics[t].topic_id for t in ("t0", "t1")}
    asked = [e for _, b in metadata_requests(sim, "a") for e in (b["topics"] or [])]
    assert asked and all(e["name"] is None for e in asked) and {e["topic_id"] for e in asked} == ids
    assert a.callbacks("assigned")[-1] == sorted(all_tps(sim, "t0", "t1"))
    assert a.member.subscription == frozenset() and a.member.subscription_pattern == "t.*"


def test_a_topic_created_later_that_matches_is_assigned_after_the_next_resolution():
    sim = RecSim({"t0": 2, "u0": 1})
    a = sim.add_consumer("a", topics=())
    a.member.subscribe_pattern("t.*", sim.now)
    run_to_rest(sim, a, all_tps(sim, "t0"))
    resolved_at = sim.cgroup().resolved_regexes["t.*"].timestamp_ms
    sim.service.create_topic("t7", 3)
    sim.service.create_topic("u7", 3)
    created = sim.now
    run_to_rest(sim, a, all_tps(sim, "t0", "t7"))
    # resolved again at the first heartbeat past Kafka's 10 s between two resolutions
    assert sim.now <= max(created, resolved_at + REFRESH_MS) + 2 * interval(sim)
    assert sim.cgroup().resolved_regexes["t.*"].topics == frozenset({"t0", "t7"})
    assert a.callbacks("assigned")[-1] == sorted(all_tps(sim, "t7"))       # only what was added
    assert "revoked" not in a.kinds()


def test_two_members_share_a_pattern_and_a_named_member_joins_them():
    sim = RecSim({"t0": 4, "t1": 2, "u0": 2})
    a = sim.add_consumer("a", topics=())
    b = sim.add_consumer("b", topics=())
    for sm in (a, b):
        sm.member.subscribe_pattern("t.*", sim.now)
    assert sim.run(lambda: len(a.assignment) == len(b.assignment) == 3 and at_rest(sim, a, a.assignment)
                   and at_rest(sim, b, b.assignment), max_ms=60_000), sim.describe()
    assert a.assignment | b.assignment == all_tps(sim, "t0", "t1") and not a.assignment & b.assignment
    c = sim.add_consumer("c", topics=("u0",))
    run_to_rest(sim, c, all_tps(sim, "u0"))
    assert a.assignment | b.assignment == all_tps(sim, "t0", "t1")


# ---------------------------------------------------------------------------------- changing it
def test_changing_the_pattern_then_to_names_and_back_sends_the_right_fields():
    sim = RecSim({"t0": 2, "u0": 2, "v0": 1})
    a = sim.add_consumer("a", topics=())
    a.member.subscribe_pattern("t.*", sim.now)
    run_to_rest(sim, a, all_tps(sim, "t0"))
    member_id = a.member.member_id

    def change(do, expected):
        sim.advance(100)                                      # no heartbeat in flight
        mark, at = len(sim.heartbeats("a")), sim.now
        do()
        run_to_rest(sim, a, expected)
        sent = sim.heartbeats("a")[mark]
        assert sent[0] == at                                  # at once, not at the interval
        return sent[1]

    # a new pattern: the regex alone (the names did not change: still none)
    body = change(lambda: a.member.subscribe_pattern("u.*", sim.now), all_tps(sim, "u0"))
    assert body["subscribed_topic_regex"] == "u.*" and "subscribed_topic_names" not in body
    assert body["member_epoch"] > 0 and a.member.member_id == member_id          # no rejoin
    # to names: the names, and "" for the regex dropped
    body = change(lambda: a.member.subscribe(["v0"], sim.now), all_tps(sim, "v0"))
    assert body["subscribed_topic_names"] == ["v0"] and body["subscribed_topic_regex"] == ""
    cm = sim.cgroup().members[member_id]
    assert cm.subscribed_topic_regex is None and set(cm.subscribed_topic_names) == {"v0"}
    # and back to a pattern: the names emptied, the regex
    body = change(lambda: a.member.subscribe_pattern("t.*", sim.now), all_tps(sim, "t0"))
    assert body["subscribed_topic_names"] == [] and body["subscribed_topic_regex"] == "t.*"
    # the same pattern again changes nothing
    n = len(sim.heartbeats("a"))
    a.member.subscribe_pattern("t.*", sim.now)
    sim.advance(interval(sim) // 2)
    assert len(sim.heartbeats("a")) == n
    assert a.member.member_id == member_id and [k for k in a.kinds() if k == "lost"] == []


def test_an_invalid_pattern_is_fatal_with_kafkas_message():
    sim = RecSim({"t0": 1})
    a = sim.add_consumer("a", topics=())
    a.member.subscribe_pattern("t(", sim.now)
    sim.run(lambda: a.errors, max_ms=10_000)
    (err,) = a.errors
    assert err.fatal and "Invalid RE2J SubscriptionPattern provided in the call to subscribe." in str(err.error)
    assert "missing closing )" in str(err.error)


def test_classic_members_refuse_a_pattern_and_empty_patterns_are_refused():
    m = Member({"group.id": GROUP})
    with pytest.raises(UnsupportedOperationError, match="^Subscribe to RE2/J pattern is not supported when using "
                       "the CLASSIC protocol defined in config group.protocol$"):
        m.subscribe_pattern("t.*", 0)
    assert m.subscription_pattern is None
    c = Member({"group.id": GROUP, "group.protocol": "consumer"})
    with pytest.raises(ValueError, match="cannot be empty"):
        c.subscribe_pattern("", 0)
    with pytest.raises(ValueError, match="cannot be null"):
        c.subscribe_pattern(None, 0)


# ---------------------------------------------------------------------------------- partial reconciliation
class HeldMetadata:
    """The coordinator's Metadata answers to one member held back until release()."""

    def __init__(self, sim, name):
        self.sim, self.name, self.held, self.on = sim, name, [], True
        self.handle = handle = sim.service.handle

        def handler(ctx, body, respond):
            if self.on and ctx.api_key == METADATA and ctx.client_id == name:
                self.held.append((ctx, body, respond))
                return
            handle(ctx, body, respond)
        sim.service.handle = handler

    def release(self):
        self.on = False
        for ctx, body, respond in self.held:
            self.handle(ctx, body, respond)
        self.held = []


def test_the_resolvable_part_of_a_target_is_reconciled_while_metadata_names_the_rest():
    """AbstractMembershipManager.maybeReconcile with findResolvableAssignmentAndTriggerMetadataUpdate:
    a target naming a topic id the metadata does not know yet is reconciled for its other topics at
    once (here: giving up partitions another member waits for), acknowledged, and reconciled again for
    the rest when metadata names it; a resolvable part that is already owned is acknowledged under the
    new target's local epoch, without callbacks."""
    sim = RecSim({"t0": 4, "t1": 1})
    a = sim.add_consumer("a", topics=(), config={"request.timeout.ms": 120_000})
    a.member.subscribe_pattern("t.*", sim.now)
    run_to_rest(sim, a, all_tps(sim, "t0", "t1"))
    events = len(a.events)
    meta = HeldMetadata(sim, "a")
    sim.service.create_topic("t7", 2)
    t7 = sim.service.cluster.topics["t7"].topic_id
    g = sim.cgroup()
    assert sim.run(lambda: t7 in g.members[a.member.member_id].assigned, max_ms=30_000)
    mark = len(sim.heartbeats("a"))
    sim.advance(10)
    # the part it can name is what it owns: acknowledged under the new local epoch, no callback
    m = a.member
    assert m.membership.cstate is CState.RECONCILING and t7 in m.membership.target and meta.held
    assert a.events[events:] == [] and a.assignment == all_tps(sim, "t0", "t1")
    ack = [b for _, b in sim.heartbeats("a")[mark:] if "topic_partitions" in b]
    assert ack and {(tp["topic_id"], tuple(tp["partitions"])) for tp in ack[0]["topic_partitions"]} == {
        (sim.service.cluster.topics["t0"].topic_id, (0, 1, 2, 3)), (sim.service.cluster.topics["t1"].topic_id, (0,))}
    # another member comes for t0: a gives up its share at once, t7 still unknown to it
    b = sim.add_consumer("b", topics=("t0",))
    assert sim.run(lambda: b.assignment and at_rest(sim, b, b.assignment), max_ms=30_000), sim.describe()
    assert b.assignment < all_tps(sim, "t0")
    assert meta.held and not a.assignment & all_tps(sim, "t7")
    assert a.kinds()[events:] == ["revoked", "assigned"] and a.callbacks("assigned")[-1] == []
    assert set(a.callbacks("revoked")[-1]) == b.assignment and a.assignment == all_tps(sim, "t0", "t1") - b.assignment
    assert m.membership.cstate is CState.RECONCILING
    # metadata names t7: the rest is reconciled
    meta.release()
    run_to_rest(sim, a, all_tps(sim, "t0", "t1", "t7") - b.assignment)
    assert a.callbacks("assigned")[-1] == sorted(all_tps(sim, "t7"))
    assert not a.assignment & b.assignment
