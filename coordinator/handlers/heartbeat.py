"""Heartbeat (12): READ on the group or GROUP_AUTHORIZATION_FAILED, empty group id -> INVALID_GROUP_ID,
then NOT_COORDINATOR, then the core.

Version shims: GroupInstanceId from v3 (KIP-345)."""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.classic.requests import HeartbeatRequest
from ..security import GROUP, READ, authorize
from .common import one_group

API_KEY = ApiKey.HEARTBEAT


def handle(ctx, version, body, respond):
    group_id = body["group_id"]
    if not authorize(ctx, READ, GROUP, group_id):
        respond({"throttle_time_ms": 0, "error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED)})
        return
    if not group_id:            # (here, not a method of the request: the hottest request)
        respond({"throttle_time_ms": 0, "error_code": int(ErrorCode.INVALID_GROUP_ID)})
        return
    request = HeartbeatRequest(group_id, body["generation_id"], body["member_id"],
                               body.get("group_instance_id") if version >= 3 else None)
    service = ctx.service
    if not service.is_coordinator(group_id, ctx.node_id):
        respond({"throttle_time_ms": 0, "error_code": int(ErrorCode.NOT_COORDINATOR)})
        return
    respond({"throttle_time_ms": 0, "error_code": service.group_coordinator.heartbeat_error(request)})


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": code}


groups = one_group
