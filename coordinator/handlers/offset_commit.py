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
group with generation >= 0 is GROUP_ID_NOT_FOUND instead of ILLEGAL_GENERATION.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.offsets import OffsetCommitRequest, commit_error
from ..security import GROUP, READ, TOPIC, authorize
from .common import one_group

API_KEY = ApiKey.OFFSET_COMMIT
VERSIONS = {"4.1": (2, 9)}      # Kafka 4.0 removed v0-1 (KIP-896); v10 (topic ids) came after 4.1


class _Builder:
    """``OffsetCommitResponse.Builder``: topics in order of first appearance; ``refused``: the
    (topic, partition, error) to add first."""

    def __init__(self, refused=()) -> None:
        self.topics: list[dict] = []
        self._by_name: dict[str, dict] = {}
        for topic, partition, error in refused:
            self.add(topic, partition, error)

    def add(self, topic: str, partition: int, error: int) -> None:
        entry = self._by_name.get(topic)
        if entry is None:
            entry = self._by_name[topic] = {"name": topic, "partitions": []}
            self.topics.append(entry)
        entry["partitions"].append({"partition_index": partition, "error_code": int(error)})

    def merge(self, topics: list[dict]) -> list[dict]:
        if not self.topics:
            return topics
        for t in topics:
            entry = self._by_name.get(t["name"])
            if entry is None:
                self._by_name[t["name"]] = t
                self.topics.append(t)
            else:
                entry["partitions"].extend(t["partitions"])
        return self.topics


def handle(ctx, version, body, respond):
    service = ctx.service
    if not authorize(ctx, READ, GROUP, body["group_id"]):
        builder = _Builder()
        for topic in body["topics"]:
            for p in topic["partitions"]:
                builder.add(topic["name"], p["partition_index"], ErrorCode.GROUP_AUTHORIZATION_FAILED)
        respond({"throttle_time_ms": 0, "topics": builder.topics})
        return
    valid = []
    refused = []        # what the API layer answers itself (a builder only when there is some)
    for topic in body["topics"]:
        name = topic["name"]
        if not authorize(ctx, READ, TOPIC, name):
            for p in topic["partitions"]:
                refused.append((name, p["partition_index"], ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        count = service.partition_count(name)
        if count is None:
            for p in topic["partitions"]:
                refused.append((name, p["partition_index"], ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        ok = []
        for p in topic["partitions"]:
            if 0 <= p["partition_index"] < count:
                ok.append(p)
            else:
                refused.append((name, p["partition_index"], ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
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

    request = OffsetCommitRequest(       # (positional: the hot path after Heartbeat)
        body["group_id"],
        valid,
        body.get("generation_id_or_member_epoch", -1) if version >= 1 else -1,     # generation_id
        (body.get("member_id") or "") if version >= 1 else "",                      # member_id
        body.get("group_instance_id") if version >= 7 else None,                   # group_instance_id
        body.get("retention_time_ms", -1) if 2 <= version <= 4 else -1,            # retention_time_ms
        version >= 9,                                                               # group_id_not_found
    )
    error = request.error()
    if error is None and not service.is_coordinator(request.group_id, ctx.node_id):
        error = ErrorCode.NOT_COORDINATOR
    if error is not None:
        reply(commit_error(valid, error))
        return
    service.group_coordinator.offset_commit(reply, request)


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [{"partition_index": p["partition_index"], "error_code": code}
                                           for p in t["partitions"]]} for t in body["topics"]]}


groups = one_group
