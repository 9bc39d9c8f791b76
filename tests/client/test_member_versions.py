"""API version negotiation: the member uses the highest version both sides speak, and each
version's own request layout, against a coordinator that advertises less than it could."""
from __future__ import annotations

from groupcoord.client.member import (
    CLIENT_VERSIONS, FETCH, FIND_COORDINATOR, HEARTBEAT, JOIN_GROUP, LEAVE_GROUP, LIST_OFFSETS, METADATA,
    OFFSET_COMMIT, OFFSET_FETCH, SYNC_GROUP, FatalConsumerError, pick_version,
)
from groupcoord.protocol.errors import ErrorCode

from test_member_harness import TP, Sim


def capped(sim, caps):
    full = sim.service.supported_versions()

    def supported():
        return {k: (lo, min(hi, caps.get(k, hi))) for k, (lo, hi) in full.items()}
    sim.service.supported_versions = supported


def used(sim, member=None) -> dict:
    out: dict[int, set] = {}
    for _, m, k, v in sim.requests:
        if member in (None, m):
            out.setdefault(k, set()).add(v)
    return out


def test_pick_version():
    assert pick_version(JOIN_GROUP, {JOIN_GROUP: (0, 12)}) == CLIENT_VERSIONS[JOIN_GROUP][1]
    assert pick_version(JOIN_GROUP, {JOIN_GROUP: (2, 4)}) == 4
    assert pick_version(OFFSET_COMMIT, {OFFSET_COMMIT: (0, 1)}) is None       # we speak 2+
    assert pick_version(JOIN_GROUP, {}) is None
    assert pick_version(JOIN_GROUP, {JOIN_GROUP: (0, 9)}, {JOIN_GROUP: 5}) == 5


def test_newest_versions_against_our_coordinator():
    sim = Sim({"t": 2})
    a = sim.add("a", fetch=True)
    sim.run_until_stable()
    sim.run(lambda: len(a.member.positions) == 2)
    sim.advance(10)
    a.member.commit({TP("t", 0): 1}, sim.now)
    a.member.close(sim.now)
    sim.run(lambda: a.closed)
    v = used(sim)
    assert v[JOIN_GROUP] == {9} and v[SYNC_GROUP] == {5} and v[FIND_COORDINATOR] == {4}
    assert v[OFFSET_FETCH] == {9} and v[OFFSET_COMMIT] == {9} and v[LEAVE_GROUP] == {5}
    assert v[METADATA] == {12} and v[LIST_OFFSETS] == {7} and v[FETCH] == {12}


def test_old_versions_and_their_layouts_work_end_to_end():
    # JoinGroup 3: no KIP-394 round trip; FindCoordinator 3: one key; OffsetFetch 7: one group;
    # LeaveGroup 2: one member id; SyncGroup/Heartbeat 2: no instance ids
    caps = {JOIN_GROUP: 3, FIND_COORDINATOR: 3, OFFSET_FETCH: 7, LEAVE_GROUP: 2, SYNC_GROUP: 2,
            HEARTBEAT: 2, OFFSET_COMMIT: 6, METADATA: 8, LIST_OFFSETS: 3}
    sim = Sim({"t": 4})
    capped(sim, caps)
    a, b = sim.add("a"), sim.add("b")
    sim.run_until_stable()
    assert len([1 for _, m, k, _ in sim.requests if m == "a" and k == JOIN_GROUP]) == 1   # no MEMBER_ID_REQUIRED
    a.member.commit({TP("t", 0): 5}, sim.now)
    h = a.member.fetch_committed([TP("t", 0), TP("t", 1)], sim.now)
    sim.advance(50)
    assert a.fetched[-1].handle == h and a.fetched[-1].offsets[TP("t", 0)].offset == 5
    b.member.close(sim.now)
    sim.run_until_stable(["a"])
    assert a.assignment == {TP("t", p) for p in range(4)}
    for key, version in used(sim).items():
        assert version == {min(caps.get(key, 99), CLIENT_VERSIONS[key][1])}, key


def test_join_group_v0_uses_the_session_timeout_as_rebalance_timeout():
    sim = Sim({"t": 2})
    capped(sim, {JOIN_GROUP: 0})
    a = sim.add("a", config={"max.poll.interval.ms": 60000})
    sim.run_until_stable()
    m = sim.group().members[a.member.member_id]
    assert m.rebalance_timeout_ms == m.session_timeout_ms == 10000


def test_no_common_version_is_fatal():
    sim = Sim({"t": 2})
    capped(sim, {OFFSET_COMMIT: 1})            # we speak OffsetCommit 2+
    a = sim.add("a")
    sim.run_until_stable()
    a.member.commit({TP("t", 0): 1}, sim.now)
    sim.advance(50)
    assert a.errors and a.errors[0].fatal
    err = a.errors[0].error
    assert isinstance(err, FatalConsumerError) and err.code == ErrorCode.UNSUPPORTED_VERSION
    assert a.commits and a.commits[-1].error is err


def test_static_membership_needs_join_group_v5():
    sim = Sim({"t": 2})
    capped(sim, {JOIN_GROUP: 5, SYNC_GROUP: 3, HEARTBEAT: 3})
    a = sim.add("a", config={"group.instance.id": "ia"})
    sim.run_until_stable()
    assert sim.group().members[a.member.member_id].group_instance_id == "ia"
    # below v5 the instance id cannot travel: Kafka's client refuses, and so do we
    sim = Sim({"t": 2})
    capped(sim, {JOIN_GROUP: 4})
    a = sim.add("a", config={"group.instance.id": "ia"})
    sim.advance(1000)
    assert a.errors and a.errors[0].fatal and a.errors[0].error.code == ErrorCode.UNSUPPORTED_VERSION
    assert not [r for r in sim.requests if r[2] == JOIN_GROUP]
