"""ShareGroupDescribe (77), the share group protocol (KIP-932).

``KafkaApis.handleShareGroupDescribe`` and ``GroupCoordinatorService.shareGroupDescribe`` of Kafka
4.x: share groups not enabled -> UNSUPPORTED_VERSION for every group; groups without DESCRIBE ->
GROUP_AUTHORIZATION_FAILED (listed first, as KafkaApis adds them before the coordinator's
answers); an empty group id -> INVALID_GROUP_ID; not coordinated here -> NOT_COORDINATOR; a group
of another type or none -> GROUP_ID_NOT_FOUND ("Group G is not a share group." / "Group G not
found."). Members report their assignment with topic names. With an authorizer, a group whose
members hold a topic the principal may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED, members left out.
Kafka 3.9 does not have the API.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.runtime import AUTHORIZED_OPERATIONS_OMITTED, GROUP_AUTHORIZED_OPERATIONS
from ..security import DESCRIBE, GROUP, TOPIC, authorize, authorized_operations, authorizer_of
from .common import GroupBatch

API_KEY = ApiKey.SHARE_GROUP_DESCRIBE
SINCE = "4.1"


def _group_error(group_id, code: int, message: str | None = None) -> dict:
    """A group's entry with an error (Kafka's DescribedGroup with its defaults)."""
    return {"error_code": int(code), "error_message": message, "group_id": group_id, "group_state": "",
            "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
            "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}


def handle(ctx, version, body, respond):
    service = ctx.service
    coordinator = service.group_coordinator
    if not coordinator.share_groups_enabled:
        respond(error_response(version, body, ErrorCode.UNSUPPORTED_VERSION))
        return
    include_ops = bool(body.get("include_authorized_operations"))
    denied, out = [], []
    for group_id in body["group_ids"]:
        if not authorize(ctx, DESCRIBE, GROUP, group_id):
            denied.append(_group_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED))
        elif not group_id:
            out.append(_group_error("", ErrorCode.INVALID_GROUP_ID))
        elif not service.is_coordinator(group_id, ctx.node_id):
            out.append(_group_error(group_id, ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_COORDINATOR.message))
        else:
            entry = coordinator.share.describe(group_id)
            if entry["error_code"]:
                entry = _group_error(group_id, entry["error_code"], entry.get("error_message"))
            elif include_ops:
                entry["authorized_operations"] = authorized_operations(ctx, GROUP, group_id,
                                                                       GROUP_AUTHORIZED_OPERATIONS)
            out.append(entry)
    groups = denied + out
    if authorizer_of(ctx) is not None:
        groups = [_without_hidden_topics(ctx, g) for g in groups]
    respond({"throttle_time_ms": 0, "groups": groups})


def _without_hidden_topics(ctx, group: dict) -> dict:
    """Clients do not see topics they may not DESCRIBE: a group assigning one is refused whole."""
    names = {tp["topic_name"] for m in group["members"] for tp in m["assignment"]["topic_partitions"]}
    if all(authorize(ctx, DESCRIBE, TOPIC, name, log_denied=False) for name in names):
        return group
    return _group_error(group["group_id"], ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        "The group has described topic(s) that the client is not authorized to describe.")


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "groups": [_group_error(g, code) for g in body["group_ids"]]}


def groups(version: int, body: dict) -> list:
    return list(body.get("group_ids") or ())


GROUP_BATCH = GroupBatch("group_ids", "groups", _group_error)
