"""IncrementalAlterConfigs (44): a group's dynamic configs (``kafka-configs --entity-type groups
--alter``), as Kafka's controller takes them (``ConfigurationControlManager`` and
``ControllerConfigurationValidator`` for ConfigResource.Type GROUP).

Each resource is answered on its own (Kafka 3.9 knows no GROUP resource: INVALID_REQUEST, "Unknown
resource type 32"): ALTER_CONFIGS on the group, or GROUP_AUTHORIZATION_FAILED;
an empty group name is INVALID_REQUEST ("Default group resources are not allowed."); SET with a
null value is INVALID_REQUEST; APPEND and SUBTRACT are INVALID_CONFIG (no group config is a list);
the group's configs after the change are checked together, in GroupConfig.validate's words
(INVALID_CONFIG: an unknown name, a value that is not an INT, one outside the broker's bounds, a
session timeout not above the heartbeat interval). The group need not exist; nothing changes with
ValidateOnly. Configs of other resource types (a broker's, a topic's) are not alterable here:
INVALID_REQUEST naming the type.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.configs import GROUP_RESOURCE
from ..releases import at_least
from ..security import GROUP, authorize

API_KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OPERATIONS = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


class _Refused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _changes(resource: dict) -> dict:
    """name -> new value (None: delete) of a group resource's configs."""
    changes = {}
    for c in resource["configs"]:
        name, op, value = c["name"], c["config_operation"], c["value"]
        if op not in _OPERATIONS:
            raise _Refused(ErrorCode.INVALID_REQUEST, f"Unknown alter config operation type {op}")
        if op in (APPEND, SUBTRACT):
            raise _Refused(ErrorCode.INVALID_CONFIG,
                           f"Can't {_OPERATIONS[op]} to key {name} because its type is not LIST.")
        if op == SET and value is None:
            raise _Refused(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {name}")
        if op == DELETE:
            changes[name] = None
            continue
        try:
            changes[name] = int(value.strip())
        except ValueError:
            changes[name] = value       # (refused by the check, naming it)
    return changes


def alter(ctx, resource: dict, validate_only: bool) -> dict:
    kind, name = resource["resource_type"], resource["resource_name"]
    out = {"error_code": 0, "error_message": None, "resource_type": kind, "resource_name": name}
    try:
        if kind == GROUP_RESOURCE and not at_least(ctx.service.config["groupcoord.kafka.version"], "4.0"):
            raise _Refused(ErrorCode.INVALID_REQUEST, f"Unknown resource type {kind}")     # (Kafka 3.9's words)
        if kind != GROUP_RESOURCE:
            raise _Refused(ErrorCode.INVALID_REQUEST, f"groupcoord alters the configs of groups only, not of "
                                                      f"resource type {kind}")
        if not authorize(ctx, "ALTER_CONFIGS", GROUP, name):
            raise _Refused(ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED.message)
        if not name:
            raise _Refused(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
        try:
            ctx.service.alter_group_configs(name, _changes(resource), validate_only)
        except ValueError as e:
            raise _Refused(ErrorCode.INVALID_CONFIG, str(e)) from None
    except _Refused as e:
        out["error_code"], out["error_message"] = int(e.code), str(e)
    return out


def handle(ctx, version, body, respond):
    validate_only = bool(body.get("validate_only"))
    respond({"throttle_time_ms": 0, "responses": [alter(ctx, r, validate_only) for r in body["resources"]]})


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "responses": [
        {"error_code": code, "error_message": ErrorCode(code).message, "resource_type": r["resource_type"],
         "resource_name": r["resource_name"]} for r in body["resources"]]}
