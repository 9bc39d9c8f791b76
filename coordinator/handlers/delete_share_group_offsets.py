"""DeleteShareGroupOffsets (92), the share group protocol (KIP-932): drop an empty share group's
share-partition states of whole topics.

API layer of Kafka 4.1 to 4.3 (``KafkaApis.handleDeleteShareGroupOffsetsRequest``): share groups not
enabled -> UNSUPPORTED_VERSION; no DELETE on the group -> GROUP_AUTHORIZATION_FAILED (both top-level, with
Kafka's message); each topic without READ -> TOPIC_AUTHORIZATION_FAILED (TopicId zero, Kafka's message),
answered first; the others go to the coordinator (``GroupCoordinatorService.deleteShareGroupOffsets``:
an empty group id -> INVALID_GROUP_ID, then NOT_COORDINATOR, then
:meth:`~..group.share.offsets.ShareGroupOffsets.delete_offsets`), whose topics follow; a top-level error
of the coordinator is answered alone. Kafka 4.1 answers at once, without asking the coordinator, when no
topic is left (4.2+ asks it: the group is checked, GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP). Kafka 3.9
does not have the API.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.share.offsets import ZERO_UUID, coordinator_error, kafka_message
from ..releases import at_least
from ..security import DELETE, GROUP, READ, TOPIC, authorize
from .common import one_group

API_KEY = ApiKey.DELETE_SHARE_GROUP_OFFSETS
SINCE = "4.1"

_E = ErrorCode


def handle(ctx, version, body, respond):
    service = ctx.service
    coordinator = service.group_coordinator
    group_id = body["group_id"]
    if not coordinator.share_groups_enabled:
        respond(error_response(version, body, _E.UNSUPPORTED_VERSION))
        return
    if not authorize(ctx, DELETE, GROUP, group_id):
        respond(error_response(version, body, _E.GROUP_AUTHORIZATION_FAILED))
        return
    denied = _E.TOPIC_AUTHORIZATION_FAILED
    responses, authorized = [], []
    for topic in body["topics"]:
        name = topic["topic_name"]
        if authorize(ctx, READ, TOPIC, name):
            authorized.append(name)
        else:
            responses.append({"topic_name": name, "topic_id": ZERO_UUID, "error_code": int(denied),
                              "error_message": kafka_message(denied)})
    if not authorized and not at_least(service.config["groupcoord.kafka.version"], "4.2"):
        respond({"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": responses})
        return
    if not group_id:
        result = coordinator_error(_E.INVALID_GROUP_ID)
    elif not service.is_coordinator(group_id, ctx.node_id):
        result = coordinator_error(_E.NOT_COORDINATOR)
    else:
        result = coordinator.share.delete_offsets(group_id, authorized)
    if result["error_code"]:
        respond({"throttle_time_ms": 0, "error_code": result["error_code"], "error_message": result["error_message"],
                 "responses": []})
        return
    respond({"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": responses + result["responses"]})


def error_response(version: int, body: dict, code: int) -> dict:
    """``DeleteShareGroupOffsetsRequest.getErrorResponse``: the error, top-level, with Kafka's message."""
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": kafka_message(code), "responses": []}


groups = one_group
