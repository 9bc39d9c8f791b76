"""One handler module per API, as franz-go's kfake does.

Everything one API needs is in its module: ``API_KEY`` (an :class:`~groupcoord.protocol.api_keys.ApiKey`),
``handle(ctx, version, body, respond)``, ``error_response(version, body, code)`` (the response of
a request failed as a whole, as Kafka's ``AbstractRequest.getErrorResponse`` builds it: faults and
security answer with it), and for the group APIs ``groups(version, body)`` (the group ids the
request names) and, where one request names several groups, ``GROUP_BATCH``
(:class:`.common.GroupBatch`). ``HANDLERS`` maps API keys to the modules; ApiVersions advertises
exactly these APIs.

The versions served depend on the Kafka release emulated (``groupcoord.kafka.version``): a
module whose range differs from what we declare has ``VERSIONS = {release: (lo, hi)}``, and
``ADVERTISED`` where Kafka advertises other versions than it serves (Produce).
"""
from __future__ import annotations

import importlib

from groupcoord.protocol.messages import APIS

from ..config import SETTINGS

_MODULES = (
    "produce", "fetch", "list_offsets", "metadata", "offset_commit", "offset_fetch",
    "find_coordinator", "join_group", "heartbeat", "leave_group", "sync_group",
    "describe_groups", "list_groups", "api_versions", "create_topics", "delete_topics",
    "init_producer_id", "delete_groups", "offset_delete", "sasl_handshake", "sasl_authenticate",
    "consumer_group_heartbeat", "consumer_group_describe",
)     # common.py: what several of them share

HANDLERS = {}
for _name in _MODULES:
    _module = importlib.import_module(f"{__name__}.{_name}")
    HANDLERS[int(_module.API_KEY)] = _module      # plain int keys: what requests carry

# the Kafka releases a broker can be emulated as (the first is the default)
KAFKA_RELEASES = SETTINGS["groupcoord.kafka.version"].choices


def served_versions(release: str) -> dict[int, tuple[int, int]]:
    """Per API key, the versions a broker of that Kafka release answers; any other version of
    a request closes the connection (ApiVersions excepted), as Kafka's SocketServer does."""
    return {key: _served(module, release) for key, module in sorted(HANDLERS.items())}


def advertised_versions(release: str) -> dict[int, tuple[int, int]]:
    """Per API key, the versions ApiVersions lists for that release."""
    return {key: getattr(module, "ADVERTISED", {}).get(release) or _served(module, release)
            for key, module in sorted(HANDLERS.items())}


def _served(module, release: str) -> tuple[int, int]:
    declared = APIS[module.API_KEY].request.valid
    return getattr(module, "VERSIONS", {}).get(release) or (declared[0], declared[1])


__all__ = ["HANDLERS", "KAFKA_RELEASES", "advertised_versions", "served_versions"]
