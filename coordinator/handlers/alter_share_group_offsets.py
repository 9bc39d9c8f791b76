"""AlterShareGroupOffsets (91), the share group protocol (KIP-932): set the start offsets of an empty
share group's share-partitions.

API layer of Kafka 4.1 to 4.3 (``KafkaApis.handleAlterShareGroupOffsetsRequest``): share groups not
enabled -> UNSUPPORTED_VERSION; no READ on the group -> GROUP_AUTHORIZATION_FAILED (both top-level,
with Kafka's message); each topic without READ -> TOPIC_AUTHORIZATION_FAILED, an unknown one ->
UNKNOWN_TOPIC_OR_PARTITION, on each of its partitions (with Kafka's message), the others go to the
coordinator (``GroupCoordinatorService.alterShareGroupOffsets``: an empty group id ->
INVALID_GROUP_ID, then NOT_COORDINATOR, then :meth:`~..group.share.offsets.ShareGroupOffsets.alter_offsets`),
whose answer is merged as ``AlterShareGroupOffsetsResponse.Builder`` does: the topics answered here first,
then the coordinator's, one entry per topic name, its TopicId the metadata's (zero for an unknown
topic). Kafka 4.2+ answers a coordinator's top-level error alone; Kafka 4.1 drops it (its KafkaApis
merges only the topics: a group not found, not empty or not coordinated here answers success, without
the coordinator's topics). Kafka 3.9 does not have the API.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.share.offsets import ZERO_UUID, coordinator_error, kafka_message
from ..releases import at_least
from ..security import GROUP, READ, TOPIC, authorize
from .common import one_group

API_KEY = ApiKey.ALTER_SHARE_GROUP_OFFSETS
SINCE = "4.1"

_E = ErrorCode


def handle(ctx, version, body, respond):
    service = ctx.service
    coordinator = service.group_coordinator
    group_id = body["group_id"]
    if not coordinator.share_groups_enabled:
        respond(error_response(version, body, _E.UNSUPPORTED_VERSION))
        return
    if not authorize(ctx, READ, GROUP, group_id):
        respond(error_response(version, body, _E.GROUP_AUTHORIZATION_FAILED))
        return
    answered: dict[str, dict] = {}          # topic name -> its entry (the Builder's collection)

    def add(name: str, partitions: list) -> None:
        entry = answered.get(name)
        if entry is None:
            entry = answered[name] = {"topic_name": name, "topic_id": service.topic_id(name) or ZERO_UUID,
                                      "partitions": []}
        entry["partitions"] += partitions

    authorized = []
    for topic in body["topics"]:
        name = topic["topic_name"]
        if not authorize(ctx, READ, TOPIC, name):
            code = _E.TOPIC_AUTHORIZATION_FAILED
        elif service.topic_id(name) is None:
            code = _E.UNKNOWN_TOPIC_OR_PARTITION
        else:
            authorized.append(topic)
            continue
        add(name, [{"partition_index": p["partition_index"], "error_code": int(code), "error_message": kafka_message(code)}
                   for p in topic["partitions"]])

    if not group_id:
        result = coordinator_error(_E.INVALID_GROUP_ID)
    elif not service.is_coordinator(group_id, ctx.node_id):
        result = coordinator_error(_E.NOT_COORDINATOR)
    else:
        result = coordinator.share.alter_offsets(group_id, authorized)
    if result["error_code"] and at_least(service.config["groupcoord.kafka.version"], "4.2"):
        respond({"throttle_time_ms": 0, "error_code": result["error_code"], "error_message": result["error_message"],
                 "responses": []})
        return
    for entry in result["responses"]:
        add(entry["topic_name"], entry["partitions"])
    respond({"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": list(answered.values())})


def error_response(version: int, body: dict, code: int) -> dict:
    """``AlterShareGroupOffsetsRequest.getErrorResponse``: the error, top-level, with Kafka's message."""
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": kafka_message(code), "responses": []}


groups = one_group
