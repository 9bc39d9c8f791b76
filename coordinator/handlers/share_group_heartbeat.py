"""ShareGroupHeartbeat (76), the share group protocol (KIP-932).

API/service layer of Kafka 4.x (``KafkaApis.handleShareGroupHeartbeat``,
``GroupCoordinatorService.shareGroupHeartbeat``): share groups not enabled (Kafka 4.1 by default,
its ``share.version`` 0) -> UNSUPPORTED_VERSION; READ on the group or GROUP_AUTHORIZATION_FAILED;
from Kafka 4.2 a member id empty or longer than 36 characters is INVALID_REQUEST
(``isMemberIdValid``); DESCRIBE on every subscribed topic or TOPIC_AUTHORIZATION_FAILED; then the
request's validation (INVALID_REQUEST, in its words), NOT_COORDINATOR, and the core. The API
layer's errors carry no message (Kafka's ``getErrorResponse`` sets none); the coordinator's do.
Kafka 3.9 does not have the API (v0 was unstable there).
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.share.requests import ShareGroupHeartbeatRequest, heartbeat_error
from ..releases import at_least
from ..security import DESCRIBE, GROUP, READ, TOPIC, authorize
from .common import one_group

API_KEY = ApiKey.SHARE_GROUP_HEARTBEAT
SINCE = "4.1"           # (v1, "the initial stable version"; 4.0's v0 was unstable)

#: the longest member id Kafka 4.2+ takes (a human-readable UUID's 36 characters)
MAX_MEMBER_ID_LENGTH = 36


def handle(ctx, version, body, respond):
    service = ctx.service
    coordinator = service.group_coordinator
    if not coordinator.share_groups_enabled:
        respond(heartbeat_error(ErrorCode.UNSUPPORTED_VERSION))
        return
    group_id = body["group_id"]
    if not authorize(ctx, READ, GROUP, group_id):
        respond(heartbeat_error(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        return
    member_id = body["member_id"]
    if at_least(service.config["groupcoord.kafka.version"], "4.2") and \
            not 0 < len(member_id) <= MAX_MEMBER_ID_LENGTH:
        respond(heartbeat_error(ErrorCode.INVALID_REQUEST))     # ("Invalid member id in the request.", not sent)
        return
    names = body.get("subscribed_topic_names")
    if names and not all(authorize(ctx, DESCRIBE, TOPIC, name) for name in set(names)):
        respond(heartbeat_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
        return
    request = ShareGroupHeartbeatRequest(
        group_id=group_id, member_id=member_id, member_epoch=body["member_epoch"], rack_id=body.get("rack_id"),
        subscribed_topic_names=names, client_id=ctx.client_id, client_host=ctx.client_host)
    error = request.error()
    if error is not None:
        respond(heartbeat_error(*error))
        return
    if not service.is_coordinator(group_id, ctx.node_id):
        respond(heartbeat_error(ErrorCode.NOT_COORDINATOR))
        return
    coordinator.share_group_heartbeat(respond, request)


def error_response(version: int, body: dict, code: int) -> dict:
    return heartbeat_error(code)


groups = one_group
