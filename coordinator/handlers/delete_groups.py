"""DeleteGroups (42): distinct group ids (``KafkaApis``), NOT_COORDINATOR per group, then the core
(GROUP_ID_NOT_FOUND / NON_EMPTY_GROUP / deleted with its offsets). Results in request order,
then the groups without DELETE with GROUP_AUTHORIZATION_FAILED (as ``KafkaApis`` appends them)."""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..security import DELETE, GROUP, authorize
from .common import GroupBatch

API_KEY = ApiKey.DELETE_GROUPS


def handle(ctx, version, body, respond):
    service = ctx.service
    results = []
    denied = []
    for group_id in dict.fromkeys(body["groups_names"]):
        if not authorize(ctx, DELETE, GROUP, group_id):
            denied.append({"group_id": group_id, "error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED)})
            continue
        if group_id is not None and not service.is_coordinator(group_id, ctx.node_id):
            results.append({"group_id": group_id, "error_code": int(ErrorCode.NOT_COORDINATOR)})
            continue
        out: list[dict] = []
        service.group_coordinator.delete_groups(out.append, group_ids=[group_id])
        results.extend(out[0]["results"])
    respond({"throttle_time_ms": 0, "results": results + denied})


def _group_error(group_id, code: int) -> dict:
    return {"group_id": group_id, "error_code": code}


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "results": [_group_error(g, code) for g in body["groups_names"]]}


def groups(version: int, body: dict) -> list:
    return list(body.get("groups_names") or ())


#: each group answered once, however often the request names it
GROUP_BATCH = GroupBatch("groups_names", "results", _group_error, unique=True)
