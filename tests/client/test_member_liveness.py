"""Member core in virtual time: coordinator discovery, liveness and the Java client's error reactions."""
from __future__ import annotations

import pytest

from groupcoord.client.member import (
    FIND_COORDINATOR, HEARTBEAT, JOIN_GROUP, LEAVE_GROUP, OFFSET_COMMIT, OFFSET_FETCH, SYNC_GROUP,
    FatalConsumerError, MemberState,
)
from groupcoord.protocol.errors import ErrorCode as E

from test_member_harness import SimpleCooperative, Sim, all_tps


def count(sim, api_key, member=None, since=0):
    return sum(1 for t, m, k, _ in sim.requests if k == api_key and t >= since and member in (None, m))


# ---------------------------------------------------------------------------------- coordinator
@pytest.mark.parametrize("api_key", [HEARTBEAT, JOIN_GROUP, SYNC_GROUP])
@pytest.mark.parametrize("error", [E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE])
def test_coordinator_error_once_makes_the_member_rediscover_and_go_on(api_key, error):
    sim = Sim({"t": 4})
    a, b = sim.add("a"), sim.add("b")
    sim.run_until_stable()
    t0 = sim.now
    finds = count(sim, FIND_COORDINATOR, "a")
    sim.fail_next(api_key, error, member="a")
    if api_key != HEARTBEAT:
        a.member.membership.request_rejoin("test")           # make it send JoinGroup/SyncGroup
    sim.run(lambda: count(sim, FIND_COORDINATOR, "a") > finds and sim.stable(), max_ms=20000)
    assert count(sim, FIND_COORDINATOR, "a") == finds + 1
    assert sim.stable()
    assert a.assignment | b.assignment == all_tps(sim, "t")
    assert a.member.fatal_error is None
    assert sim.now - t0 < 5000


def test_heartbeat_not_coordinator_does_not_cost_a_rebalance():
    sim = Sim({"t": 4})
    a = sim.add("a")
    sim.add("b")
    sim.run_until_stable()
    gen = sim.group().generation_id
    sim.fail_next(HEARTBEAT, E.NOT_COORDINATOR, member="a")
    sim.advance(5000)
    assert sim.stable() and sim.group().generation_id == gen
    assert "lost" not in a.kinds() and "revoked" not in a.kinds()[1:]


def test_the_coordinator_moves_to_another_node():
    sim = Sim({"t": 4}, nodes=3)
    a, b = sim.add("a"), sim.add("b")
    sim.run_until_stable()
    cluster = sim.service.cluster
    part = cluster.coordinator_partition("g")
    old = cluster.offsets_leaders[part]
    assert a.member.coordinator[0] == old
    new = (old + 1) % 3
    cluster.offsets_leaders[part] = new               # the old node now answers NOT_COORDINATOR
    sim.advance(5000)
    assert a.member.coordinator[0] == new and b.member.coordinator[0] == new
    assert sim.stable()


def test_find_coordinator_errors_are_retried_with_backoff():
    sim = Sim({"t": 2})
    sim.fail_next(FIND_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE, count=3)
    a = sim.add("a", config={"retry.backoff.ms": 200})
    sim.run_until_stable()
    finds = [t for t, m, k, _ in sim.requests if k == FIND_COORDINATOR]
    assert len(finds) == 4
    assert all(t2 - t1 >= 200 for t1, t2 in zip(finds, finds[1:]))
    assert a.assignment == all_tps(sim, "t")


def test_a_down_coordinator_node_is_found_again_after_it_returns():
    sim = Sim({"t": 2}, nodes=2)
    a = sim.add("a", config={"session.timeout.ms": 20000})
    sim.run_until_stable()
    cluster = sim.service.cluster
    node = a.member.coordinator[0]
    other = 1 - node
    cluster.offsets_leaders[cluster.coordinator_partition("g")] = other
    sim.disconnect("a")                                # every connection breaks
    sim.advance(3000)
    assert a.member.coordinator[0] == other and sim.stable()


# ---------------------------------------------------------------------------------- session
def test_member_that_cannot_heartbeat_within_the_session_loses_its_partitions():
    sim = Sim({"t": 4})
    a = sim.add("a", config={"session.timeout.ms": 3000})
    b = sim.add("b", config={"session.timeout.ms": 3000})
    sim.run_until_stable()
    owned = a.assignment
    old_id = a.member.member_id
    t0 = sim.now
    sim.partition("a")
    sim.run(lambda: "lost" in a.kinds(), max_ms=10000)
    lost_at = next(t for t, k, _ in a.events if k == "lost")
    assert 3000 - 1000 <= lost_at - t0 <= 3000 + 100     # within a heartbeat of the session timeout
    assert a.callbacks("lost") == [sorted(owned)]
    assert a.assignment == set()
    # the coordinator expired it too; b takes everything
    sim.run(lambda: sim.stable(["b"]), max_ms=10000)
    assert b.assignment == all_tps(sim, "t")
    # the network heals: a rejoins as a new member
    sim.heal("a")
    sim.run_until_stable()
    assert a.member.member_id != old_id and a.assignment


def test_poll_timeout_leaves_the_group_and_rejoins_on_the_next_poll():
    sim = Sim({"t": 4})
    a = sim.add("a", config={"max.poll.interval.ms": 5000})
    b = sim.add("b", config={"max.poll.interval.ms": 5000})
    sim.run_until_stable()
    owned = a.assignment
    leaves = count(sim, LEAVE_GROUP, "a")
    t0 = sim.now
    sim.freeze("a")
    sim.run(lambda: count(sim, LEAVE_GROUP, "a") > leaves, max_ms=10000)
    assert 5000 - 1000 <= sim.now - t0 <= 5000 + 100
    sim.run(lambda: sim.stable(["b"]), max_ms=10000)
    assert b.assignment == all_tps(sim, "t")
    assert a.member.state == MemberState.UNJOINED
    sim.advance(20000)                                  # no rejoin while the application is away
    assert a.member.state == MemberState.UNJOINED and count(sim, JOIN_GROUP, "a", since=t0 + 5100) == 0
    sim.thaw("a")
    sim.run_until_stable()
    assert a.callbacks("lost") == [sorted(owned)]       # Kafka: lost at the rejoin
    assert a.assignment


def test_static_member_poll_timeout_sends_no_leave_group():
    sim = Sim({"t": 2})
    a = sim.add("a", config={"max.poll.interval.ms": 3000, "group.instance.id": "ia"})
    sim.run_until_stable()
    sim.freeze("a")
    sim.advance(4000)
    assert count(sim, LEAVE_GROUP) == 0
    assert a.member.state == MemberState.UNJOINED


# ---------------------------------------------------------------------------------- error reactions
def test_unknown_member_id_on_heartbeat_resets_the_member_id_and_rejoins():
    sim = Sim({"t": 4})
    a = sim.add("a", assignors=[SimpleCooperative()])
    sim.run_until_stable()
    owned = a.assignment
    old_id = a.member.member_id
    sim.fail_next(HEARTBEAT, E.UNKNOWN_MEMBER_ID, member="a")
    sim.advance(3000)
    sim.run_until_stable()
    assert a.member.member_id != old_id               # reset, then a new id via MEMBER_ID_REQUIRED
    assert a.callbacks("lost") == [sorted(owned)]     # cooperative: still the generation reset means lost
    assert a.assignment == owned


def test_illegal_generation_on_sync_keeps_the_member_id():
    sim = Sim({"t": 4})
    a = sim.add("a")
    sim.run_until_stable()
    old_id = a.member.member_id
    sim.fail_next(SYNC_GROUP, E.ILLEGAL_GENERATION, member="a")
    a.member.membership.request_rejoin("test")
    sim.run_until_stable()
    assert a.member.member_id == old_id
    joins = [t for t, m, k, _ in sim.requests if k == JOIN_GROUP]
    assert len(joins) == 4                  # KIP-394 pair, the rejoin, the retry after the error


@pytest.mark.parametrize("api_key", [JOIN_GROUP, SYNC_GROUP])
def test_rebalance_in_progress_rejoins_at_once(api_key):
    sim = Sim({"t": 2})
    a = sim.add("a", config={"retry.backoff.ms": 5000})
    sim.run_until_stable()
    sim.fail_next(api_key, E.REBALANCE_IN_PROGRESS, member="a")
    a.member.membership.request_rejoin("test")
    t0 = sim.now
    sim.run_until_stable()
    assert sim.now - t0 < 100                          # no retry backoff


def test_coordinator_load_in_progress_backs_off():
    sim = Sim({"t": 2})
    a = sim.add("a", config={"retry.backoff.ms": 700})
    sim.run_until_stable()
    sim.fail_next(JOIN_GROUP, E.COORDINATOR_LOAD_IN_PROGRESS, member="a")
    a.member.membership.request_rejoin("test")
    t0 = sim.now
    sim.run_until_stable()
    assert sim.now - t0 >= 700


@pytest.mark.parametrize("error", [E.INCONSISTENT_GROUP_PROTOCOL, E.INVALID_SESSION_TIMEOUT,
                                   E.GROUP_AUTHORIZATION_FAILED, E.GROUP_MAX_SIZE_REACHED,
                                   E.FENCED_INSTANCE_ID, E.UNKNOWN_SERVER_ERROR])
def test_fatal_join_errors_are_raised_to_the_application(error):
    sim = Sim({"t": 2})
    sim.fail_next(JOIN_GROUP, error)
    a = sim.add("a")
    sim.advance(2000)
    assert len(a.errors) == 1 and a.errors[0].fatal
    assert isinstance(a.errors[0].error, FatalConsumerError) and a.errors[0].error.code == error
    n = len(sim.requests)
    sim.advance(10000)
    assert len(sim.requests) == n                     # a failed member stays quiet


def test_real_coordinator_errors_are_fatal_where_kafka_makes_them_fatal():
    # a session timeout the broker refuses
    sim = Sim({"t": 2}, broker={"group.min.session.timeout.ms": 6000})
    a = sim.add("a", config={"session.timeout.ms": 5000})
    sim.advance(1000)
    assert a.errors and a.errors[0].error.code == E.INVALID_SESSION_TIMEOUT
    # a member without a protocol in common with the group
    sim = Sim({"t": 2})
    sim.add("a")
    sim.run_until_stable()
    b = sim.add("b", assignors=[SimpleCooperative()])
    sim.advance(1000)
    assert b.errors and b.errors[0].error.code == E.INCONSISTENT_GROUP_PROTOCOL
    # group.max.size
    sim = Sim({"t": 2}, broker={"group.max.size": 1})
    sim.add("a")
    sim.run_until_stable()
    b = sim.add("b")
    sim.advance(3000)
    assert b.errors and b.errors[0].error.code == E.GROUP_MAX_SIZE_REACHED


def test_request_timeout_drops_the_connection_and_retries():
    sim = Sim({"t": 2})
    a = sim.add("a", config={"request.timeout.ms": 2000})
    sim.run_until_stable()
    # swallow the next heartbeat: no response ever comes
    orig = sim._pump

    swallowed = []

    def swallow(sm, c, _done=swallowed):
        if sm is a and not _done and c.queue and c.queue[0].api_key == HEARTBEAT:
            _done.append(c.queue.popleft())
            c.busy = True                                   # stuck forever
            return
        orig(sm, c)
    sim._pump = swallow
    finds = count(sim, FIND_COORDINATOR, "a")
    sim.advance(6000)
    assert count(sim, FIND_COORDINATOR, "a") == finds + 1   # the coordinator connection was dropped
    assert sim.stable() and a.member.fatal_error is None


def test_offset_fetch_coordinator_error_is_retried():
    sim = Sim({"t": 2})
    sim.fail_next(OFFSET_FETCH, E.NOT_COORDINATOR)
    a = sim.add("a")
    sim.run_until_stable()
    sim.run(lambda: len(a.member.positions) == 2, max_ms=5000)
    assert a.member.positions == {tp: 0 for tp in all_tps(sim, "t")}


def test_responses_that_settle_all_they_touch_need_no_poll():
    """on_response is False for a successful heartbeat before the next is due and for a successful
    commit that no rebalance step or close() waits for (a driver may skip poll() then); True for an
    error, and for the commit close() waits on."""
    sim = Sim({"t": 2})
    a = sim.add("a", config={"enable.auto.commit": True, "auto.commit.interval.ms": 500})
    sim.run_until_stable()
    m = a.member
    seen = []
    original = m.on_response
    kinds = {}

    def spy(request_id, body, now):
        api_key = kinds.get(request_id)
        out = original(request_id, body, now)
        seen.append((api_key, body is not None and _first_error(body), out))
        if out is False:       # what the response added: the next heartbeat (while in the group)
            in_group = m.state in (MemberState.STABLE, MemberState.COMPLETING_REBALANCE)
            assert m.settled_deadline == (m.heartbeat.next if api_key == HEARTBEAT and in_group else None)
            assert m.settled_deadline is None or m.settled_deadline > now
        return out
    m.on_response = spy
    original_send = m.net.send

    def send(key, api_key, *args, **kw):
        rid = original_send(key, api_key, *args, **kw)
        kinds[rid] = api_key
        return rid
    m.net.send = send
    sim.advance(3000)
    assert (HEARTBEAT, 0, False) in seen and (OFFSET_COMMIT, 0, False) in seen
    assert all(out is False for key, error, out in seen if key in (HEARTBEAT, OFFSET_COMMIT) and error == 0)
    seen.clear()
    sim.fail_next(HEARTBEAT, E.REBALANCE_IN_PROGRESS, member="a")
    sim.advance(1500)
    assert (HEARTBEAT, int(E.REBALANCE_IN_PROGRESS), True) in seen
    sim.run_until_stable()
    seen.clear()
    m.close(sim.now)
    sim.run(lambda: m.closed, max_ms=10000)
    assert (OFFSET_COMMIT, 0, True) in seen          # close() went on to revoke and leave after it


def _first_error(body: dict) -> int:
    if "error_code" in body:
        return body["error_code"]
    return next((p["error_code"] for t in body.get("topics", []) for p in t["partitions"] if p["error_code"]), 0)
