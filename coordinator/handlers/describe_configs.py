"""DescribeConfigs (32): the configs of a group, of this broker, or of a topic.

- GROUP (32, Kafka 4.0+; 3.9 fails the whole request, INVALID_REQUEST): every group config the
  emulated release defines, the group's value where it set one
  (``kafka-configs --entity-type groups``), else the broker's. The group need not exist. Kafka 4.3
  (KAFKA-20289) gives a config the source of its broker synonym (DEFAULT_CONFIG, or
  STATIC_BROKER_CONFIG when the broker config was given) and lists that synonym under the broker's
  name; 4.1 and 4.2 give DEFAULT_CONFIG and a synonym of the group config's own name. Set for the
  group: GROUP_CONFIG. DESCRIBE_CONFIGS on the group, or GROUP_AUTHORIZATION_FAILED; an empty name
  is INVALID_REQUEST.
- BROKER (4): this broker's configs (``groupcoord configs``), read-only, STATIC_BROKER_CONFIG for
  those given (a file, the environment, ``--set``), DEFAULT_CONFIG for the rest. The empty name is
  the cluster's dynamic default configs: none here. Another broker's id is INVALID_REQUEST, as
  Kafka answers a broker not itself.
- TOPIC (2): the topic's configs (DYNAMIC_TOPIC_CONFIG); an unknown topic is
  UNKNOWN_TOPIC_OR_PARTITION.

Other resource types are INVALID_REQUEST. ``ConfigurationKeys`` narrows the list; synonyms only
with IncludeSynonyms (v1+).
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..config import SETTINGS
from ..group.configs import GROUP_RESOURCE
from ..releases import at_least
from ..security import CLUSTER, CLUSTER_NAME, GROUP, TOPIC, authorize

API_KEY = ApiKey.DESCRIBE_CONFIGS
VERSIONS = {"3.9": (0, 4), "4.1": (1, 4)}        # Kafka 4.0 removed v0 (KIP-896)

#: ConfigResource.Type (a group's: GROUP_RESOURCE)
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
#: DescribeConfigsResponse.ConfigSource, and the names Kafka's admin client gives them
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, GROUP_CONFIG = 1, 4, 5, 8
SOURCE_NAMES = {DYNAMIC_TOPIC_CONFIG: "DYNAMIC_TOPIC_CONFIG", STATIC_BROKER_CONFIG: "STATIC_BROKER_CONFIG",
                DEFAULT_CONFIG: "DEFAULT_CONFIG", GROUP_CONFIG: "DYNAMIC_GROUP_CONFIG"}
#: DescribeConfigsResponse.ConfigType
BOOLEAN, STRING, INT, LONG = 1, 2, 3, 5
#: a group config's type (GroupConfigs.kinds) -> its ConfigType
_GROUP_CONFIG_TYPES = {"INT": INT, "STRING": STRING, "BOOLEAN": BOOLEAN}


def _entry(name: str, value, source: int, synonyms: list, config_type: int, read_only: bool,
           include_synonyms: bool) -> dict:
    return {"name": name, "value": None if value is None else _text(value), "read_only": read_only,
            "is_default": source == DEFAULT_CONFIG, "config_source": source, "is_sensitive": False,
            "synonyms": [{"name": n, "value": None if v is None else _text(v), "source": s} for n, v, s in synonyms]
            if include_synonyms else [], "config_type": config_type, "documentation": None}


def _text(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _type_of(value) -> int:
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        return INT if -2**31 <= value < 2**31 else LONG
    return STRING


def group_configs(service, group_id: str, synonyms: bool) -> list[dict]:
    """The group's configs as DescribeConfigs lists them."""
    config = service.config
    configs = service.group_coordinator.group_configs
    new_sources = at_least(config["groupcoord.kafka.version"], "4.3")
    overridden = configs.overridden(group_id)
    out = []
    for name in configs.defined:
        value = configs.get(group_id, name)
        broker_key = configs.broker_keys.get(name)
        broker_source = STATIC_BROKER_CONFIG if broker_key in config.explicit else DEFAULT_CONFIG
        own = [(name, overridden[name], GROUP_CONFIG)] if name in overridden else []
        if new_sources and broker_key is not None:       # KAFKA-20289
            chain = own + [(broker_key, config[broker_key], broker_source)]
        else:
            chain = own or [(name, value, DEFAULT_CONFIG)]
        out.append(_entry(name, value, chain[0][2], chain, _GROUP_CONFIG_TYPES[configs.kinds[name]], False, synonyms))
    return out


def broker_configs(service, synonyms: bool) -> list[dict]:
    config = service.config
    out = []
    for key in SETTINGS:
        value = config[key]
        source = STATIC_BROKER_CONFIG if key in config.explicit else DEFAULT_CONFIG
        out.append(_entry(key, value, source, [(key, value, source)], _type_of(value), True, synonyms))
    return out


def _result(resource: dict, code: int = 0, message: str | None = None, configs=()) -> dict:
    return {"error_code": int(code), "error_message": message, "resource_type": resource["resource_type"],
            "resource_name": resource["resource_name"], "configs": list(configs)}


def describe(ctx, resource: dict, synonyms: bool) -> dict:
    service = ctx.service
    kind, name = resource["resource_type"], resource["resource_name"]
    if kind == GROUP_RESOURCE:
        if not name:
            return _result(resource, ErrorCode.INVALID_REQUEST, "Group name must not be empty")
        if not authorize(ctx, "DESCRIBE_CONFIGS", GROUP, name):
            return _result(resource, ErrorCode.GROUP_AUTHORIZATION_FAILED,
                           ErrorCode.GROUP_AUTHORIZATION_FAILED.message)
        configs = group_configs(service, name, synonyms)
    elif kind == BROKER_RESOURCE:
        if name and name != str(ctx.node_id):
            return _result(resource, ErrorCode.INVALID_REQUEST,
                           f"Unexpected broker id, expected {ctx.node_id} or empty string, but received {name}")
        if not authorize(ctx, "DESCRIBE_CONFIGS", CLUSTER, CLUSTER_NAME):
            return _result(resource, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                           ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message)
        configs = broker_configs(service, synonyms) if name else []     # (no dynamic broker defaults)
    elif kind == TOPIC_RESOURCE:
        if not authorize(ctx, "DESCRIBE_CONFIGS", TOPIC, name):
            return _result(resource, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                           ErrorCode.TOPIC_AUTHORIZATION_FAILED.message)
        topic = service.cluster.topics.get(name)
        if topic is None:
            return _result(resource, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist.")
        configs = [_entry(k, v, DYNAMIC_TOPIC_CONFIG, [(k, v, DYNAMIC_TOPIC_CONFIG)], STRING, False, synonyms)
                   for k, v in topic.configs.items()]
    else:
        return _result(resource, ErrorCode.INVALID_REQUEST, f"Unsupported resource type {kind}")
    keys = resource.get("configuration_keys")
    if keys is not None:
        configs = [c for c in configs if c["name"] in keys]
    return _result(resource, configs=configs)


def handle(ctx, version, body, respond):
    if not at_least(ctx.service.config["groupcoord.kafka.version"], "4.0") and any(
            r["resource_type"] == GROUP_RESOURCE for r in body["resources"]):
        # Kafka 3.9 has no GROUP resource type: ConfigHelper fails the whole request
        respond(error_response(version, body, ErrorCode.INVALID_REQUEST))
        return
    synonyms = version >= 1 and bool(body.get("include_synonyms"))
    respond({"throttle_time_ms": 0, "results": [describe(ctx, r, synonyms) for r in body["resources"]]})


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "results": [_result(r, code, ErrorCode(code).message) for r in body["resources"]]}
