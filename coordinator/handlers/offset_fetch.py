"""OffsetFetch (9).

v0-7 carry one group (``GroupId``, ``Topics``; null Topics = every committed offset from v2;
RequireStable from v7: a partition with a transactional offset pending (KIP-447) answers
UNSTABLE_OFFSET_COMMIT, offset -1, as Kafka's ``fetchOffsets``/``fetchAllOffsets``); v8+ carry
``Groups[]`` (RequireStable for all of them) and the core is called once per group.
No topic-existence check: a partition without a committed offset gets offset -1 and
metadata "" (never UNKNOWN_TOPIC_OR_PARTITION).

Authorization (``KafkaApis.handleOffsetFetchRequestFromCoordinator``): DESCRIBE on the group or
GROUP_AUTHORIZATION_FAILED for that group; topics without DESCRIBE are left out of an
all-topics fetch, and requested ones are appended (after the others, when the group had no
error) with offset -1 and TOPIC_AUTHORIZATION_FAILED.

Response shims (``OffsetFetchResponse(groups, version)``): v8+ per-group ErrorCode; v2-7 the
group error in the top-level ErrorCode; v0-1 the group error copied into every partition
of the group's response (with offset -1), which - as in Kafka - has no partitions when the
whole group failed. v10 (served from Kafka 4.2) names topics by id: a requested id that names no
topic gets UNKNOWN_TOPIC_ID for its partitions (after the others, as denied topics), and in an
all-topics fetch a topic no longer known by id is left out (it cannot be named).
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.offsets import OffsetFetchRequest, fetch_error
from ..security import DESCRIBE, GROUP, TOPIC, authorize
from .common import GroupBatch

API_KEY = ApiKey.OFFSET_FETCH
# Kafka 4.0 removed v0 (KIP-896); v10 (topic ids) is in 4.1 but unstable, not served by default
VERSIONS = {"3.9": (0, 9), "4.1": (1, 9), "4.2": (1, 10)}


def _fetch_group(ctx, request: OffsetFetchRequest, by_id: bool = False) -> dict:
    """One group's answer: the API layer's checks (the request's topics narrowed to those the
    principal may describe), then the coordinator's. ``by_id``: v10, topics named by id."""
    service = ctx.service
    group_id = request.group_id
    if not authorize(ctx, DESCRIBE, GROUP, group_id):
        return fetch_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    topics = request.topics
    denied = []
    unknown = []
    if topics is not None:
        if by_id:
            unknown = [t for t in topics if not t["name"]]
        denied = [t for t in topics if t["name"] and not authorize(ctx, DESCRIBE, TOPIC, t["name"])]
        if denied or unknown:
            request.topics = topics = [t for t in topics if t not in denied and t not in unknown]
    error = request.error()
    if error is not None:
        return fetch_error(group_id, error)
    if not service.is_coordinator(group_id, ctx.node_id):
        return fetch_error(group_id, ErrorCode.NOT_COORDINATOR)
    out: list[dict] = []
    service.group_coordinator.offset_fetch(out.append, request)
    group = out[0]
    if group["error_code"]:
        return group
    if topics is None:
        group["topics"] = [t for t in group["topics"] if authorize(ctx, DESCRIBE, TOPIC, t["name"])]
    elif denied or unknown:
        group["topics"] = list(group["topics"]) + [
            {"name": t["name"], "topic_id": t.get("topic_id"), "partitions": [
                {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
                 "error_code": int(code)} for p in t["partition_indexes"]]}
            for ts, code in ((denied, ErrorCode.TOPIC_AUTHORIZATION_FAILED), (unknown, ErrorCode.UNKNOWN_TOPIC_ID))
            for t in ts]
    if by_id:       # the response names topics by id: one no longer known cannot be named
        named = [{**t, "topic_id": t.get("topic_id") or service.topic_id(t["name"])} for t in group["topics"]]
        group["topics"] = [t for t in named if t["topic_id"] is not None]
    return group


def _name(ctx, topic: dict) -> str:
    """The name of a v10 request's topic (by id), "" when no topic has that id."""
    return ctx.service.topic_name(topic["topic_id"]) or ""


def handle(ctx, version, body, respond):
    require_stable = bool(body.get("require_stable", False)) if version >= 7 else False
    if version >= 8:
        groups = []
        by_id = version >= 10
        for g in body["groups"]:
            topics = g.get("topics")
            if topics is not None:
                topics = [{"name": _name(ctx, t) if by_id else t["name"], "topic_id": t.get("topic_id"),
                           "partition_indexes": t["partition_indexes"]} for t in topics]
            groups.append(_fetch_group(ctx, OffsetFetchRequest(g["group_id"], topics, require_stable,
                                                               g.get("member_id"), g.get("member_epoch", -1)),
                                       by_id))
        respond({"throttle_time_ms": 0, "groups": groups})
        return
    topics = body.get("topics")
    if topics is not None:
        topics = [{"name": t["name"], "partition_indexes": t["partition_indexes"]} for t in topics]
    elif version < 2:
        topics = []
    group = _fetch_group(ctx, OffsetFetchRequest(body["group_id"], topics, require_stable))
    error = group["error_code"]
    out_topics = []
    for t in group["topics"]:
        parts = []
        for p in t["partitions"]:
            if version < 2 and error:
                parts.append({"partition_index": p["partition_index"], "committed_offset": -1,
                              "committed_leader_epoch": -1, "metadata": "", "error_code": error})
            else:
                parts.append(p)
        out_topics.append({"name": t["name"], "partitions": parts})
    respond({"throttle_time_ms": 0, "topics": out_topics, "error_code": error})


def _group_error(group_id, code: int) -> dict:
    return {"group_id": group_id, "topics": [], "error_code": code}


def error_response(version: int, body: dict, code: int) -> dict:
    if version >= 8:
        return {"throttle_time_ms": 0, "groups": [_group_error(g["group_id"], code) for g in body["groups"]]}
    topics = []
    if version < 2:     # no top-level error: it goes into every partition asked for
        topics = [{"name": t["name"], "partitions": [
            {"partition_index": i, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
             "error_code": code} for i in t["partition_indexes"]]} for t in body.get("topics") or ()]
    return {"throttle_time_ms": 0, "error_code": code, "topics": topics}


def groups(version: int, body: dict) -> list:
    if version >= 8:
        return [g["group_id"] for g in body.get("groups") or ()]
    return [body.get("group_id")]


#: v8+ asks for several groups: where they are in the request and the response
GROUP_BATCH = GroupBatch("groups", "groups", _group_error, min_version=8, group_of=lambda entry: entry["group_id"])
