"""Produce (0): record batches appended to in-memory partition logs.

acks=0 gets no response (respond(None)); acks 1 and -1 are answered once the
batches are appended (there is no replication to wait for).
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode, error_message

API_KEY = ApiKey.PRODUCE
# Kafka 4.0 removed v0-2 (KIP-896) but still lists them in ApiVersions, for librdkafka (KAFKA-18659)
VERSIONS = {"4.1": (3, 9)}
ADVERTISED = {"4.1": (0, 9)}


def handle(ctx, version, body, respond):
    cluster = ctx.service.cluster
    max_bytes = ctx.service.config["message.max.bytes"]
    responses = []
    for topic in body["topic_data"]:
        name = topic["name"]
        parts = []
        for p in topic["partition_data"]:
            index = p["index"]
            data = p["records"] or b""
            base = -1
            if cluster.log(name, index) is None:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif cluster.leader_for(name, index) != ctx.node_id:
                code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            elif len(data) > max_bytes:
                code = ErrorCode.MESSAGE_TOO_LARGE
            else:
                code, base = cluster.append(name, index, data)
            log = cluster.log(name, index)
            parts.append({"index": index, "error_code": code, "base_offset": base,
                          "log_append_time_ms": -1,
                          "log_start_offset": log.log_start_offset if log else -1,
                          "record_errors": [], "error_message": None})
        responses.append({"name": name, "partition_responses": parts})
    if body["acks"] == 0:
        respond(None)
        return
    respond({"responses": responses, "throttle_time_ms": 0})


def error_response(version: int, body: dict, code: int) -> dict | None:
    """Every partition failed with ``code`` (None with acks=0: no response)."""
    if body.get("acks") == 0:
        return None
    message = error_message(code)
    return {"throttle_time_ms": 0, "responses": [
        {"name": t["name"], "partition_responses": [
            {"index": p["index"], "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
             "log_start_offset": -1, "record_errors": [], "error_message": message}
            for p in t["partition_data"]]} for t in body["topic_data"]]}
