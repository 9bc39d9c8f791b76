"""CreatePartitions (37): more partitions for existing topics (``kafka-topics --alter --partitions``),
as Kafka's controller answers it (``ControllerApis.createPartitions`` and
``ReplicationControlManager.createPartitions``).

Per topic: a name given twice is INVALID_REQUEST ("Duplicate topic name."); without ALTER on the topic,
TOPIC_AUTHORIZATION_FAILED; an unknown topic UNKNOWN_TOPIC_OR_PARTITION; a count that is not an increase
INVALID_PARTITIONS in Kafka's words; manual assignments must give one replica list per new partition,
each of the topic's replication factor, of known brokers, none twice (INVALID_REPLICA_ASSIGNMENT); the
first broker of a list leads its partition (until a restart: the replica lists are not kept).
More than ``cluster.MAX_PARTITIONS`` is INVALID_PARTITIONS. ValidateOnly checks and changes nothing. A consumer group
subscribed to the topic sees the new partitions as it sees a topic grow.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..cluster import MAX_PARTITIONS
from ..security import ALTER, TOPIC, authorize

API_KEY = ApiKey.CREATE_PARTITIONS


class _Refused(Exception):
    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _check_assignment(cluster, topic, first: int, assignments: list) -> list[list[int]]:
    """``validateManualPartitionAssignment`` of each new partition's replicas, in Kafka's words."""
    replicas = []
    for i, a in enumerate(assignments):
        brokers = list(a["broker_ids"])
        if not brokers:
            raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "The manual partition assignment includes an empty replica list.")
        for b in brokers:
            if brokers.count(b) > 1:
                raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"The manual partition assignment includes the broker {b} more than once.")
            if b not in cluster.nodes:
                raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"The manual partition assignment includes broker {b}, but no such broker is "
                               "registered.")
        if len(brokers) != topic.replication_factor:
            raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"The manual partition assignment includes a partition with {len(brokers)} replica(s), "
                           f"but this is not consistent with previous partitions, which have "
                           f"{topic.replication_factor} replica(s).")
        if not any(cluster.is_up(b) for b in brokers):
            raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"All brokers specified in the manual partition assignment for partition {first + i} "
                           "are fenced or in controlled shutdown.")
        replicas.append(brokers)
    return replicas


def grow(ctx, t: dict, validate_only: bool) -> None:
    cluster = ctx.service.cluster
    name, count, assignments = t["name"], t["count"], t.get("assignments")
    topic = cluster.topics.get(name)
    if topic is None:
        raise _Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.message)
    current = topic.partition_count
    if count == current:
        raise _Refused(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    if count < current:
        raise _Refused(ErrorCode.INVALID_PARTITIONS, f"The topic {name} currently has {current} partition(s); "
                                                     f"{count} would not be an increase.")
    if count > MAX_PARTITIONS:
        raise _Refused(ErrorCode.INVALID_PARTITIONS, f"{count} partitions are more than groupcoord serves for a "
                                                     f"topic ({MAX_PARTITIONS}).")
    additional = count - current
    if assignments is not None and len(assignments) != additional:
        raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Attempted to add {additional} additional "
                                                             f"partition(s), but only {len(assignments)} "
                                                             "assignment(s) were specified.")
    replicas = _check_assignment(cluster, topic, current, assignments) if assignments is not None else None
    if validate_only:
        return
    cluster.add_partitions(name, count)
    for i, brokers in enumerate(replicas or ()):
        leader = next(b for b in brokers if cluster.is_up(b))
        cluster.set_leader(name, current + i, leader)


def handle(ctx, version, body, respond):
    names = [t["name"] for t in body["topics"]]
    duplicates = {n for n in names if names.count(n) > 1}
    results = [{"name": n, "error_code": int(ErrorCode.INVALID_REQUEST), "error_message": "Duplicate topic name."}
               for n in sorted(duplicates)]
    validate_only = bool(body.get("validate_only"))
    for t in body["topics"]:
        name = t["name"]
        if name in duplicates:
            continue
        result = {"name": name, "error_code": 0, "error_message": None}
        try:
            if not authorize(ctx, ALTER, TOPIC, name):
                raise _Refused(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            grow(ctx, t, validate_only)
        except _Refused as e:
            result["error_code"], result["error_message"] = int(e.code), e.message
        results.append(result)
    respond({"throttle_time_ms": 0, "results": results})


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "results": [
        {"name": t["name"], "error_code": int(code), "error_message": ErrorCode(code).message}
        for t in body["topics"]]}
