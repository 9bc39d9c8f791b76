"""CreatePartitions (37) as Kafka's controller answers it (ControllerApis.createPartitions,
ReplicationControlManager.createPartitions): each topic on its own, in Kafka's words; a consumer
group subscribed to a topic that grew gets the new partitions."""
from __future__ import annotations

from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.service import Service
from groupcoord.protocol.errors import ErrorCode as E

from test_group_configs_over_the_wire import call

CREATE_PARTITIONS = 37


def grow(svc, *topics, validate_only=False, version=3) -> dict:
    """{topic: (error code, message)} of a CreatePartitions of (name, count[, assignments])."""
    body = {"topics": [{"name": t[0], "count": t[1], "assignments": None if len(t) < 3 else
                        [{"broker_ids": b} for b in t[2]]} for t in topics],
            "timeout_ms": 1000, "validate_only": validate_only}
    return {r["name"]: (r["error_code"], r["error_message"]) for r in call(svc, CREATE_PARTITIONS, version, body)["results"]}


def service(nodes: int = 1) -> Service:
    svc = Service(BrokerConfig({}, environ={}), clock=lambda: 0, emit=lambda e: None, nodes=nodes)
    svc.cluster.create_topic("orders", 2)
    return svc


def test_a_topic_grows_and_the_refusals_are_kafkas():
    svc = service()
    assert grow(svc, ("orders", 4)) == {"orders": (0, None)}
    assert svc.cluster.topics["orders"].partition_count == 4
    assert grow(svc, ("orders", 4), ("nope", 3), ("orders2", 1)) == {
        "orders": (E.INVALID_PARTITIONS, "Topic already has 4 partition(s)."),
        "nope": (E.UNKNOWN_TOPIC_OR_PARTITION, E.UNKNOWN_TOPIC_OR_PARTITION.message),
        "orders2": (E.UNKNOWN_TOPIC_OR_PARTITION, E.UNKNOWN_TOPIC_OR_PARTITION.message)}
    assert grow(svc, ("orders", 3)) == {
        "orders": (E.INVALID_PARTITIONS, "The topic orders currently has 4 partition(s); 3 would not be an increase.")}
    body = {"topics": [{"name": "orders", "count": 9, "assignments": None}] * 2, "timeout_ms": 1, "validate_only": False}
    assert call(svc, CREATE_PARTITIONS, 0, body)["results"] == [
        {"name": "orders", "error_code": E.INVALID_REQUEST, "error_message": "Duplicate topic name."}]
    assert grow(svc, ("orders", 2**31 - 1)) == {
        "orders": (E.INVALID_PARTITIONS, "2147483647 partitions are more than groupcoord serves for a topic (100000).")}
    # validate-only checks and changes nothing
    assert grow(svc, ("orders", 8), validate_only=True) == {"orders": (0, None)}
    assert svc.cluster.topics["orders"].partition_count == 4


def test_manual_assignments_are_checked_and_lead_their_partitions():
    svc = service(nodes=3)
    refusals = {
        ((1,),): "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.",
        ((1,), ()): "The manual partition assignment includes an empty replica list.",
        ((1,), (7,)): "The manual partition assignment includes broker 7, but no such broker is registered.",
        ((1,), (2, 2)): "The manual partition assignment includes the broker 2 more than once.",
        ((1,), (0, 2)): "The manual partition assignment includes a partition with 2 replica(s), but this is not "
                        "consistent with previous partitions, which have 1 replica(s).",
    }
    for assignments, message in refusals.items():
        assert grow(svc, ("orders", 4, assignments)) == {"orders": (E.INVALID_REPLICA_ASSIGNMENT, message)}
    assert svc.cluster.topics["orders"].partition_count == 2
    assert grow(svc, ("orders", 4, ((2,), (1,)))) == {"orders": (0, None)}
    assert [svc.cluster.leader_for("orders", p) for p in (2, 3)] == [2, 1]


def test_a_consumer_group_gets_the_new_partitions():
    svc = service()
    heartbeat = {"group_id": "g", "member_id": "m1", "member_epoch": 0, "instance_id": None, "rack_id": None,
                 "rebalance_timeout_ms": 30000, "subscribed_topic_names": ["orders"], "subscribed_topic_regex": None,
                 "server_assignor": None, "topic_partitions": []}
    first = call(svc, 68, 1, heartbeat)
    assert sum(len(t["partitions"]) for t in first["assignment"]["topic_partitions"]) == 2
    assert grow(svc, ("orders", 5)) == {"orders": (0, None)}
    again = call(svc, 68, 1, {**heartbeat, "member_epoch": first["member_epoch"], "rebalance_timeout_ms": -1,
                              "subscribed_topic_names": None, "topic_partitions": None})
    assert again["member_epoch"] > first["member_epoch"]
    assert sorted(p for t in again["assignment"]["topic_partitions"] for p in t["partitions"]) == [0, 1, 2, 3, 4]


def test_a_topic_of_a_billion_partitions_is_refused_at_creation_too():
    svc = service()
    body = {"topics": [{"name": "huge", "num_partitions": 10**9, "replication_factor": -1, "assignments": [],
                        "configs": []}], "timeout_ms": 1000, "validate_only": False}
    [result] = call(svc, 19, 7, body)["topics"]
    assert (result["error_code"], result["error_message"]) == (
        E.INVALID_PARTITIONS, "1000000000 partitions are more than groupcoord serves for a topic (100000).")
    assert "huge" not in svc.cluster.topics
