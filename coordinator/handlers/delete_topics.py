"""DeleteTopics (20). Deleting a topic also drops every group's offsets for it."""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode, error_message
from groupcoord.protocol.types import ZERO_UUID

API_KEY = ApiKey.DELETE_TOPICS
VERSIONS = {"4.1": (1, 6)}      # Kafka 4.0 removed v0 (KIP-896)


def handle(ctx, version, body, respond):
    service = ctx.service
    cluster = service.cluster
    if version >= 6:
        wanted = [(t.get("name"), t.get("topic_id")) for t in body["topics"]]
    else:
        wanted = [(name, None) for name in body["topic_names"]]
    responses = []
    for name, topic_id in wanted:
        topic = cluster.topics.get(name) if name is not None else cluster.topics_by_id.get(topic_id)
        if topic is None:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if name is not None else ErrorCode.UNKNOWN_TOPIC_ID
            responses.append({"name": name, "topic_id": topic_id or ZERO_UUID, "error_code": code,
                              "error_message": ErrorCode(code).message})
            continue
        cluster.delete_topic(topic.name)
        drop = getattr(service.group_coordinator, "delete_topic_offsets", None)
        if drop is not None:
            drop(topic.name)
        responses.append({"name": topic.name, "topic_id": topic.topic_id, "error_code": 0, "error_message": None})
    respond({"throttle_time_ms": 0, "responses": responses})


def error_response(version: int, body: dict, code: int) -> dict:
    if version >= 6:
        wanted = [(t.get("name"), t.get("topic_id")) for t in body["topics"]]
    else:
        wanted = [(name, None) for name in body["topic_names"]]
    out = []
    for name, topic_id in wanted:
        entry = {"name": name, "error_code": code, "error_message": error_message(code)}
        if topic_id is not None:
            entry["topic_id"] = topic_id
        out.append(entry)
    return {"throttle_time_ms": 0, "responses": out}
