"""OffsetDelete (47, v0 only).

API layer (``KafkaApis.handleOffsetDeleteRequest``): without DELETE on the group the answer is a
top-level GROUP_AUTHORIZATION_FAILED; partitions of topics without READ get
TOPIC_AUTHORIZATION_FAILED; partitions of unknown topics (or beyond
the partition count) get UNKNOWN_TOPIC_OR_PARTITION; the coordinator is always asked
(even with nothing left), and its answer is merged as ``OffsetDeleteResponse.Builder.merge``
does: a top-level error replaces everything, else partitions are appended per topic.
Service layer: empty group id -> INVALID_GROUP_ID, then NOT_COORDINATOR (top level).
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.offsets import OffsetDeleteRequest
from ..security import DELETE, GROUP, READ, TOPIC, authorize
from .common import one_group

API_KEY = ApiKey.OFFSET_DELETE


def handle(ctx, version, body, respond):
    service = ctx.service
    if not authorize(ctx, DELETE, GROUP, body["group_id"]):
        respond({"error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED), "throttle_time_ms": 0, "topics": []})
        return
    api_topics: list[dict] = []
    by_name: dict[str, dict] = {}

    def add(topic: str, partition: int, error: int) -> None:
        entry = by_name.get(topic)
        if entry is None:
            entry = by_name[topic] = {"name": topic, "partitions": []}
            api_topics.append(entry)
        entry["partitions"].append({"partition_index": partition, "error_code": int(error)})

    valid = []
    for topic in body["topics"]:
        name = topic["name"]
        if not authorize(ctx, READ, TOPIC, name):
            for p in topic["partitions"]:
                add(name, p["partition_index"], ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            continue
        count = service.partition_count(name)
        ok = []
        for p in topic["partitions"]:
            if count is not None and 0 <= p["partition_index"] < count:
                ok.append({"partition_index": p["partition_index"]})
            else:
                add(name, p["partition_index"], ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if ok:
            valid.append({"name": name, "partitions": ok})

    def reply(resp: dict) -> None:
        if resp["error_code"] or not api_topics:
            respond({"error_code": resp["error_code"], "throttle_time_ms": 0, "topics": resp["topics"]})
            return
        for t in resp["topics"]:
            entry = by_name.get(t["name"])
            if entry is None:
                api_topics.append(t)
            else:
                entry["partitions"].extend(t["partitions"])
        respond({"error_code": 0, "throttle_time_ms": 0, "topics": api_topics})

    request = OffsetDeleteRequest(body["group_id"], valid)
    error = request.error()
    if error is not None:
        reply({"error_code": int(error), "topics": []})
        return
    if not service.is_coordinator(request.group_id, ctx.node_id):
        reply({"error_code": int(ErrorCode.NOT_COORDINATOR), "topics": []})
        return
    service.group_coordinator.offset_delete(reply, request)


def error_response(version: int, body: dict, code: int) -> dict:
    """The top-level error only."""
    return {"error_code": code, "throttle_time_ms": 0, "topics": []}


groups = one_group
