"""Heartbeat (12): READ on the group or GROUP_AUTHORIZATION_FAILED, empty group id -> INVALID_GROUP_ID,
then NOT_COORDINATOR, then the core.

Version shims: GroupInstanceId from v3 (KIP-345)."""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.frames import SharedBody

from ..group.classic.requests import HeartbeatRequest
from ..security import GROUP, READ, authorize
from .common import one_group

API_KEY = ApiKey.HEARTBEAT

#: the answer of each error code, shared by every heartbeat (the codec keeps its encoding:
#: 1.1x the heartbeats a second of bench/coordinator.py); read-only (answer_of fills it; the
#: simulator's heartbeat lane reads it first, a call less a heartbeat)
ANSWERS: dict[int, SharedBody] = {}


def answer_of(code: int) -> SharedBody:
    body = ANSWERS.get(code)
    if body is None:
        body = ANSWERS[code] = SharedBody(throttle_time_ms=0, error_code=int(code))
    return body


def answer(ctx, version, body) -> SharedBody:
    """The answer, given at once (a heartbeat never waits): what :func:`handle` responds, and what
    the server's lane of repeated heartbeats sends (server.py)."""
    group_id = body["group_id"]
    if not authorize(ctx, READ, GROUP, group_id):
        return answer_of(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not group_id:            # (here, not a method of the request: the hottest request)
        return answer_of(ErrorCode.INVALID_GROUP_ID)
    service = ctx.service
    if not service.is_coordinator(group_id, ctx.node_id):
        return answer_of(ErrorCode.NOT_COORDINATOR)
    request = HeartbeatRequest(group_id, body["generation_id"], body["member_id"],
                               body.get("group_instance_id") if version >= 3 else None)
    return answer_of(service.group_coordinator.heartbeat_error(request))


def handle(ctx, version, body, respond):
    respond(answer(ctx, version, body))


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": code}


groups = one_group
