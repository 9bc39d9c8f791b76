"""SyncGroup (14).

API/service layer: from v5 a null ProtocolType or ProtocolName is rejected with
INCONSISTENT_GROUP_PROTOCOL before anything else (``areMandatoryProtocolTypeAndNamePresent``);
then READ on the group or GROUP_AUTHORIZATION_FAILED; then empty group id -> INVALID_GROUP_ID,
then NOT_COORDINATOR.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.classic.requests import SyncGroupRequest, sync_error
from ..security import GROUP, READ, authorize
from .common import one_group

API_KEY = ApiKey.SYNC_GROUP


def handle(ctx, version, body, respond):
    protocol_type = body.get("protocol_type") if version >= 5 else None
    protocol_name = body.get("protocol_name") if version >= 5 else None
    if version >= 5 and (protocol_type is None or protocol_name is None):
        respond(sync_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        return
    if not authorize(ctx, READ, GROUP, body["group_id"]):
        respond(sync_error(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        return
    request = SyncGroupRequest(
        group_id=body["group_id"],
        generation_id=body["generation_id"],
        member_id=body["member_id"],
        group_instance_id=body.get("group_instance_id") if version >= 3 else None,
        protocol_type=protocol_type,
        protocol_name=protocol_name,
        assignments=[(a["member_id"], a["assignment"]) for a in body.get("assignments") or ()],
    )
    error = request.error()
    if error is not None:
        respond(sync_error(error))
        return
    service = ctx.service
    if not service.is_coordinator(request.group_id, ctx.node_id):
        respond(sync_error(ErrorCode.NOT_COORDINATOR))
        return
    service.group_coordinator.sync_group(respond, request)


def error_response(version: int, body: dict, code: int) -> dict:
    return sync_error(code)


groups = one_group
