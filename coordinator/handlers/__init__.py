"""One handler module per API, as franz-go's kfake does.

Each module has ``API_KEY`` and ``handle(ctx, version, body, respond)``; ``HANDLERS``
maps API keys to the modules. ApiVersions advertises exactly these APIs.
"""
from __future__ import annotations

import importlib

_MODULES = (
    "produce", "fetch", "list_offsets", "metadata", "offset_commit", "offset_fetch",
    "find_coordinator", "join_group", "heartbeat", "leave_group", "sync_group",
    "describe_groups", "list_groups", "api_versions", "create_topics", "delete_topics",
    "init_producer_id", "delete_groups", "offset_delete", "sasl_handshake", "sasl_authenticate",
)

HANDLERS = {}
for _name in _MODULES:
    _module = importlib.import_module(f"{__name__}.{_name}")
    HANDLERS[_module.API_KEY] = _module

__all__ = ["HANDLERS"]
