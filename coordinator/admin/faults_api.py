"""Fault injection over HTTP: request and scheduled faults, nodes down and up, coordinator moves,
dropped connections; a share group's acquisition locks expired and a member fenced now. The engine is :mod:`groupcoord.coordinator.faults` (``service.faults``);
these routes only translate its answers and errors (invalid: 400, unknown: 404, conflicting
with the cluster's state: 409)."""
from __future__ import annotations

import asyncio

from aiohttp import web

from ..faults import FaultError
from .app import changed, json_body
from .errors import ApiError, error_responses

routes = web.RouteTableDef()

_STATUS = {"invalid": 400, "not_found": 404, "conflict": 409}
_CODE = {"invalid": "invalid_fault", "not_found": "not_found", "conflict": "conflict"}


def _engine(request: web.Request):
    return request.app["service"].faults


def _fail(exc: FaultError) -> ApiError:
    return ApiError(_STATUS.get(exc.kind, 400), _CODE.get(exc.kind, "invalid_fault"), str(exc))


def _int_param(request: web.Request, name: str) -> int:
    raw = request.match_info[name]
    try:
        return int(raw)
    except ValueError:
        raise ApiError(400, "invalid_parameter", f"{name} must be an integer, not {raw!r}") from None


def _optional_int(body: dict, key: str) -> int | None:
    value = body.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ApiError(400, "invalid_body", f"{key} must be an integer")
    return value


def _only(body: dict, allowed: set[str]) -> None:
    extra = sorted(set(body) - allowed)
    if extra:
        raise ApiError(400, "invalid_body", f"unknown field(s): {', '.join(extra)} "
                                            f"(allowed: {', '.join(sorted(allowed)) or 'none'})")


# ---------------------------------------------------------------------------------- faults
@routes.get("/api/faults")
async def list_faults(request: web.Request) -> web.Response:
    return web.json_response(_engine(request).list())


@routes.post("/api/faults")
async def add_fault(request: web.Request) -> web.Response:
    body = await json_body(request, "fault")
    try:
        fault = _engine(request).add(body)
    except FaultError as exc:
        raise _fail(exc) from None
    return web.json_response(fault, status=201)


@routes.delete("/api/faults")
async def clear_faults(request: web.Request) -> web.Response:
    return web.json_response({"deleted": _engine(request).clear()})


@routes.get("/api/faults/log")
async def fault_log(request: web.Request) -> web.Response:
    raw = request.query.get("limit", "100")
    try:
        limit = int(raw)
        if not 1 <= limit <= 1000:
            raise ValueError
    except ValueError:
        raise ApiError(400, "invalid_parameter", f"limit must be an integer from 1 to 1000, not {raw!r}") from None
    entries = list(_engine(request).log)[-limit:]
    return web.json_response(entries)


@routes.get("/api/faults/{fault_id}")
async def get_fault(request: web.Request) -> web.Response:
    try:
        return web.json_response(_engine(request).get(request.match_info["fault_id"]))
    except FaultError as exc:
        raise _fail(exc) from None


@routes.delete("/api/faults/{fault_id}")
async def delete_fault(request: web.Request) -> web.Response:
    try:
        return web.json_response(_engine(request).remove(request.match_info["fault_id"]))
    except FaultError as exc:
        raise _fail(exc) from None


# ---------------------------------------------------------------------------------- cluster faults
@routes.post("/api/nodes/{node_id}/down")
async def node_down(request: web.Request) -> web.Response:
    node_id = _int_param(request, "node_id")
    _only(await json_body(request), set())
    try:
        return web.json_response(_engine(request).node_down(node_id))
    except FaultError as exc:
        raise _fail(exc) from None


async def _node_up(engine, node_id: int, preferred: bool) -> dict:
    """The engine's node_up, awaited here (the driver layer): the TCP driver opens the listener."""
    future = asyncio.get_running_loop().create_future()

    def done(result, exc) -> None:
        if not future.done():
            future.set_exception(exc) if exc is not None else future.set_result(result)
    result = engine.node_up_soon(node_id, preferred, done)
    return result if result is not None else await future


@routes.post("/api/nodes/{node_id}/up")
async def node_up(request: web.Request) -> web.Response:
    node_id = _int_param(request, "node_id")
    body = await json_body(request)
    _only(body, {"preferred_election"})
    preferred = body.get("preferred_election", False)
    if not isinstance(preferred, bool):
        raise ApiError(400, "invalid_body", "preferred_election must be true or false")
    try:
        result = await _node_up(_engine(request), node_id, preferred)
    except FaultError as exc:
        raise _fail(exc) from None
    except OSError as exc:       # its port was taken meanwhile
        raise ApiError(409, "conflict", f"node {node_id} cannot listen again: {exc}") from None
    return web.json_response(result)


@routes.post("/api/offsets-partitions/{partition}/move")
async def move_partition(request: web.Request) -> web.Response:
    partition = _int_param(request, "partition")
    body = await json_body(request)
    _only(body, {"node"})
    try:
        result = _engine(request).move_partition(partition, _optional_int(body, "node"))
    except FaultError as exc:
        raise _fail(exc) from None
    changed(request)
    return web.json_response(result)


@routes.post("/api/groups/{group_id}/coordinator/move")
async def move_group(request: web.Request) -> web.Response:
    body = await json_body(request)
    _only(body, {"node"})
    try:
        result = _engine(request).move_group(request.match_info["group_id"], _optional_int(body, "node"))
    except FaultError as exc:
        raise _fail(exc) from None
    changed(request)
    return web.json_response(result)


# ---------------------------------------------------------------------------------- members and share groups
@routes.post("/api/groups/{group_id}/members/{member_id}/fence")
async def fence_member(request: web.Request) -> web.Response:
    _only(await json_body(request), set())
    group_id, member_id = request.match_info["group_id"], request.match_info["member_id"]
    try:
        result = _engine(request).fence_member(group_id, member=member_id)
    except FaultError as exc:
        raise _fail(exc) from None
    changed(request)
    group = request.app["service"].group_coordinator.get(group_id)
    fault = result if "id" in result else None
    return web.json_response({"group_id": group_id, "member_id": member_id,
                              "type": group.type if group is not None else "share", "fault": fault})


@routes.post("/api/groups/{group_id}/share-locks/expire")
async def expire_share_locks(request: web.Request) -> web.Response:
    body = await json_body(request)
    _only(body, {"member", "topic", "partition"})
    for key in ("member", "topic"):
        if body.get(key) is not None and not isinstance(body[key], str):
            raise ApiError(400, "invalid_body", f"{key} must be a string")
    partition = _optional_int(body, "partition")
    try:
        result = _engine(request).expire_locks(request.match_info["group_id"], body.get("member"), body.get("topic"),
                                               partition)
    except FaultError as exc:
        raise _fail(exc) from None
    changed(request)
    return web.json_response({"group_id": result["group"], "member": result["member"], "records": result["records"],
                              "partitions": result["partitions"]})


@routes.post("/api/connections/drop")
async def drop_connections(request: web.Request) -> web.Response:
    body = await json_body(request)
    _only(body, {"node", "client_id", "transactional_id"})
    for key in ("client_id", "transactional_id"):
        if body.get(key) is not None and not isinstance(body[key], str):
            raise ApiError(400, "invalid_body", f"{key} must be a string")
    try:
        return web.json_response(_engine(request).drop_connections(_optional_int(body, "node"), body.get("client_id"),
                                                                   body.get("transactional_id")))
    except FaultError as exc:
        raise _fail(exc) from None


# ---------------------------------------------------------------------------------- OpenAPI
_REF = "#/components/schemas/"
_NAME_OR_CODE = {"oneOf": [{"type": "string"}, {"type": "integer"}]}


def _json(schema: str, description: str, array: bool = False) -> dict:
    ref = {"$ref": _REF + schema}
    return {"description": description,
            "content": {"application/json": {"schema": {"type": "array", "items": ref} if array else ref}}}


def _body(schema: str, required: bool = True) -> dict:
    return {"required": required, "content": {"application/json": {"schema": {"$ref": _REF + schema}}}}


SCHEMAS = {
    "RequestFaultSpec": {
        "type": "object",
        "description": "A fault on requests: what matches (every field optional), then an error, a "
                       "latency or a dropped connection for the next `count` matches (null: all).",
        "additionalProperties": False,
        "properties": {
            "id": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
            "api": {**_NAME_OR_CODE, "nullable": True,
                    "description": "Kafka API name (JoinGroup, JOIN_GROUP, ConsumerGroupHeartbeat) or key; "
                                   "null: every API"},
            "group": {"type": "string", "nullable": True},
            "node": {"type": "integer", "minimum": 0, "nullable": True},
            "client_id": {"type": "string", "nullable": True},
            "member": {"type": "string", "nullable": True,
                       "description": "the request's MemberId (JoinGroup, SyncGroup, Heartbeat, LeaveGroup v0-2, "
                                      "OffsetCommit, ConsumerGroupHeartbeat)"},
            "transactional_id": {"type": "string", "nullable": True,
                                 "description": "the request's TransactionalId (Produce, InitProducerId, "
                                                "AddPartitionsToTxn v0-3, AddOffsetsToTxn, EndTxn, TxnOffsetCommit; "
                                                "api null: all of them)"},
            "count": {"type": "integer", "minimum": 1, "nullable": True},
            "skip": {"type": "integer", "minimum": 0, "description": "matches to let through first"},
            "error": {**_NAME_OR_CODE, "nullable": True,
                      "description": "Kafka error name (NOT_COORDINATOR) or code"},
            "latency_ms": {"type": "integer", "minimum": 0},
            "drop": {"type": "boolean", "description": "close the connection instead of answering"},
            "drop_acknowledgements": {
                "type": "boolean",
                "description": "ShareFetch and ShareAcknowledge (api one of them, or null for both): only requests "
                               "acknowledging records match; the request is served but its acknowledgements are "
                               "ignored, each partition answered NONE as if applied (or `error` when given)"},
        },
    },
    "ScheduledFaultSpec": {
        "type": "object",
        "description": "A fault fired by coordinator events: when an event has all the fields of "
                       "`when`, run `do`; `times` times (default 1, null: every time).",
        "required": ["when", "do"],
        "additionalProperties": False,
        "properties": {
            "id": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
            "when": {"type": "object", "minProperties": 1, "additionalProperties": True,
                     "description": "event fields, e.g. {\"event\": \"consumer.group_epoch_bumped\", "
                                    "\"group\": \"G\"}: when a consumer group's epoch changes",
                     "example": {"event": "group.state_change", "group": "G", "state_to": "CompletingRebalance"}},
            "do": {"$ref": _REF + "FaultAction"},
            "times": {"type": "integer", "minimum": 1, "nullable": True},
        },
    },
    "FaultAction": {
        "type": "object",
        "required": ["action"],
        "description": "expire_member / remove_member / fence_member {group?, member? | instance_id? | "
                       "client_id?} (defaults: the event's group and member; remove_member: classic groups; "
                       "fence_member: consumer groups, FENCED_MEMBER_EPOCH at the member's next "
                       "ConsumerGroupHeartbeat; share groups, fenced now as by its session timeout); inject "
                       "{fault: RequestFaultSpec}; node_down {node}; node_up {node, preferred_election?}; "
                       "move_coordinator {group? | partition?, node?}; drop_connections {node?, client_id?, "
                       "transactional_id?}; expire_locks {group?, member?, topic?, partition?} (a share group's "
                       "acquisition locks expire now; defaults: the event's group and member); crash_producer "
                       "{transactional_id?} (the producer's connections dropped and its later requests for that id "
                       "too, until the fault is deleted; default: the event's transactional id)",
        "properties": {
            "action": {"type": "string", "enum": ["expire_member", "remove_member", "fence_member", "inject",
                                                  "node_down", "node_up", "move_coordinator", "drop_connections",
                                                  "expire_locks", "crash_producer"]},
            "group": {"type": "string"}, "member": {"type": "string"}, "instance_id": {"type": "string"},
            "client_id": {"type": "string"}, "node": {"type": "integer"}, "partition": {"type": "integer"},
            "topic": {"type": "string"}, "transactional_id": {"type": "string"},
            "preferred_election": {"type": "boolean"}, "fault": {"$ref": _REF + "RequestFaultSpec"},
        },
    },
    "FaultSpec": {"oneOf": [{"$ref": _REF + "RequestFaultSpec"}, {"$ref": _REF + "ScheduledFaultSpec"}]},
    "Fault": {
        "type": "object",
        "required": ["id", "kind", "fired", "active", "remaining"],
        "description": "A fault as added, with how often it fired and what is left "
                       "(inactive once exhausted; deleted only on request).",
        "properties": {
            "id": {"type": "string"},
            "kind": {"type": "string", "enum": ["request", "scheduled"]},
            "api": {"type": "string", "nullable": True}, "api_key": {"type": "integer", "nullable": True},
            "group": {"type": "string", "nullable": True}, "node": {"type": "integer", "nullable": True},
            "client_id": {"type": "string", "nullable": True}, "member": {"type": "string", "nullable": True},
            "transactional_id": {"type": "string", "nullable": True},
            "count": {"type": "integer", "nullable": True}, "skip": {"type": "integer"},
            "error": {"type": "string", "nullable": True}, "error_code": {"type": "integer", "nullable": True},
            "latency_ms": {"type": "integer"}, "drop": {"type": "boolean"},
            "drop_acknowledgements": {"type": "boolean"},
            "source": {"type": "string", "description": "api, or the scheduled fault that injected it"},
            "when": {"type": "object"}, "do": {"type": "object"},
            "times": {"type": "integer", "nullable": True},
            "errors": {"type": "array", "items": {"type": "string"},
                       "description": "why the last actions failed, if they did"},
            "remaining": {"type": "integer", "nullable": True},
            "fired": {"type": "integer"}, "active": {"type": "boolean"},
        },
    },
    "FaultLogEntry": {
        "type": "object", "required": ["fault", "kind"],
        "properties": {"fault": {"type": "string"}, "kind": {"type": "string"},
                       "ts_ms": {"type": "integer", "nullable": True}},
        "additionalProperties": True,
    },
    "LeaderMove": {
        "type": "object", "required": ["topic", "partition", "from", "to"],
        "properties": {"topic": {"type": "string", "nullable": True,
                                 "description": "null: the offsets topic (__consumer_offsets)"},
                       "partition": {"type": "integer"}, "from": {"type": "integer"}, "to": {"type": "integer"}},
    },
    "NodeChange": {
        "type": "object", "required": ["node", "up", "moves"],
        "properties": {"node": {"type": "integer"}, "up": {"type": "boolean"},
                       "moves": {"type": "array", "items": {"$ref": _REF + "LeaderMove"}}},
    },
    "NodeUp": {
        "type": "object", "additionalProperties": False,
        "properties": {"preferred_election": {
            "type": "boolean", "description": "give the node back the partitions it prefers at once "
                                              "(Kafka's preferred-leader election); default false"}},
    },
    "MoveTarget": {
        "type": "object", "additionalProperties": False,
        "properties": {"node": {"type": "integer", "minimum": 0, "nullable": True,
                                "description": "the new leader; default: the next live node"}},
    },
    "CoordinatorMove": {
        "type": "object", "required": ["partition", "from", "to", "groups"],
        "properties": {"group": {"type": "string"}, "partition": {"type": "integer"},
                       "from": {"type": "integer"}, "to": {"type": "integer"},
                       "groups": {"type": "array", "items": {"type": "string"},
                                  "description": "the groups of that partition, all moved"}},
    },
    "MemberFenced": {
        "type": "object", "required": ["group_id", "member_id", "type", "fault"],
        "properties": {"group_id": {"type": "string"}, "member_id": {"type": "string"},
                       "type": {"type": "string", "enum": ["consumer", "share"]},
                       "fault": {"oneOf": [{"$ref": _REF + "Fault"}], "nullable": True,
                                 "description": "a consumer group's: the one-shot request fault answering its next "
                                                "ConsumerGroupHeartbeat FENCED_MEMBER_EPOCH; null for a share "
                                                "group's member, fenced at once (share.member_fenced)"}},
    },
    "ShareLocksExpiry": {
        "type": "object", "additionalProperties": False,
        "properties": {"member": {"type": "string", "nullable": True,
                                  "description": "only the locks this member holds (default: anyone's)"},
                       "topic": {"type": "string", "nullable": True},
                       "partition": {"type": "integer", "minimum": 0, "nullable": True,
                                     "description": "with topic: one partition"}},
    },
    "ShareLocksExpired": {
        "type": "object", "required": ["group_id", "member", "records", "partitions"],
        "properties": {"group_id": {"type": "string"}, "member": {"type": "string", "nullable": True},
                       "records": {"type": "integer", "description": "records whose acquisition lock expired"},
                       "partitions": {"type": "array", "items": {
                           "type": "object", "required": ["topic", "partition", "records"],
                           "properties": {"topic": {"type": "string", "nullable": True},
                                          "partition": {"type": "integer"}, "records": {"type": "integer"}}}}},
    },
    "ConnectionsDrop": {
        "type": "object", "additionalProperties": False,
        "properties": {"node": {"type": "integer", "minimum": 0, "nullable": True},
                       "client_id": {"type": "string", "nullable": True},
                       "transactional_id": {"type": "string", "nullable": True,
                                            "description": "the connections of the producer of that id"}},
    },
}

_FAULT_ID = {"name": "fault_id", "in": "path", "required": True, "schema": {"type": "string"}}
_NODE_ID = {"name": "node_id", "in": "path", "required": True, "schema": {"type": "integer"}}

PATHS = {
    "/api/faults": {
        "get": {"summary": "Every fault, active or exhausted", "operationId": "listFaults",
                "responses": {"200": _json("Fault", "The faults, oldest first", array=True)}},
        "post": {"summary": "Add a request fault or a scheduled fault", "operationId": "addFault",
                 "requestBody": _body("FaultSpec"),
                 "responses": {"201": _json("Fault", "The new fault"), **error_responses(400, 404, 409)}},
        "delete": {"summary": "Delete every fault", "operationId": "clearFaults",
                   "responses": {"200": {"description": "How many were deleted", "content": {"application/json": {
                       "schema": {"type": "object", "required": ["deleted"],
                                  "properties": {"deleted": {"type": "integer"}}}}}}}},
    },
    "/api/faults/log": {"get": {
        "summary": "What fired, oldest first", "operationId": "faultLog",
        "parameters": [{"name": "limit", "in": "query", "required": False,
                        "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}}],
        "responses": {"200": _json("FaultLogEntry", "The last firings", array=True), **error_responses(400)},
    }},
    "/api/faults/{fault_id}": {
        "get": {"summary": "One fault", "operationId": "getFault", "parameters": [_FAULT_ID],
                "responses": {"200": _json("Fault", "The fault"), **error_responses(404)}},
        "delete": {"summary": "Delete one fault", "operationId": "deleteFault", "parameters": [_FAULT_ID],
                   "responses": {"200": _json("Fault", "The deleted fault"), **error_responses(404)}},
    },
    "/api/nodes/{node_id}/down": {"post": {
        "summary": "Take a node down: it stops listening, its connections drop, what it led moves to live nodes",
        "operationId": "nodeDown", "parameters": [_NODE_ID],
        "responses": {"200": _json("NodeChange", "The node is down"), **error_responses(400, 404, 409)},
    }},
    "/api/nodes/{node_id}/up": {"post": {
        "summary": "Bring a node back up (it leads nothing until a preferred-leader election)",
        "operationId": "nodeUp", "parameters": [_NODE_ID], "requestBody": _body("NodeUp", required=False),
        "responses": {"200": _json("NodeChange", "The node is up"), **error_responses(400, 404, 409)},
    }},
    "/api/offsets-partitions/{partition}/move": {"post": {
        "summary": "Move the leadership of an offsets-topic partition, so the coordinator of its groups",
        "operationId": "moveOffsetsPartition",
        "parameters": [{"name": "partition", "in": "path", "required": True, "schema": {"type": "integer"}}],
        "requestBody": _body("MoveTarget", required=False),
        "responses": {"200": _json("CoordinatorMove", "Moved"), **error_responses(400, 404, 409)},
    }},
    "/api/groups/{group_id}/coordinator/move": {"post": {
        "summary": "Move a group's coordinator (its offsets-topic partition, with the other groups there)",
        "operationId": "moveGroupCoordinator",
        "parameters": [{"name": "group_id", "in": "path", "required": True, "schema": {"type": "string"}}],
        "requestBody": _body("MoveTarget", required=False),
        "responses": {"200": _json("CoordinatorMove", "Moved"), **error_responses(400, 404, 409)},
    }},
    "/api/groups/{group_id}/members/{member_id}/fence": {"post": {
        "summary": "Fence a member: a share group's now, as its session timeout would (share.member_fenced); a "
                   "consumer group's at its next ConsumerGroupHeartbeat (FENCED_MEMBER_EPOCH, a one-shot fault)",
        "operationId": "fenceMember",
        "parameters": [{"name": "group_id", "in": "path", "required": True, "schema": {"type": "string"}},
                       {"name": "member_id", "in": "path", "required": True, "schema": {"type": "string"}}],
        "responses": {"200": _json("MemberFenced", "Fenced (or to be)"), **error_responses(400, 404, 409)},
    }},
    "/api/groups/{group_id}/share-locks/expire": {"post": {
        "summary": "Expire a share group's acquisition locks now, as their timeout would: the records are "
                   "available again (archived at the delivery count limit)",
        "operationId": "expireShareLocks",
        "parameters": [{"name": "group_id", "in": "path", "required": True, "schema": {"type": "string"}}],
        "requestBody": _body("ShareLocksExpiry", required=False),
        "responses": {"200": _json("ShareLocksExpired", "The locks that expired"), **error_responses(400, 404, 409)},
    }},
    "/api/connections/drop": {"post": {
        "summary": "Close client connections: of a node, of a client id, or all",
        "operationId": "dropConnections", "requestBody": _body("ConnectionsDrop", required=False),
        "responses": {"200": {"description": "How many were closed", "content": {"application/json": {
            "schema": {"type": "object", "required": ["closed"],
                       "properties": {"closed": {"type": "integer"}}}}}},
            **error_responses(400, 404)},
    }},
}
