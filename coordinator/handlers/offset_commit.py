"""OffsetCommit (8).

API layer (``KafkaApis.handleOffsetCommitRequest``): without READ on the group every partition
gets GROUP_AUTHORIZATION_FAILED; partitions of topics without READ get TOPIC_AUTHORIZATION_FAILED;
partitions of unknown topics, or beyond
a topic's partition count, get UNKNOWN_TOPIC_OR_PARTITION; the rest go to the coordinator.
When nothing is left the response is built at once (no group validation). A group-level
error is repeated on every partition that went to the coordinator
(``OffsetCommitRequest.getErrorResponse``), and the API-layer errors are merged in front
(``OffsetCommitResponse.Builder.merge``).

Version shims: v0 carries no generation/member (-1/""; Kafka < 4 stored v0 commits in
ZooKeeper, we treat them as commits of a simple group), v1 a per-partition CommitTimestamp,
v2-4 RetentionTimeMs, v6+ CommittedLeaderEpoch, v7+ GroupInstanceId, and from v9 a missing
group with generation >= 0 is GROUP_ID_NOT_FOUND instead of ILLEGAL_GENERATION. v10 (served from
Kafka 4.2) names topics by id: each is looked up by its id first, an unknown id is
UNKNOWN_TOPIC_ID for its partitions, and the response names topics by id again.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.offsets import OffsetCommitRequest, commit_error
from ..security import GROUP, READ, TOPIC, authorize
from .common import one_group

API_KEY = ApiKey.OFFSET_COMMIT
# Kafka 4.0 removed v0-1 (KIP-896); v10 (topic ids) is in 4.1 but unstable, not served by default
VERSIONS = {"3.9": (0, 9), "4.1": (2, 9), "4.2": (2, 10)}


class _Builder:
    """``OffsetCommitResponse.Builder``: topics in order of first appearance; ``refused``: the
    (topic, topic id, partition, error) to add first."""

    def __init__(self, refused=()) -> None:
        self.topics: list[dict] = []
        self._by_topic: dict[tuple, dict] = {}
        for topic, topic_id, partition, error in refused:
            self.add(topic, topic_id, partition, error)

    def add(self, topic: str, topic_id, partition: int, error: int) -> None:
        entry = self._by_topic.get((topic, topic_id))
        if entry is None:
            entry = self._by_topic[(topic, topic_id)] = {"name": topic, "topic_id": topic_id, "partitions": []}
            self.topics.append(entry)
        entry["partitions"].append({"partition_index": partition, "error_code": int(error)})

    def merge(self, topics: list[dict]) -> list[dict]:
        if not self.topics:
            return topics
        for t in topics:
            entry = self._by_topic.get((t["name"], t.get("topic_id")))
            if entry is None:
                self._by_topic[(t["name"], t.get("topic_id"))] = t
                self.topics.append(t)
            else:
                entry["partitions"].extend(t["partitions"])
        return self.topics


def _named(service, topics: list[dict]) -> tuple[list[dict], dict]:
    """v10's topics (by id) with their names ("" for an unknown id), and name -> topic id."""
    named, ids = [], {}
    for t in topics:
        name = service.topic_name(t["topic_id"]) or ""
        if name:
            ids[name] = t["topic_id"]
        named.append({"name": name, "topic_id": t["topic_id"], "partitions": t["partitions"]})
    return named, ids


def _with_ids(respond, ids: dict):
    """``respond`` of a v10 request: the coordinator's topics (by name) get their ids back
    (before they are merged with the API layer's)."""
    def reply(response: dict) -> None:
        for t in response["topics"]:
            if t.get("topic_id") is None:
                t["topic_id"] = ids[t["name"]]
        respond(response)
    return reply


def handle(ctx, version, body, respond):
    service = ctx.service
    topics = body["topics"]
    if version >= 10:
        topics, ids = _named(service, topics)
    if not authorize(ctx, READ, GROUP, body["group_id"]):
        builder = _Builder()
        for topic in topics:
            for p in topic["partitions"]:
                builder.add(topic["name"], topic.get("topic_id"), p["partition_index"],
                            ErrorCode.GROUP_AUTHORIZATION_FAILED)
        respond({"throttle_time_ms": 0, "topics": builder.topics})
        return
    valid = []
    refused = []        # what the API layer answers itself (a builder only when there is some)
    for topic in topics:
        name, topic_id = topic["name"], topic.get("topic_id")
        if version >= 10 and not name:
            for p in topic["partitions"]:
                refused.append((name, topic_id, p["partition_index"], ErrorCode.UNKNOWN_TOPIC_ID))
            continue
        if not authorize(ctx, READ, TOPIC, name):
            for p in topic["partitions"]:
                refused.append((name, topic_id, p["partition_index"], ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        count = service.partition_count(name)
        if count is None:
            for p in topic["partitions"]:
                refused.append((name, topic_id, p["partition_index"], ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        ok = []
        for p in topic["partitions"]:
            if 0 <= p["partition_index"] < count:
                ok.append(p)
            else:
                refused.append((name, topic_id, p["partition_index"], ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        if ok and len(ok) == len(topic["partitions"]):
            valid.append(topic)             # all of it (the coordinator only reads it)
        elif ok:
            valid.append({"name": name, "partitions": ok})
    if not valid:
        respond({"throttle_time_ms": 0, "topics": _Builder(refused).topics})
        return

    if refused:
        builder = _Builder(refused)

        def reply(resp: dict) -> None:
            respond({"throttle_time_ms": 0, "topics": builder.merge(resp["topics"])})
    else:
        reply = respond         # nothing to merge in front: the coordinator's response as it is
    if version >= 10:
        reply = _with_ids(reply, ids)
    _commit(service, ctx.node_id, version, body, valid, reply)


def passes_whole(service, version: int, body: dict) -> bool:
    """Would :func:`handle` pass the request to the coordinator whole, answering nothing itself
    (no authorizer, topics by name, some topics and each with partitions, every partition within
    its topic's count)? Then :func:`commit_whole` is :func:`handle` without a context: the
    simulator's lane (sim/simulate.py)."""
    topics = body["topics"]
    if version >= 10 or service.security.authorizer is not None or not topics:
        return False
    for topic in topics:
        count = service.partition_count(topic["name"])
        if count is None or not topic["partitions"]:
            return False
        for p in topic["partitions"]:
            if not 0 <= p["partition_index"] < count:
                return False
    return True


def commit_whole(service, node_id: int, version: int, body: dict, respond) -> None:
    """:func:`handle` of a request that :func:`passes_whole`, on node ``node_id``."""
    _commit(service, node_id, version, body, body["topics"], respond)


def request_of(version: int, body: dict, valid: list) -> OffsetCommitRequest:
    """The coordinator's request of a body of this version, its topics the ``valid`` ones."""
    return OffsetCommitRequest(          # (positional: the hot path after Heartbeat)
        body["group_id"],
        valid,
        body.get("generation_id_or_member_epoch", -1) if version >= 1 else -1,     # generation_id
        (body.get("member_id") or "") if version >= 1 else "",                      # member_id
        body.get("group_instance_id") if version >= 7 else None,                   # group_instance_id
        body.get("retention_time_ms", -1) if 2 <= version <= 4 else -1,            # retention_time_ms
        version >= 9,                                                               # group_id_not_found
    )


def _commit(service, node_id: int, version: int, body: dict, valid: list, reply) -> None:
    """The request, its topics the ``valid`` ones, to the coordinator; ``reply`` its answer."""
    request = request_of(version, body, valid)
    error = request.error()
    if error is None and not service.is_coordinator(request.group_id, node_id):
        error = ErrorCode.NOT_COORDINATOR
    if error is not None:
        reply(commit_error(valid, error))
        return
    service.group_coordinator.offset_commit(reply, request)


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.get("name", ""), "topic_id": t.get("topic_id"),
         "partitions": [{"partition_index": p["partition_index"], "error_code": code}
                        for p in t["partitions"]]} for t in body["topics"]]}


groups = one_group
