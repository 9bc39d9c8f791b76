"""JoinGroup (11).

API/service layer of Kafka (``KafkaApis.handleJoinGroupRequest``,
``GroupCoordinatorService.joinGroup``): empty group id -> INVALID_GROUP_ID, session timeout
outside [group.min.session.timeout.ms, group.max.session.timeout.ms] -> INVALID_SESSION_TIMEOUT
(both before the ownership check), then NOT_COORDINATOR; the core does the rest. Before all of
that, READ on the group or GROUP_AUTHORIZATION_FAILED (``JoinGroupRequest.getErrorResponse``).

Version shims: v0 has no RebalanceTimeoutMs (the session timeout is used); KIP-394
MEMBER_ID_REQUIRED from v4; KIP-814 SkipAssignment from v9; ProtocolName null -> "" below v7
and "" -> null from v7 (``JoinGroupResponse``).
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.classic.requests import JoinGroupRequest, join_error
from ..security import GROUP, READ, authorize
from .common import one_group

API_KEY = ApiKey.JOIN_GROUP


def _shim(version: int, respond):
    def reply(resp: dict) -> None:
        name = resp.get("protocol_name")
        if version < 7:
            if name is None:
                resp["protocol_name"] = ""
        elif name == "":
            resp["protocol_name"] = None
        respond(resp)
    return reply


def handle(ctx, version, body, respond):
    reply = _shim(version, respond)
    service = ctx.service
    if not authorize(ctx, READ, GROUP, body["group_id"]):
        reply(join_error("", ErrorCode.GROUP_AUTHORIZATION_FAILED))
        return
    session_timeout_ms = body["session_timeout_ms"]
    request = JoinGroupRequest(
        group_id=body["group_id"],
        member_id=body.get("member_id") or "",
        group_instance_id=body.get("group_instance_id") if version >= 5 else None,
        client_id=ctx.client_id,
        client_host=ctx.client_host,
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=session_timeout_ms if version == 0 else body.get("rebalance_timeout_ms", -1),
        protocol_type=body["protocol_type"],
        protocols=[(p["name"], p["metadata"]) for p in body["protocols"]],
        reason=body.get("reason") if version >= 8 else None,
        require_known_member_id=version >= 4,
        supports_skip_assignment=version >= 9,
    )
    coordinator = service.group_coordinator
    error = request.error(coordinator.min_session_timeout_ms, coordinator.max_session_timeout_ms)
    if error is not None:
        reply(join_error(request.member_id, error))
        return
    if not service.is_coordinator(request.group_id, ctx.node_id):
        reply(join_error("", ErrorCode.NOT_COORDINATOR))
        return
    coordinator.join_group(reply, request)


def error_response(version: int, body: dict, code: int) -> dict:
    resp = join_error("", code)
    resp["protocol_name"] = None if version >= 7 else ""
    return resp


groups = one_group
