"""DescribeShareGroupOffsets (90), the share group protocol (KIP-932): the start offset (and, v1, the lag)
of share groups' share-partitions.

API layer of Kafka 4.1 to 4.3 (``KafkaApis.handleDescribeShareGroupOffsetsRequest``), per group in
request order: share groups not enabled -> UNSUPPORTED_VERSION; no DESCRIBE on the group ->
GROUP_AUTHORIZATION_FAILED (both without a message); Topics null -> every initialized share-partition of
the group (``describeShareGroupAllOffsets``: NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS with
Kafka's messages, as the coordinator's runtime answers them), topics the principal may not DESCRIBE left
out silently; Topics empty -> the group without topics; else the topics the principal may DESCRIBE go
to the coordinator (``describeShareGroupOffsets``, which reads the share coordinator without checking
the group or the coordinator), the others follow its answer with TopicId zero, StartOffset -1 and
TOPIC_AUTHORIZATION_FAILED per partition. The coordinator's side is
:meth:`~..group.share.offsets.ShareGroupOffsets.describe_offsets`. v1 (Kafka 4.2+, KIP-1226) adds Lag.
Kafka 3.9 does not have the API.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.share.offsets import ZERO_UUID, kafka_message, offsets_group, offsets_partition
from ..security import DESCRIBE, GROUP, TOPIC, authorize
from .common import GroupBatch

API_KEY = ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS
SINCE = "4.1"
VERSIONS = {"4.1": (0, 0), "4.2": (0, 1)}       # v1 (Lag) came with Kafka 4.2

_E = ErrorCode


def handle(ctx, version, body, respond):
    service = ctx.service
    coordinator = service.group_coordinator
    enabled = coordinator.share_groups_enabled
    groups = []
    for request in body["groups"]:
        group_id, topics = request["group_id"], request["topics"]
        if not enabled:
            groups.append(offsets_group(group_id, [], _E.UNSUPPORTED_VERSION))
        elif not authorize(ctx, DESCRIBE, GROUP, group_id):
            groups.append(offsets_group(group_id, [], _E.GROUP_AUTHORIZATION_FAILED))
        elif topics is None:
            groups.append(_all_offsets(ctx, group_id))
        elif not topics:
            groups.append(offsets_group(group_id, []))
        else:
            groups.append(_offsets(ctx, group_id, topics))
    respond({"throttle_time_ms": 0, "groups": groups})


def _all_offsets(ctx, group_id: str) -> dict:
    """``describeShareGroupAllOffsetsForGroup``: a read of the group's coordinator, then the topics the
    principal may not DESCRIBE left out."""
    service = ctx.service
    coordinator = service.group_coordinator
    if not service.is_coordinator(group_id, ctx.node_id):
        return _failed(group_id, _E.NOT_COORDINATOR)
    if coordinator.is_loading(group_id):
        return _failed(group_id, _E.COORDINATOR_LOAD_IN_PROGRESS)
    entry = coordinator.share.describe_offsets(group_id, None)
    if not entry["error_code"]:
        entry["topics"] = [t for t in entry["topics"] if authorize(ctx, DESCRIBE, TOPIC, t["topic_name"])]
    return entry


def _offsets(ctx, group_id: str, topics: list) -> dict:
    """``describeShareGroupOffsetsForGroup``: the topics the principal may DESCRIBE asked, the others
    answered TOPIC_AUTHORIZATION_FAILED after them."""
    allowed = {name: authorize(ctx, DESCRIBE, TOPIC, name) for name in dict.fromkeys(t["topic_name"] for t in topics)}
    entry = ctx.service.group_coordinator.share.describe_offsets(
        group_id, [t for t in topics if allowed[t["topic_name"]]])
    if entry["error_code"]:
        return entry
    denied = _E.TOPIC_AUTHORIZATION_FAILED
    entry["topics"] += [{"topic_name": t["topic_name"], "topic_id": ZERO_UUID,
                         "partitions": [offsets_partition(p, code=denied, message=kafka_message(denied))
                                        for p in t["partitions"]]}
                        for t in topics if not allowed[t["topic_name"]]]
    return entry


def _failed(group_id: str, code: int) -> dict:
    """A group failed as KafkaApis answers an exception of the coordinator: its code and Kafka's message."""
    return offsets_group(group_id, [], code, kafka_message(code))


def error_response(version: int, body: dict, code: int) -> dict:
    """``DescribeShareGroupOffsetsRequest.getErrorResponse``: every group with the error and its message."""
    return {"throttle_time_ms": 0, "groups": [_failed(g["group_id"], code) for g in body["groups"]]}


def groups(version: int, body: dict) -> list:
    return [g["group_id"] for g in body.get("groups") or ()]


GROUP_BATCH = GroupBatch("groups", "groups", _failed, group_of=lambda item: item["group_id"])
