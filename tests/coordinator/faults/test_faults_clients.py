"""Faults against real clients (confluent-kafka/librdkafka and kafka-python): coordinator moves,
injected coordinator errors, a node going down, and a fault scheduled on a group event.

Each member counts a record as consumed only once its offset is committed, so "every record
consumed exactly once, and the committed offsets at the end of every partition" shows that no
commit was lost and nothing was consumed twice across the fault.
"""
from __future__ import annotations

import itertools
import threading

import pytest

from fault_clients import MEMBERS, Seen, committed, produce, wait_until
from groupcoord.coordinator.embed import ThreadedCoordinator
from groupcoord.protocol.errors import ErrorCode

pytestmark = pytest.mark.interop

E = ErrorCode
CLIENTS = sorted(MEMBERS)
_values = itertools.count()


class Coordinator(ThreadedCoordinator):
    """A ThreadedCoordinator that records its events."""

    def __init__(self, **kwargs):
        self.events: list[dict] = []
        self._lock = threading.Lock()
        super().__init__(emit=self._record, **kwargs)

    def _record(self, event):
        with self._lock:
            self.events.append(event)

    def events_of(self, group: str) -> list[dict]:
        with self._lock:
            return [e for e in self.events if e["group"] == group and e["event"] != "offset.committed"]

    def view(self, group: str):
        def snapshot():
            g = self.service.group_coordinator.group(group)
            return None if g is None else (g.state, g.generation_id, frozenset(g.members))
        return self.call(snapshot)

    def faults(self, method: str, *args):
        return self.call(getattr(self.service.faults, method), *args)


@pytest.fixture
def stack():
    """Closes what the test registers (consumers first, then coordinators), whatever happened."""
    items: list = []
    yield items.append
    for item in reversed(items):
        item.close() if hasattr(item, "close") else item.stop()


def partitions(gc: Coordinator, topic: str = "t") -> list[tuple[str, int]]:
    return [(topic, p) for p in range(gc.service.cluster.partition_count(topic))]


def start_group(gc, stack, client: str, group: str, n: int = 2) -> list:
    members = [MEMBERS[client](f"{group}-{i}", gc.bootstrap_servers, group, ["t"]).begin() for i in range(n)]
    for m in members:
        stack(m)
    wait_settled(gc, group, members)
    return members


def wait_settled(gc, group, members, timeout: float = 30.0):
    """Stable with exactly these members, whose own views cover every partition exactly once."""
    everything = set(partitions(gc))

    def ok():
        for m in members:
            m.check()
        view = gc.view(group)
        if view is None or view[0] != "Stable" or len(view[2]) != len(members):
            return None
        owned = [m.owns() for m in members]
        if any(not o for o in owned) or sum(len(o) for o in owned) != len(everything) \
                or set().union(*owned) != everything:
            return None
        if {m.member_id for m in members} != set(view[2]):
            return None
        return view
    return wait_until(ok, timeout, message=lambda: f"{group} settled: {gc.view(group)}, "
                                               f"{[sorted(m.owns()) for m in members]}")


def produce_round(gc, tag: str) -> list:
    return produce(gc.bootstrap_servers, [(t, p, f"{tag}/{next(_values)}") for t, p in partitions(gc)])


def wait_consumed_exactly_once(members, produced, timeout: float = 30.0) -> None:
    wait_until(lambda: sum(len(m.consumed()) for m in members) >= len(produced), timeout,
               message=lambda: f"{len(produced)} records consumed, got {sum(len(m.consumed()) for m in members)}")
    consumed = sorted((r.topic, r.partition, r.offset) for m in members for r in m.consumed())
    assert consumed == sorted((r.topic, r.partition, r.offset) for r in produced), "lost or duplicated records"


def assert_committed_to_the_end(gc, group, produced) -> None:
    end: dict = {}
    for r in produced:
        end[(r.topic, r.partition)] = max(end.get((r.topic, r.partition), 0), r.offset + 1)
    assert committed(gc.bootstrap_servers, group, sorted(end)) == end


# ============================================================================ coordinator move
@pytest.mark.parametrize("client", CLIENTS)
def test_coordinator_move_keeps_the_group(client, stack):
    gc = Coordinator(nodes=3, topics={"t": 4}).start()
    stack(gc)
    seen = Seen(gc)
    group = f"move-{client}"
    members = start_group(gc, stack, client, group)
    produced = produce_round(gc, "before")
    wait_consumed_exactly_once(members, produced)
    state, generation, ids = gc.view(group)
    mark = len(seen.snapshot())
    events_before = len(gc.events_of(group))

    moved = gc.faults("move_group", group, None)
    old, new = moved["from"], moved["to"]
    assert old != new and gc.call(gc.service.cluster.coordinator_for, group) == new

    produced += produce_round(gc, "after")
    wait_consumed_exactly_once(members, produced)
    after = [a for a in seen.snapshot()[mark:] if a.group == group]
    # the clients were told by the old node, found the new one, and committed there
    assert any(a.node == old and a.error == E.NOT_COORDINATOR for a in after), after
    assert any(a.api == "FindCoordinator" and a.error == 0 for a in after)
    wait_until(lambda: any(a.node == new and a.api == "Heartbeat" and a.error == 0
                           for a in seen.snapshot()[mark:] if a.group == group), message="heartbeats to the new node")
    assert any(a.node == new and a.api == "OffsetCommit" and a.error == 0 for a in after)
    # from the move on, the old node served the group nothing
    assert all(a.error == E.NOT_COORDINATOR for a in after if a.node == old and a.api != "FindCoordinator")
    # same group: same members, same generation, no rebalance
    assert gc.view(group) == ("Stable", generation, ids)
    assert gc.events_of(group)[events_before:] == []
    assert_committed_to_the_end(gc, group, produced)


# ============================================================================ injected errors
FAULTS = [  # (api, error, count, the member rejoins)
    ("Heartbeat", "COORDINATOR_NOT_AVAILABLE", 2, False),
    ("Heartbeat", "NOT_COORDINATOR", 2, False),
    ("OffsetCommit", "NOT_COORDINATOR", 1, False),
    ("OffsetCommit", "COORDINATOR_NOT_AVAILABLE", 1, False),
    ("Heartbeat", "REBALANCE_IN_PROGRESS", 1, True),
]


@pytest.mark.parametrize("client", CLIENTS)
def test_injected_coordinator_errors_are_survived(client, stack):
    gc = Coordinator(topics={"t": 4}).start()
    stack(gc)
    group = f"errors-{client}"
    seen = Seen(gc)
    members = start_group(gc, stack, client, group)
    produced = []
    for api, error, count, rejoin in FAULTS:
        _, generation, ids = gc.view(group)
        mark = len(seen.snapshot())
        fault = gc.faults("add", {"api": api, "group": group, "error": error, "count": count})
        produced += produce_round(gc, f"{api}/{error}")
        wait_until(lambda: gc.faults("get", fault["id"])["fired"] == count, message=f"{api} {error} injected")
        if rejoin:      # the member told so rejoins (a follower with unchanged metadata gets the
            # current generation back, as from Kafka; the leader makes a new one)
            wait_until(lambda: any(a.api == "JoinGroup" and a.group == group and a.error == 0
                                   for a in seen.snapshot()[mark:]), message="a JoinGroup")
        wait_consumed_exactly_once(members, produced)
        state, generation_after, ids_after = wait_settled(gc, group, members)
        if not rejoin:  # a coordinator error alone does not cost a rebalance
            assert (generation_after, ids_after) == (generation, ids), (api, error)
    assert_committed_to_the_end(gc, group, produced)
    kinds = [e["event"] for e in gc.events_of(group)]
    assert "member.expired" not in kinds and "member.left" not in kinds


# ============================================================================ node down
def test_node_down_fails_its_groups_over(stack):
    gc = Coordinator(nodes=3, topics={"t": 6}).start()
    stack(gc)
    cluster = gc.service.cluster
    # one group per client, both coordinated by node 1
    names = (f"down-{i}" for i in itertools.count())
    groups = {}
    for client in CLIENTS:
        groups[client] = next(g for g in names if cluster.coordinator_for(g) == 1)
    members = {client: start_group(gc, stack, client, group) for client, group in groups.items()}
    produced = produce_round(gc, "before")
    for client in CLIENTS:
        wait_consumed_exactly_once(members[client], produced)
    views = {client: gc.view(groups[client]) for client in CLIENTS}

    down = gc.faults("node_down", 1)
    assert {m["partition"] for m in down["moves"] if m["topic"] == "t"} == {1, 4}
    assert not cluster.nodes[1].up and len(gc.bootstrap_servers.split(",")) == 2

    produced += produce_round(gc, "after")
    for client in CLIENTS:
        group = groups[client]
        wait_consumed_exactly_once(members[client], produced)
        assert gc.call(cluster.coordinator_for, group) != 1
        # a failover, not a rebalance: same members, same generation
        assert wait_settled(gc, group, members[client]) == views[client]
        kinds = [e["event"] for e in gc.events_of(group)]
        assert "member.expired" not in kinds and "member.left" not in kinds
        assert_committed_to_the_end(gc, group, produced)


# ============================================================================ scheduled on an event
def test_scheduled_expiry_fires_exactly_when_the_group_enters_completing_rebalance(stack):
    gc = Coordinator(topics={"t": 4}).start()
    stack(gc)
    group = "scheduled"
    first = start_group(gc, stack, "confluent-kafka", group, n=1)[0]
    first_id = first.member_id
    fault = gc.faults("add", {"when": {"event": "group.state_change", "group": group,
                                       "state_to": "CompletingRebalance"},
                              "do": {"action": "expire_member", "client_id": first.member_name}})
    mark = len(gc.events_of(group))
    second = MEMBERS["confluent-kafka"](f"{group}-1", gc.bootstrap_servers, group, ["t"]).begin()
    stack(second)
    wait_settled(gc, group, [first, second])
    events = gc.events_of(group)[mark:]
    i = next(i for i, e in enumerate(events) if e["event"] == "group.state_change"
             and e["state_to"] == "CompletingRebalance")
    # the expiry comes right after the join phase completed, in the same coordinator operation;
    # the first member led the group, so the leadership goes to the second
    assert [(e["event"], e.get("state_to"), e.get("member")) for e in events[i:i + 5]] == [
        ("group.state_change", "CompletingRebalance", None),
        ("rebalance.join_completed", "CompletingRebalance", None),
        ("member.expired", None, first_id),
        ("group.leader_changed", None, None),
        ("group.state_change", "PreparingRebalance", None)]
    assert events[i + 3]["leader_from"] == first_id
    assert events[i + 2]["reason"] == "session_timeout" and events[i + 2]["generation"] == events[i]["generation"]
    assert gc.faults("get", fault["id"])["fired"] == 1
    assert len([e for e in events if e["event"] == "member.expired"]) == 1   # one-shot
    # the expired member came back as a new member and the group settled with both
    assert first.member_id != first_id
    produced = produce_round(gc, "after")
    wait_consumed_exactly_once([first, second], produced)
