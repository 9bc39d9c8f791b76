"""ConsumerGroupDescribe (69), the consumer group protocol (KIP-848).

``KafkaApis.handleConsumerGroupDescribe`` of Kafka 4.x: without ``consumer`` in
group.coordinator.rebalance.protocols -> UNSUPPORTED_VERSION for every group; groups without
DESCRIBE -> GROUP_AUTHORIZATION_FAILED; an empty group id -> INVALID_GROUP_ID; not coordinated
here -> NOT_COORDINATOR; a classic or unknown group -> GROUP_ID_NOT_FOUND. Members report
their current and target assignments with topic names; MemberType (v1) is 1 for members of the
consumer protocol.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.runtime import AUTHORIZED_OPERATIONS_OMITTED, GROUP_AUTHORIZED_OPERATIONS
from ..security import DESCRIBE, GROUP, authorize, authorized_operations
from .common import GroupBatch

API_KEY = ApiKey.CONSUMER_GROUP_DESCRIBE
VERSIONS = {"3.9": (0, 0), "4.1": (0, 1)}      # v1 came with Kafka 4.0


def _group_error(group_id, code: int, message: str | None = None) -> dict:
    return {"error_code": int(code), "error_message": message, "group_id": group_id, "group_state": "",
            "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "", "members": [],
            "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}


def handle(ctx, version, body, respond):
    service = ctx.service
    coordinator = service.group_coordinator
    if not coordinator.consumer_protocol_enabled:
        respond(error_response(version, body, ErrorCode.UNSUPPORTED_VERSION))
        return
    include_ops = bool(body.get("include_authorized_operations"))
    out = []
    for group_id in body["group_ids"]:
        if not authorize(ctx, DESCRIBE, GROUP, group_id):
            out.append(_group_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED))
        elif not group_id:
            out.append(_group_error(group_id, ErrorCode.INVALID_GROUP_ID))
        elif not service.is_coordinator(group_id, ctx.node_id):
            out.append(_group_error(group_id, ErrorCode.NOT_COORDINATOR))
        else:
            entry = coordinator.consumer.describe(group_id)
            if entry["error_code"]:
                entry = _group_error(group_id, entry["error_code"], entry.get("error_message"))
            elif include_ops:
                entry["authorized_operations"] = authorized_operations(ctx, GROUP, group_id,
                                                                       GROUP_AUTHORIZED_OPERATIONS)
            if version < 1:
                for m in entry["members"]:
                    m.pop("member_type", None)
            out.append(entry)
    respond({"throttle_time_ms": 0, "groups": out})


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "groups": [_group_error(g, code) for g in body["group_ids"]]}


def groups(version: int, body: dict) -> list:
    return list(body.get("group_ids") or ())


GROUP_BATCH = GroupBatch("group_ids", "groups", _group_error)
