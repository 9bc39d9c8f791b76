"""CreateTopics (19)."""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode, error_message

from ..cluster import MAX_PARTITIONS, validate_topic_name

API_KEY = ApiKey.CREATE_TOPICS
VERSIONS = {"4.1": (2, 7)}      # Kafka 4.0 removed v0-1 (KIP-896)


def handle(ctx, version, body, respond):
    service = ctx.service
    cluster = service.cluster
    results = []
    for t in body["topics"]:
        name = t["name"]
        count = t["num_partitions"]
        rf = t["replication_factor"]
        assignments = t.get("assignments") or []
        if assignments:
            count = len(assignments) if count == -1 else count
        if count == -1:
            count = service.config["num.partitions"]
        if rf == -1:
            rf = service.config["default.replication.factor"]
        code, message = 0, None
        problem = validate_topic_name(name)
        if problem:
            code, message = ErrorCode.INVALID_TOPIC_EXCEPTION, problem
        elif name in cluster.topics:
            code, message = ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
        elif count <= 0:
            code, message = ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0."
        elif count > MAX_PARTITIONS:
            code, message = (ErrorCode.INVALID_PARTITIONS,
                             f"{count} partitions are more than groupcoord serves for a topic ({MAX_PARTITIONS}).")
        elif rf <= 0 or rf > len(cluster.nodes):
            code, message = (ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"Replication factor: {rf} larger than available brokers: {len(cluster.nodes)}.")
        topic = None
        if code == 0 and not body.get("validate_only", False):
            topic = cluster.create_topic(name, count, rf, {c["name"]: c["value"] for c in t.get("configs") or []})
        results.append({
            "name": name, "topic_id": topic.topic_id if topic else None, "error_code": code,
            "error_message": message, "num_partitions": count if code == 0 else -1,
            "replication_factor": rf if code == 0 else -1, "configs": [] if code == 0 else None,
        })
    for r in results:
        if r["topic_id"] is None:
            del r["topic_id"]
    respond({"throttle_time_ms": 0, "topics": results})


def error_response(version: int, body: dict, code: int) -> dict:
    message = error_message(code)
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "error_code": code, "error_message": message, "num_partitions": -1,
         "replication_factor": -1, "configs": None} for t in body["topics"]]}
