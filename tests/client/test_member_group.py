"""Member core against the coordinator core in virtual time: forming groups and rebalancing.

Eager and cooperative groups (with the harness's tiny assignors and with the real range,
roundrobin, sticky and cooperative-sticky assignors), leader loss, static members.
"""
from __future__ import annotations

import pytest

from groupcoord.client.assignors import (
    CooperativeStickyAssignor, RangeAssignor, RoundRobinAssignor, StickyAssignor,
)
from groupcoord.client.assignors.base import RebalanceProtocol
from groupcoord.client.member import LEAVE_GROUP, FatalConsumerError
from groupcoord.protocol.errors import ErrorCode

from test_member_harness import TP, SimpleCooperative, Sim, all_tps


def balanced(sim, names=None) -> bool:
    sizes = [len(sm.assignment) for sm in sim.live(names)]
    return max(sizes) - min(sizes) <= 1


class ExclusivityWatch:
    """Checks after every callback that no partition is owned by two members at once."""

    def __init__(self, sim):
        self.sim = sim
        self.violations = []

    def __call__(self, sm, action):
        if action.kind == "assigned":
            others = set()
            for o in self.sim.live():
                if o is not sm:
                    others |= o.assignment
            clash = others & set(action.partitions)
            if clash:
                self.violations.append((self.sim.now, sm.name, sorted(clash)))


# ---------------------------------------------------------------------------------- eager
def test_eager_group_of_three_forms_and_rebalances_with_full_revocation():
    sim = Sim({"t": 6, "u": 3})
    names = ["a", "b", "c"]
    for n in names:
        sim.add(n, topics=("t", "u"))
    sim.run_until_stable()
    assert balanced(sim)
    g = sim.group()
    gen = g.generation_id
    assert g.protocol_name == "simple-range"
    leader = [sm for sm in sim.live() if sm.member.is_leader]
    assert len(leader) == 1 and leader[0].member.member_id == g.leader_id
    for sm in sim.live():
        assert sm.member.protocol == RebalanceProtocol.EAGER
        assert sm.kinds()[-1] == "assigned"
    # a fourth member: every member revokes everything, then gets its new share
    before = {n: sim[n].assignment for n in names}
    marks = {n: len(sim[n].events) for n in names}
    sim.add("d", topics=("t", "u"))
    sim.run_until_stable()
    assert sim.group().generation_id == gen + 1
    for topic in ("t", "u"):                      # ranges per topic: sizes differ by at most one
        sizes = [len([tp for tp in sm.assignment if tp.topic == topic]) for sm in sim.live()]
        assert max(sizes) - min(sizes) <= 1
    for n in names:
        new = sim[n].events[marks[n]:]
        assert [k for _, k, _ in new] == ["revoked", "assigned"]
        assert set(new[0][2]) == before[n]             # eager: revoke all that was owned
    # every revocation of the round happened before any assignment of it
    revokes = [t for n in names for t, k, _ in sim[n].events[marks[n]:] if k == "revoked"]
    assigns = [t for sm in sim.live() for t, k, _ in sm.events if k == "assigned" and t >= min(revokes)]
    assert max(revokes) <= min(assigns)


def test_protocol_choice_follows_the_assignors():
    sim = Sim()
    assert sim.add("a", assignors=[RangeAssignor(), CooperativeStickyAssignor()]).member.protocol \
        == RebalanceProtocol.EAGER
    assert sim.add("b", assignors=[CooperativeStickyAssignor()]).member.protocol == RebalanceProtocol.COOPERATIVE
    assert sim.add("c", assignors=[SimpleCooperative(), CooperativeStickyAssignor()]).member.protocol \
        == RebalanceProtocol.COOPERATIVE


def test_leader_runs_the_protocol_the_coordinator_selected():
    # everyone lists both; the vote goes to the members' first choice
    sim = Sim({"t": 4})
    for n in "ab":
        sim.add(n, assignors=[RoundRobinAssignor(), RangeAssignor()])
    sim.run_until_stable()
    assert sim.group().protocol_name == "roundrobin"
    assert sim["a"].assignment in ({TP("t", 0), TP("t", 2)}, {TP("t", 1), TP("t", 3)})


# ---------------------------------------------------------------------------------- cooperative
def test_cooperative_group_rebalances_incrementally():
    sim = Sim({"t": 6})
    watch = ExclusivityWatch(sim)
    a = sim.add("a", assignors=[SimpleCooperative()], listener=watch)
    sim.run_until_stable()
    assert a.assignment == all_tps(sim, "t")
    b = sim.add("b", assignors=[SimpleCooperative()], listener=watch)
    sim.run_until_stable()
    assert len(a.assignment) == len(b.assignment) == 3
    # a kept its half without any revocation of it and gave away exactly the other half
    revoked = a.callbacks("revoked")
    assert len(revoked) == 1 and set(revoked[0]) == b.assignment
    assert a.callbacks("assigned")[1:] == [[]] * (len(a.callbacks("assigned")) - 1)
    # b got its partitions only in the second round, after a revoked them
    assert [p for p in b.callbacks("assigned") if p] == [sorted(b.assignment)]
    assert sim.group().generation_id == 3          # a alone, then two rounds for b
    sim.add("c", assignors=[SimpleCooperative()], listener=watch)
    sim.run_until_stable()
    assert {len(sm.assignment) for sm in sim.live()} == {2}
    assert watch.violations == []


def test_cooperative_member_leaving_gives_its_partitions_without_revoking_others():
    sim = Sim({"t": 6})
    for n in "abc":
        sim.add(n, assignors=[SimpleCooperative()])
    sim.run_until_stable()
    marks = {n: len(sim[n].events) for n in "ab"}
    sim["c"].member.close(sim.now)
    sim.run_until_stable(["a", "b"])
    assert sim["c"].closed and sim["c"].kinds()[-1] == "revoked"
    for n in "ab":
        assert "revoked" not in [k for _, k, _ in sim[n].events[marks[n]:]]
        assert len(sim[n].assignment) == 3


@pytest.mark.parametrize("assignor", [RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor])
def test_real_assignors_form_rebalance_and_balance(assignor):
    sim = Sim({"t": 7, "u": 5})
    watch = ExclusivityWatch(sim)
    for n in "abc":
        sim.add(n, topics=("t", "u"), assignors=[assignor()], listener=watch)
    sim.run_until_stable()
    assert sim.group().protocol_name == assignor.name
    totals = sorted(len(sm.assignment) for sm in sim.live())
    assert sum(totals) == 12
    if assignor is not RangeAssignor:      # range balances per topic, not overall
        assert totals[-1] - totals[0] <= 1
    # add one, then drop one
    sim.add("d", topics=("t", "u"), assignors=[assignor()], listener=watch)
    sim.run_until_stable()
    sim["a"].member.close(sim.now)
    sim.run_until_stable(["b", "c", "d"])
    assert sum(len(sm.assignment) for sm in sim.live()) == 12
    if assignor is CooperativeStickyAssignor:
        assert watch.violations == []
        # members that stayed never had a partition revoked that they still hold
        for n in "bcd":
            for p in sim[n].callbacks("revoked"):
                assert not set(p) & sim[n].assignment


def test_sticky_assignors_keep_partitions_across_a_rebalance():
    for assignor in (StickyAssignor, CooperativeStickyAssignor):
        sim = Sim({"t": 6})
        for n in "abc":
            sim.add(n, assignors=[assignor()])
        sim.run_until_stable()
        before = {n: sim[n].assignment for n in "ab"}
        sim["c"].member.close(sim.now)
        sim.run_until_stable(["a", "b"])
        for n in "ab":
            assert before[n] <= sim[n].assignment, assignor.name


# ---------------------------------------------------------------------------------- leader loss
def test_leader_leaves_and_another_member_becomes_leader_and_assigns():
    sim = Sim({"t": 6})
    for n in "abc":
        sim.add(n)
    sim.run_until_stable()
    leader = next(sm for sm in sim.live() if sm.member.is_leader)
    leaves_before = sum(1 for r in sim.requests if r[2] == LEAVE_GROUP)
    leader.member.close(sim.now)
    rest = [n for n in "abc" if n != leader.name]
    sim.run_until_stable(rest)
    assert sum(1 for r in sim.requests if r[2] == LEAVE_GROUP) == leaves_before + 1
    new_leader = [sim[n] for n in rest if sim[n].member.is_leader]
    assert len(new_leader) == 1 and sim.group().leader_id == new_leader[0].member.member_id
    assert {len(sim[n].assignment) for n in rest} == {3}


def test_leader_crash_is_noticed_by_session_expiry_and_the_group_reforms():
    sim = Sim({"t": 4})
    for n in "abc":
        sim.add(n, config={"session.timeout.ms": 3000})
    sim.run_until_stable()
    leader = next(sm for sm in sim.live() if sm.member.is_leader)
    t0 = sim.now
    sim.crash(leader.name)
    rest = [n for n in "abc" if n != leader.name]
    sim.run_until_stable(rest)
    assert sim.now - t0 >= 3000                     # the coordinator waited for the session
    assert any(sim[n].member.is_leader for n in rest)
    assert sim[rest[0]].assignment | sim[rest[1]].assignment == all_tps(sim, "t")


# ---------------------------------------------------------------------------------- static members
def test_static_member_restart_within_the_session_keeps_its_assignment_without_rebalance():
    sim = Sim({"t": 6})
    for n in "abc":
        sim.add(n, config={"group.instance.id": f"inst-{n}", "session.timeout.ms": 5000})
    sim.run_until_stable()
    gen = sim.group().generation_id
    old = sim["b"].assignment
    leaves = sum(1 for r in sim.requests if r[2] == LEAVE_GROUP)
    sim["b"].member.close(sim.now)                  # static: no LeaveGroup
    sim.run(lambda: sim["b"].closed)
    assert sum(1 for r in sim.requests if r[2] == LEAVE_GROUP) == leaves
    assert len(sim.group().members) == 3
    sim.members.pop("b")
    b2 = sim.add("b2", config={"group.instance.id": "inst-b", "session.timeout.ms": 5000})
    sim.run_until_stable()
    assert sim.group().generation_id == gen         # no rebalance
    assert b2.assignment == old


def test_static_leader_restart_gets_skip_assignment_and_its_old_partitions():
    sim = Sim({"t": 4})
    for n in "ab":
        sim.add(n, config={"group.instance.id": f"inst-{n}"})
    sim.run_until_stable()
    leader = next(sm for sm in sim.live() if sm.member.is_leader)
    gen, old = sim.group().generation_id, leader.assignment
    leader.member.close(sim.now)
    sim.run(lambda: leader.closed)
    sim.members.pop(leader.name)
    new = sim.add("new", config={"group.instance.id": leader.member.group_instance_id})
    sim.run_until_stable()
    assert sim.group().generation_id == gen and new.assignment == old
    assert new.member.is_leader                     # KIP-814: told it leads, without assigning


def test_a_second_member_with_the_same_instance_id_fences_the_first():
    sim = Sim({"t": 2})
    a = sim.add("a", config={"group.instance.id": "same"})
    sim.run_until_stable()
    sim.add("a2", config={"group.instance.id": "same"})
    sim.run(lambda: a.errors, max_ms=30000)
    assert a.errors and a.errors[0].fatal
    err = a.errors[0].error
    assert isinstance(err, FatalConsumerError) and err.code == ErrorCode.FENCED_INSTANCE_ID
    assert a.member.fatal_error is err
    sim.members.pop("a")
    sim.run_until_stable()
    assert sim["a2"].assignment == all_tps(sim, "t")


def test_static_member_close_keeps_it_in_the_group_until_its_session_expires():
    sim = Sim({"t": 4})
    sim.add("a", config={"group.instance.id": "ia", "session.timeout.ms": 4000})
    sim.add("b")
    sim.run_until_stable()
    sim["a"].member.close(sim.now)
    sim.run(lambda: sim["a"].closed)
    t0 = sim.now
    sim.run(lambda: len(sim.group().members) == 1, max_ms=10000)
    assert sim.now - t0 >= 3000
    sim.run_until_stable(["b"])
    assert sim["b"].assignment == all_tps(sim, "t")


def test_payloads_read_are_kept_by_their_bytes_and_the_store_stays_bounded(monkeypatch):
    # the leader reads every member's subscription at each rebalance, most of them the same bytes:
    # each distinct payload is decoded once, a malformed one every time (never kept), one in a
    # bytearray every time (not kept: only bytes are), and the store is emptied when full
    from groupcoord.client.member import membership
    from groupcoord.protocol.consumer import decode_subscription, encode_subscription
    from groupcoord.protocol.errors import DecodeError
    decoded = []

    def read(store, data):
        def decode():
            decoded.append(data)
            return decode_subscription(data)
        return membership._once(store, data, decode)

    def payload(topic: str) -> bytes:
        return encode_subscription({"topics": [topic], "user_data": None, "owned_partitions": [], "generation_id": 4,
                                    "rack_id": None})
    store: dict = {}
    monkeypatch.setattr(membership, "_KEPT_MAX", 3)
    one = payload("t")
    assert read(store, one)["topics"] == ["t"]
    assert read(store, bytes(bytearray(one)))["generation_id"] == 4     # equal bytes: kept
    assert decoded == [one]
    for _ in range(2):
        with pytest.raises(DecodeError):
            read(store, b"\x00")
        assert read(store, bytearray(one))["topics"] == ["t"]
    assert len(decoded) == 5 and list(store) == [one]
    others = [payload(f"t{i}") for i in range(3)]
    for data in others:
        read(store, data)
    assert list(store) == [others[2]]          # full at the third: emptied, then the new one kept


def test_the_payloads_written_are_those_of_the_members_state(monkeypatch):
    # JoinGroup's subscriptions and the leader's assignments are kept once written, by what they
    # hold: each subscription sent is the member's state at that moment (topics, the assignor's
    # user data, owned partitions, generation), each assignment kept is the encoding of its key,
    # through rebalances where the cooperative-sticky members' partitions move
    from groupcoord.client.member import membership
    from groupcoord.protocol.consumer import encode_assignment, encode_subscription, group_partitions
    written = []
    monkeypatch.setattr(membership, "_SUBSCRIPTION_BYTES", {})
    monkeypatch.setattr(membership, "_ASSIGNMENT_BYTES", {})
    assignments = []

    def once(store, key, make, original=membership._once):
        value = original(store, key, make)
        if store is membership._ASSIGNMENT_BYTES:
            assignments.append((key, value))
        return value
    monkeypatch.setattr(membership, "_once", once)

    def subscription_bytes(self, assignor, original=membership.Membership.subscription_bytes):
        data = original(self, assignor)
        member = self.member
        topics = sorted(member.subscription)
        assert data == encode_subscription({
            "topics": topics, "user_data": assignor.subscription_user_data(set(topics)),
            "owned_partitions": group_partitions(member.assignment),
            "generation_id": self.generation.generation_id, "rack_id": None}, 3)
        written.append(data)
        return data
    monkeypatch.setattr(membership.Membership, "subscription_bytes", subscription_bytes)
    sim = Sim({"t": 4})
    for n in "abcdefghij":
        sim.add(n, assignors=[CooperativeStickyAssignor()])
        sim.run_until_stable()
    sim["a"].member.close(sim.now)
    sim.run_until_stable(list("bcdefghij"))
    # (83 written, 49 of them distinct: the same generation's members without partitions)
    assert len(written) - len(set(written)) > 20
    assert len(membership._SUBSCRIPTION_BYTES) == len(set(written))
    for (partitions, user_data, version), data in assignments:
        assert data == encode_assignment({"assigned_partitions": group_partitions(partitions),
                                          "user_data": user_data}, version)
    assert len(assignments) > 2 * len(membership._ASSIGNMENT_BYTES) > 10
