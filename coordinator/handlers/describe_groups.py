"""DescribeGroups (15).

Per group: not coordinated here -> NOT_COORDINATOR; missing -> state "Dead" with NONE (v0-5)
or GROUP_ID_NOT_FOUND plus an ErrorMessage (v6, KIP-1043). AuthorizedOperations (v3+) is
filled only when requested and the group had no error: the operations the principal may do on
the group (with no authorizer, every operation a group supports). Groups without DESCRIBE are
answered GROUP_AUTHORIZATION_FAILED first, then the others in request order (``KafkaApis``).
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.runtime import AUTHORIZED_OPERATIONS_OMITTED, GROUP_AUTHORIZED_OPERATIONS
from ..security import DESCRIBE, GROUP, authorize, authorized_operations
from .common import GroupBatch

API_KEY = ApiKey.DESCRIBE_GROUPS
VERSIONS = {"3.9": (0, 5), "4.1": (0, 6)}      # v6 (ErrorMessage, GROUP_ID_NOT_FOUND) came with Kafka 4.0


def handle(ctx, version, body, respond):
    service = ctx.service
    coordinator = service.group_coordinator
    include_ops = version >= 3 and bool(body.get("include_authorized_operations"))
    groups = []
    authorized = []
    for group_id in body["groups"]:
        if authorize(ctx, DESCRIBE, GROUP, group_id):
            authorized.append(group_id)
        else:
            groups.append({"error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED), "error_message": None,
                           "group_id": group_id, "group_state": "", "protocol_type": "", "protocol_data": "",
                           "members": [], "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED})
    for group_id in authorized:
        if group_id is not None and not service.is_coordinator(group_id, ctx.node_id):
            entry = {"error_code": int(ErrorCode.NOT_COORDINATOR), "error_message": None, "group_id": group_id,
                     "group_state": "", "protocol_type": "", "protocol_data": "", "members": [],
                     "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}
        else:
            entry = coordinator.describe_group(group_id, group_id_not_found=version >= 6)
            if include_ops and entry["error_code"] == 0:
                entry["authorized_operations"] = authorized_operations(ctx, GROUP, entry["group_id"],
                                                                       GROUP_AUTHORIZED_OPERATIONS)
        groups.append(entry)
    respond({"throttle_time_ms": 0, "groups": groups})


def _group_error(group_id, code: int) -> dict:
    return {"error_code": code, "error_message": None, "group_id": group_id, "group_state": "",
            "protocol_type": "", "protocol_data": "", "members": [], "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "groups": [_group_error(g, code) for g in body["groups"]]}


def groups(version: int, body: dict) -> list:
    return list(body.get("groups") or ())


GROUP_BATCH = GroupBatch("groups", "groups", _group_error)
