"""ListConfigResources (74): the names of resources with configs (``KafkaApis.handleListConfigResources``),
what ``kafka-configs --describe --entity-type groups`` lists beside the groups themselves.

v1 lists, per type asked for (all of them when none is): GROUP, the groups with a dynamic config set;
BROKER and BROKER_LOGGER, the live brokers; TOPIC, every topic; CLIENT_METRICS, none here. A type
outside those is UNSUPPORTED_VERSION for the whole request. v0 (ListClientMetricsResources before
4.1) lists client-metrics resources only: none. CLUSTER_AUTHORIZATION_FAILED without DESCRIBE_CONFIGS
on the cluster.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.configs import GROUP_RESOURCE
from ..security import CLUSTER, CLUSTER_NAME, authorize

API_KEY = ApiKey.LIST_CONFIG_RESOURCES
VERSIONS = {"3.9": (0, 0), "4.1": (0, 1)}       # 3.9: ListClientMetricsResources v0

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS = 2, 4, 8, 16
SUPPORTED = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP_RESOURCE)


def resources(service, types) -> list[tuple[str, int]]:
    """(name, type) of every resource of the given types, in Kafka's order: groups, brokers, topics."""
    out = []
    if GROUP_RESOURCE in types:
        out += [(group_id, GROUP_RESOURCE) for group_id in service.group_coordinator.group_configs.values]
    live = [str(n.node_id) for n in service.cluster.nodes.values() if n.up]
    for kind in (BROKER_LOGGER, BROKER):
        if kind in types:
            out += [(node, kind) for node in live]
    if TOPIC in types:
        out += [(name, TOPIC) for name in service.cluster.topics]
    return out


def handle(ctx, version, body, respond):
    if not authorize(ctx, "DESCRIBE_CONFIGS", CLUSTER, CLUSTER_NAME):
        respond(error_response(version, body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
        return
    types = list(body.get("resource_types") or ()) if version >= 1 else [CLIENT_METRICS]
    if not types:
        types = list(SUPPORTED)
    if any(t not in SUPPORTED for t in types):
        respond(error_response(version, body, ErrorCode.UNSUPPORTED_VERSION))
        return
    respond({"throttle_time_ms": 0, "error_code": 0, "config_resources": [
        {"resource_name": name, "resource_type": kind} for name, kind in resources(ctx.service, types)]})


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "config_resources": []}
