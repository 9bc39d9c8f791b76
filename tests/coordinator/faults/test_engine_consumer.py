"""The fault engine on consumer groups (KIP-848): request faults on ConsumerGroupHeartbeat (an error,
a delay, a dropped connection, for one group or one member), and the scheduled faults of the new
protocol: fencing a member when the group epoch changes, ending a member's session."""
from __future__ import annotations

import pytest

from test_engine import World

from groupcoord.coordinator.faults import FaultError
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode as E

CGH = int(ApiKey.CONSUMER_GROUP_HEARTBEAT)


@pytest.fixture
def w() -> World:
    return World(groupcoord_kafka_version="4.1")     # (epochs as 4.1 numbers them: a new group's first member at 1)


def heartbeat(w: World, group: str, member: str, epoch: int, client_id: str = "c", owned=None):
    """One ConsumerGroupHeartbeat v1 to the group's coordinator: joining (epoch 0) subscribes to t."""
    joining = epoch == 0
    body = {"group_id": group, "member_id": member, "member_epoch": epoch, "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": 30000 if joining else -1, "subscribed_topic_names": ["t"] if joining else None,
            "subscribed_topic_regex": None, "server_assignor": None,
            "topic_partitions": [] if joining else owned}
    return w.send(CGH, 1, body, node=w.coordinator(group), client_id=client_id)


def owned(answer) -> list:
    """The TopicPartitions of a heartbeat answer's assignment, as the member says it owns them next."""
    return [{"topic_id": t["topic_id"], "partitions": t["partitions"]}
            for t in answer.body["assignment"]["topic_partitions"]]


def group(w: World, group_id: str = "g"):
    return w.service.group_coordinator.consumer_group(group_id)


# ============================================================================ request faults
def test_errors_delays_and_drops_on_consumer_group_heartbeat(w):
    assert heartbeat(w, "g", "a", 0).body["member_epoch"] == 1
    rule = w.faults.add({"api": "ConsumerGroupHeartbeat", "error": "COORDINATOR_NOT_AVAILABLE", "count": 1})
    assert rule["api"] == "ConsumerGroupHeartbeat" and rule["api_key"] == 68
    answer = heartbeat(w, "g", "a", 1)
    assert (answer.error, answer.body["member_epoch"], answer.body["assignment"]) == (E.COORDINATOR_NOT_AVAILABLE, 0, None)
    assert heartbeat(w, "g", "a", 1).error == 0                       # exhausted
    w.faults.add({"api": 68, "latency_ms": 300, "count": 1})
    answer = heartbeat(w, "g", "a", 1)
    assert answer.delay_ms == 300 and answer.error == 0               # held, then handled
    w.faults.add({"api": "CONSUMER_GROUP_HEARTBEAT", "drop": True, "count": 1, "id": "cut"})
    answer = heartbeat(w, "g", "a", 1)
    assert answer.closed and answer.reason == "fault cut"
    # the group never saw the faulted heartbeats
    assert (group(w).group_epoch, group(w).members["a"].member_epoch, group(w).state) == (1, 1, "Stable")


def test_group_and_member_filters(w):
    heartbeat(w, "g", "a", 0)
    heartbeat(w, "g", "b", 0)
    heartbeat(w, "h", "a", 0)
    w.faults.add({"api": "ConsumerGroupHeartbeat", "group": "g", "member": "b", "error": "FENCED_MEMBER_EPOCH"})
    assert heartbeat(w, "h", "a", 1).error == 0                       # other group
    assert heartbeat(w, "g", "a", group(w).members["a"].member_epoch).error == 0   # other member
    assert heartbeat(w, "g", "b", 2).error == E.FENCED_MEMBER_EPOCH
    w.faults.clear()
    # any API with a member id: a classic Heartbeat of that member id fails too
    w.faults.add({"member": "b", "error": "REBALANCE_IN_PROGRESS", "count": 1})
    assert w.heartbeat("g", "b", 1).error == E.REBALANCE_IN_PROGRESS


@pytest.mark.parametrize("spec,message", [
    ({"api": "Metadata", "member": "m", "error": 27}, "Metadata requests carry no member id"),
    ({"api": "ConsumerGroupHeartbeat", "member": 3, "error": 27}, "member must be a string"),
    ({"when": {"event": "consumer.group_epoch_bumped"}, "do": {"action": "fence_member", "member": "m",
                                                               "client_id": "c"}},
     "names its member by one of member, instance_id or client_id"),
    ({"when": {"event": "consumer.group_epoch_bumped", "epoch": 3}, "do": {"action": "fence_member"}},
     "unknown field(s) of when (consumer.group_epoch_bumped): epoch"),
    ({"when": {"event": "group.state_change"}, "do": {"action": "fence_member"}}, "needs member, instance_id"),
])
def test_bad_specs_are_refused_clearly(w, spec, message):
    with pytest.raises(FaultError) as info:
        w.faults.add(spec)
    assert message in str(info.value)


# ============================================================================ scheduled faults
def test_fence_a_member_when_the_group_epoch_changes(w):
    a = heartbeat(w, "g", "a", 0, client_id="ca")
    assert a.body["member_epoch"] == 1
    fence = w.faults.add({"when": {"event": "consumer.group_epoch_bumped", "group": "g"}, "times": None,
                          "do": {"action": "fence_member", "client_id": "ca"}})
    # a's heartbeats go through while the epoch stays
    assert heartbeat(w, "g", "a", 1, client_id="ca", owned=owned(a)).error == 0
    assert w.faults.get(fence["id"])["fired"] == 0

    # b joins: epoch 2, and a's next heartbeat is fenced (the coordinator's view of a unchanged)
    assert heartbeat(w, "g", "b", 0, client_id="cb").body["member_epoch"] == 2
    assert heartbeat(w, "g", "b", 2, client_id="cb").error == 0       # b is not the one fenced
    fenced = heartbeat(w, "g", "a", 1, client_id="ca", owned=owned(a))
    assert (fenced.error, fenced.body["member_epoch"]) == (E.FENCED_MEMBER_EPOCH, 0)
    assert group(w).members["a"].member_epoch == 1
    # a gives everything up and joins again with epoch 0 (KAFKA-19233): accepted, its target comes back
    rejoined = heartbeat(w, "g", "a", 0, client_id="ca")
    assert rejoined.error == 0 and rejoined.body["member_epoch"] == 2
    assert heartbeat(w, "g", "a", 2, client_id="ca", owned=owned(rejoined)).error == 0   # one-shot

    # b leaves: epoch 3, a is fenced once more
    assert heartbeat(w, "g", "b", -1, client_id="cb").error == 0
    assert heartbeat(w, "g", "a", 2, client_id="ca", owned=owned(rejoined)).error == E.FENCED_MEMBER_EPOCH
    fault = w.faults.get(fence["id"])
    assert fault["fired"] == 2 and fault["active"] and fault["errors"] == []
    injected = [f for f in w.faults.list() if f["kind"] == "request"]
    assert [(f["source"], f["member"], f["error"], f["fired"], f["active"]) for f in injected] == [
        (fence["id"], "a", "FENCED_MEMBER_EPOCH", 1, False)] * 2
    bumps = [e["reason"] for e in w.events if e["event"] == "consumer.group_epoch_bumped"]
    assert bumps == ["member_joined", "member_joined", "member_left"]


def test_expire_a_consumer_group_member_when_another_joins(w):
    heartbeat(w, "g", "a", 0, client_id="ca")
    w.faults.add({"when": {"event": "consumer.member_joined", "group": "g", "member": "b"},
                  "do": {"action": "expire_member", "client_id": "ca"}})
    heartbeat(w, "g", "b", 0, client_id="cb")
    [fenced] = [e for e in w.events if e["event"] == "consumer.member_fenced"]
    assert (fenced["member"], fenced["reason"]) == ("a", "session_timeout")
    assert set(group(w).members) == {"b"} and group(w).group_epoch == 3
    assert heartbeat(w, "g", "a", 1, client_id="ca").error == E.UNKNOWN_MEMBER_ID
    assert not w.service.timers.is_scheduled(("cg-session", "g", "a"))


def test_fence_member_on_a_classic_group_is_a_recorded_failure_remove_member_works_on_both(w):
    heartbeat(w, "g", "a", 0)
    w.stable("classic")
    w.faults.add({"when": {"event": "consumer.member_joined", "group": "g", "member": "b"},
                  "do": {"action": "remove_member", "member": "a"}})
    w.faults.add({"when": {"event": "consumer.member_joined", "group": "g", "member": "b"},
                  "do": {"action": "fence_member", "group": "classic", "client_id": "a"}})
    heartbeat(w, "g", "b", 0)
    remove, fence = w.faults.list()
    assert remove["errors"] == [] and remove["fired"] == 1
    assert "classic group: fence_member is for consumer groups" in fence["errors"][0]
    assert set(group(w).members) == {"b"}


def test_moving_a_coordinator_names_its_consumer_groups(w):
    heartbeat(w, "g", "a", 0)
    moved = w.faults.move_group("g")
    assert "g" in moved["groups"]
    assert heartbeat(w, "g", "a", 1).error == 0                       # at the new coordinator
