"""Nodes and topics of the emulated cluster.

Creating, deleting and growing topics have the effects of Kafka's CreateTopics, DeleteTopics
and CreatePartitions: deleting a topic also drops every group's committed offsets for it
(``onPartitionsDeleted``); consumers notice new or deleted partitions through Metadata, as
with Kafka.
"""
from __future__ import annotations

import base64

from aiohttp import web

from ..cluster import validate_topic_name
from .app import changed, json_body
from .errors import ApiError, error_responses, validate

routes = web.RouteTableDef()

#: the most partitions a topic may have through this API (each is an in-memory log)
MAX_PARTITIONS = 10_000


def kafka_uuid(u) -> str:
    """A topic id as Kafka prints it (``Uuid.toString``: URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def node_json(cluster, node) -> dict:
    return {"node_id": node.node_id, "host": node.host, "port": node.port, "rack": node.rack, "up": node.up,
            "offsets_partitions": [p for p, leader in enumerate(cluster.offsets_leaders) if leader == node.node_id]}


def topic_json(topic) -> dict:
    return {"name": topic.name, "topic_id": kafka_uuid(topic.topic_id), "partitions": topic.partition_count,
            "replication_factor": topic.replication_factor, "internal": topic.internal}


def topic_detail_json(cluster, topic) -> dict:
    out = topic_json(topic)
    out["configs"] = dict(topic.configs)
    out["partition_info"] = [
        {"partition": p, "leader": cluster.leader_for(topic.name, p), "log_start_offset": log.log_start_offset,
         "log_end_offset": log.log_end_offset}
        for p, log in enumerate(topic.partitions)]
    return out


def _topic(request: web.Request):
    name = request.match_info["name"]
    topic = request.app["service"].cluster.topics.get(name)
    if topic is None:
        raise ApiError(404, "unknown_topic_or_partition", f"topic {name!r} does not exist")
    return topic


# ---------------------------------------------------------------------------------- nodes
@routes.get("/api/nodes")
async def list_nodes(request: web.Request) -> web.Response:
    cluster = request.app["service"].cluster
    return web.json_response([node_json(cluster, cluster.nodes[n]) for n in cluster.node_ids()])


# ---------------------------------------------------------------------------------- topics
@routes.get("/api/topics")
async def list_topics(request: web.Request) -> web.Response:
    cluster = request.app["service"].cluster
    return web.json_response([topic_json(t) for _, t in sorted(cluster.topics.items())])


@routes.post("/api/topics")
async def create_topic(request: web.Request) -> web.Response:
    body = await json_body(request)
    name = body.get("name")
    problem = validate_topic_name(name) if isinstance(name, str) else None
    if problem:
        raise ApiError(400, "invalid_topic_exception", f"invalid topic name {name!r}: {problem}")
    validate(body, SCHEMAS["TopicCreate"])
    service = request.app["service"]
    cluster = service.cluster
    if name in cluster.topics:
        raise ApiError(409, "topic_already_exists", f"Topic '{name}' already exists.")
    partitions = body.get("partitions")
    if partitions is None:
        partitions = int(service.config["num.partitions"])
    rf = body.get("replication_factor")
    if rf is None:
        rf = int(service.config["default.replication.factor"])
    if rf > len(cluster.nodes):
        raise ApiError(400, "invalid_replication_factor",
                       f"Replication factor: {rf} larger than available brokers: {len(cluster.nodes)}.")
    topic = cluster.create_topic(name, partitions, rf, body.get("configs") or {})
    return web.json_response(topic_detail_json(cluster, topic), status=201)


@routes.get("/api/topics/{name}")
async def get_topic(request: web.Request) -> web.Response:
    return web.json_response(topic_detail_json(request.app["service"].cluster, _topic(request)))


@routes.delete("/api/topics/{name}")
async def delete_topic(request: web.Request) -> web.Response:
    topic = _topic(request)
    service = request.app["service"]
    service.cluster.delete_topic(topic.name)
    dropped = service.group_coordinator.delete_topic_offsets(topic.name)
    changed(request)
    return web.json_response({"name": topic.name, "topic_id": kafka_uuid(topic.topic_id),
                              "offsets_deleted": dropped})


@routes.post("/api/topics/{name}/partitions")
async def add_partitions(request: web.Request) -> web.Response:
    topic = _topic(request)
    body = await json_body(request, schema=SCHEMAS["PartitionsCreate"])
    count = body["count"]
    current = topic.partition_count
    if count == current:
        raise ApiError(400, "invalid_partitions", f"Topic already has {current} partitions.")
    if count < current:
        raise ApiError(400, "invalid_partitions",
                       f"Topic currently has {current} partitions, which is higher than the requested {count}.")
    cluster = request.app["service"].cluster
    cluster.add_partitions(topic.name, count)
    return web.json_response(topic_detail_json(cluster, topic))


# ---------------------------------------------------------------------------------- OpenAPI
_REF = "#/components/schemas/"


def _json(schema_name: str, description: str, array: bool = False) -> dict:
    schema = {"$ref": _REF + schema_name}
    if array:
        schema = {"type": "array", "items": schema}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_TOPIC_NAME = {"name": "name", "in": "path", "required": True, "description": "topic name",
               "schema": {"type": "string", "minLength": 1}}

SCHEMAS = {
    "Node": {
        "type": "object",
        "required": ["node_id", "host", "port", "rack", "up", "offsets_partitions"],
        "properties": {
            "node_id": {"type": "integer"},
            "host": {"type": "string"},
            "port": {"type": "integer"},
            "rack": {"type": "string", "nullable": True},
            "up": {"type": "boolean", "description": "false while the node is stopped"},
            "offsets_partitions": {"type": "array", "items": {"type": "integer"},
                                   "description": "partitions of __consumer_offsets this node leads: it "
                                                  "coordinates the groups hashed to them"},
        },
    },
    "Topic": {
        "type": "object",
        "required": ["name", "topic_id", "partitions", "replication_factor", "internal"],
        "properties": {
            "name": {"type": "string"},
            "topic_id": {"type": "string", "description": "Kafka's form: URL-safe base64 of the 16 bytes"},
            "partitions": {"type": "integer"},
            "replication_factor": {"type": "integer"},
            "internal": {"type": "boolean"},
        },
    },
    "PartitionInfo": {
        "type": "object",
        "required": ["partition", "leader", "log_start_offset", "log_end_offset"],
        "properties": {
            "partition": {"type": "integer"},
            "leader": {"type": "integer", "description": "node id"},
            "log_start_offset": {"type": "integer"},
            "log_end_offset": {"type": "integer"},
        },
    },
    "TopicDetail": {
        "type": "object",
        "required": ["name", "topic_id", "partitions", "replication_factor", "internal", "configs",
                     "partition_info"],
        "properties": {
            "name": {"type": "string"},
            "topic_id": {"type": "string"},
            "partitions": {"type": "integer"},
            "replication_factor": {"type": "integer"},
            "internal": {"type": "boolean"},
            "configs": {"type": "object", "additionalProperties": {"type": "string", "nullable": True}},
            "partition_info": {"type": "array", "items": {"$ref": _REF + "PartitionInfo"}},
        },
    },
    "TopicCreate": {
        "type": "object",
        "required": ["name"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 249, "pattern": r"^(?!\.\.?$)[a-zA-Z0-9._-]+$",
                     "description": "ASCII alphanumerics, '.', '_' and '-', not '.' or '..' (Kafka's rule)"},
            "partitions": {"type": "integer", "minimum": 1, "maximum": MAX_PARTITIONS,
                           "description": "default: num.partitions"},
            "replication_factor": {"type": "integer", "minimum": 1, "maximum": 32767,
                                   "description": "default: default.replication.factor; at most the "
                                                  "number of nodes"},
            "configs": {"type": "object", "additionalProperties": {"type": "string", "nullable": True},
                        "description": "topic configs, kept and shown as given"},
        },
    },
    "PartitionsCreate": {
        "type": "object",
        "required": ["count"],
        "additionalProperties": False,
        "properties": {"count": {"type": "integer", "minimum": 1, "maximum": MAX_PARTITIONS,
                                 "description": "the new total number of partitions"}},
    },
    "TopicDeleted": {
        "type": "object",
        "required": ["name", "topic_id", "offsets_deleted"],
        "properties": {
            "name": {"type": "string"},
            "topic_id": {"type": "string"},
            "offsets_deleted": {"type": "integer",
                                "description": "committed offsets of the topic dropped from every group"},
        },
    },
}

PATHS = {
    "/api/nodes": {"get": {
        "summary": "The nodes (emulated brokers)",
        "operationId": "listNodes",
        "responses": {"200": _json("Node", "Every node", array=True)},
    }},
    "/api/topics": {
        "get": {
            "summary": "The topics",
            "operationId": "listTopics",
            "responses": {"200": _json("Topic", "Every topic, by name", array=True)},
        },
        "post": {
            "summary": "Create a topic (as CreateTopics)",
            "operationId": "createTopic",
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": _REF + "TopicCreate"}}}},
            "responses": {"201": _json("TopicDetail", "The new topic"),
                          **error_responses(400, 409)},
        },
    },
    "/api/topics/{name}": {
        "get": {
            "summary": "A topic with its partitions",
            "operationId": "getTopic",
            "parameters": [_TOPIC_NAME],
            "responses": {"200": _json("TopicDetail", "The topic"), **error_responses(404)},
        },
        "delete": {
            "summary": "Delete a topic (as DeleteTopics): every group's offsets for it are dropped",
            "operationId": "deleteTopic",
            "parameters": [_TOPIC_NAME],
            "responses": {"200": _json("TopicDeleted", "The topic was deleted"), **error_responses(404)},
        },
    },
    "/api/topics/{name}/partitions": {"post": {
        "summary": "Add partitions to a topic (as CreatePartitions)",
        "operationId": "addPartitions",
        "parameters": [_TOPIC_NAME],
        "requestBody": {"required": True, "content": {"application/json": {
            "schema": {"$ref": _REF + "PartitionsCreate"}}}},
        "responses": {"200": _json("TopicDetail", "The topic with its new partitions"),
                      **error_responses(400, 404)},
    }},
}
