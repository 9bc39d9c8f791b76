"""ListGroups (16): the classic groups this node coordinates.

StatesFilter (v4+) and TypesFilter (v5+) are case-insensitive; empty filters do not filter.
"""
from __future__ import annotations

API_KEY = 16


def handle(ctx, version, body, respond):
    service = ctx.service
    states = body.get("states_filter") if version >= 4 else None
    types = body.get("types_filter") if version >= 5 else None
    node_id = ctx.node_id
    service.group_coordinator.list_groups(
        respond, states_filter=states, types_filter=types,
        group_filter=lambda group_id: service.is_coordinator(group_id, node_id))
