"""FindCoordinator (10): the node leading the group's offsets-topic partition, or the transactional
id's transaction log partition.

The coordinator of a group is the leader of partition abs(javaHash(group_id)) % 50
(offsets.topic.num.partitions); of a transactional id, the leader of partition abs(javaHash(id)) % 50
(transaction.state.log.num.partitions) of the transaction log. Batched keys from v4. A group key needs DESCRIBE on the group
(else GROUP_AUTHORIZATION_FAILED), a transaction key DESCRIBE on the transactional id.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode, error_message

from ..security import DESCRIBE, TRANSACTIONAL_ID, authorize
from ..security import GROUP as GROUP_RESOURCE
from .common import GroupBatch

API_KEY = ApiKey.FIND_COORDINATOR
GROUP, TRANSACTION, SHARE = 0, 1, 2


def _lookup(ctx, key: str, key_type: int, version: int) -> dict:
    cluster = ctx.service.cluster
    if key_type == GROUP and not authorize(ctx, DESCRIBE, GROUP_RESOURCE, key):
        return _denied(ErrorCode.GROUP_AUTHORIZATION_FAILED, version)
    if key_type == TRANSACTION and not authorize(ctx, DESCRIBE, TRANSACTIONAL_ID, key):
        return _denied(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, version)
    if key_type not in (GROUP, TRANSACTION) and not (key_type == SHARE and version >= 6):
        return {"error_code": ErrorCode.INVALID_REQUEST, "error_message": f"unsupported key type {key_type}",
                "node_id": -1, "host": "", "port": -1}
    if key_type == TRANSACTION:
        node_id = ctx.service.transactions.coordinator_node(key)
    else:
        node_id = cluster.coordinator_for(key)
    node = cluster.nodes[node_id]
    if not node.up:
        return {"error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
                "error_message": "The coordinator is not available.", "node_id": -1, "host": "", "port": -1}
    return {"error_code": 0, "error_message": None, "node_id": node.node_id, "host": node.host, "port": node.port}


def _denied(error: ErrorCode, version: int) -> dict:
    # v0-3: the request's error response (with the error's message); v4+: no message
    return {"error_code": int(error), "error_message": error.message if version < 4 else None,
            "node_id": -1, "host": "", "port": -1}


def handle(ctx, version, body, respond):
    key_type = body.get("key_type", GROUP)
    if version < 4:
        res = _lookup(ctx, body["key"], key_type, version)
        if res["error_message"] is None:
            # Errors.message(): the exception's message, or the name for NONE (KafkaApis sets it
            # on v0-3 answers only; v4+ coordinators carry no message on success)
            error = ErrorCode(res["error_code"])
            res["error_message"] = error.message if error else error.name
        respond({"throttle_time_ms": 0, **res})
        return
    coordinators = [{"key": key, **_lookup(ctx, key, key_type, version)} for key in body["coordinator_keys"]]
    respond({"throttle_time_ms": 0, "coordinators": coordinators})


def _coordinator_error(key, code: int) -> dict:
    return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": code,
            "error_message": error_message(code)}


def error_response(version: int, body: dict, code: int) -> dict:
    if version < 4:
        return {"throttle_time_ms": 0, "error_code": code, "error_message": error_message(code), "node_id": -1,
                "host": "", "port": -1}
    return {"throttle_time_ms": 0, "coordinators": [_coordinator_error(k, code) for k in body["coordinator_keys"]]}


def groups(version: int, body: dict) -> list:
    if body.get("key_type", 0) != 0:
        return []            # transaction or share keys
    return list(body.get("coordinator_keys") or ()) if version >= 4 else [body.get("key")]


#: v4+ looks up several keys
GROUP_BATCH = GroupBatch("coordinator_keys", "coordinators", _coordinator_error, min_version=4)
