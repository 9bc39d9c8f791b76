"""Every API message we speak, declared once (one module per API).

``APIS`` maps API keys to :class:`~groupcoord.protocol.schema.Api`; ``BY_NAME`` maps
names ("JoinGroup") to the same objects.
"""
from __future__ import annotations

from ..schema import Api
from . import (
    api_versions, consumer_group_describe, consumer_group_heartbeat, create_topics, delete_groups,
    delete_topics, describe_groups, fetch,
    find_coordinator, heartbeat, init_producer_id, join_group, leave_group, list_groups,
    list_offsets, metadata, offset_commit, offset_delete, offset_fetch, produce,
    sasl_authenticate, sasl_handshake, sync_group,
)

_MODULES = (
    produce, fetch, list_offsets, metadata, offset_commit, offset_fetch, find_coordinator,
    join_group, heartbeat, leave_group, sync_group, describe_groups, list_groups,
    sasl_handshake, api_versions, create_topics, delete_topics, init_producer_id,
    sasl_authenticate, delete_groups, offset_delete, consumer_group_heartbeat, consumer_group_describe,
)

APIS: dict[int, Api] = {m.API.key: m.API for m in _MODULES}
BY_NAME: dict[str, Api] = {a.name: a for a in APIS.values()}

__all__ = ["APIS", "BY_NAME"]
