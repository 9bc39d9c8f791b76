"""LeaveGroup (13).

v0-2 carry one MemberId, turned into a one-member batch (``LeaveGroupRequest.normalizedData``);
their response has a single ErrorCode: the top-level error if any, else that member's
(``LeaveGroupResponse``). v3+ are batched (KIP-345), v5 adds a per-member Reason.
READ on the group comes first, else GROUP_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.classic.requests import LeaveGroupRequest
from ..security import GROUP, READ, authorize
from .common import one_group

API_KEY = ApiKey.LEAVE_GROUP


def _shim(version: int, respond):
    if version >= 3:
        return respond

    def reply(resp: dict) -> None:
        error = resp["error_code"]
        if not error:
            members = resp.get("members") or ()
            error = members[0]["error_code"] if members else 0
        respond({"throttle_time_ms": 0, "error_code": error})
    return reply


def handle(ctx, version, body, respond):
    reply = _shim(version, respond)
    group_id = body["group_id"]
    if version >= 3:
        members = [(m["member_id"], m.get("group_instance_id"), m.get("reason") if version >= 5 else None)
                   for m in body["members"]]
    else:
        members = [(body["member_id"], None, None)]
    request = LeaveGroupRequest(group_id, members)
    if not authorize(ctx, READ, GROUP, group_id):
        reply({"throttle_time_ms": 0, "error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED), "members": []})
        return
    error = request.error()
    if error is not None:
        reply({"throttle_time_ms": 0, "error_code": int(error), "members": []})
        return
    service = ctx.service
    if not service.is_coordinator(group_id, ctx.node_id):
        reply({"throttle_time_ms": 0, "error_code": int(ErrorCode.NOT_COORDINATOR), "members": []})
        return
    service.group_coordinator.leave_group(reply, request)


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "members": []}


groups = one_group
