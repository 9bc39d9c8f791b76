"""ListGroups (16): the classic groups this node coordinates.

StatesFilter (v4+) and TypesFilter (v5+) are case-insensitive; empty filters do not filter.
With an authorizer, only groups the principal may DESCRIBE are listed, unless it may DESCRIBE
the cluster (``KafkaApis.handleListGroupsRequest``).
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey

from ..security import CLUSTER, CLUSTER_NAME, DESCRIBE, GROUP, authorize, authorizer_of

API_KEY = ApiKey.LIST_GROUPS


def handle(ctx, version, body, respond):
    service = ctx.service
    states = body.get("states_filter") if version >= 4 else None
    types = body.get("types_filter") if version >= 5 else None
    node_id = ctx.node_id
    if authorizer_of(ctx) is None or authorize(ctx, DESCRIBE, CLUSTER, CLUSTER_NAME, log_denied=False):
        def group_filter(group_id):
            return service.is_coordinator(group_id, node_id)
    else:
        def group_filter(group_id):
            return service.is_coordinator(group_id, node_id) and authorize(
                ctx, DESCRIBE, GROUP, group_id, log_denied=False)
    service.group_coordinator.list_groups(
        respond, states_filter=states, types_filter=types, group_filter=group_filter)


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "groups": []}
