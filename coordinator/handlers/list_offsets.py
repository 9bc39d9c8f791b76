"""ListOffsets (2): earliest (-2), latest (-1), max timestamp (-3) or by timestamp.

IsolationLevel read_committed (1): latest is the last stable offset, and a lookup by timestamp answers
only an offset below it (else -1), as Kafka's Partition.fetchOffsetForTimestamp and
ReplicaManager.fetchOffset (``lastFetchableOffset``) do; read_uncommitted: the high watermark (the log end).
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

API_KEY = ApiKey.LIST_OFFSETS
VERSIONS = {"4.1": (1, 7)}      # Kafka 4.0 removed v0 (KIP-896)
LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
READ_COMMITTED = 1              # IsolationLevel.READ_COMMITTED


def _one(ctx, version, name, p, isolation=0):
    cluster = ctx.service.cluster
    index, ts = p["partition_index"], p["timestamp"]
    out = {"partition_index": index, "error_code": 0, "old_style_offsets": [], "timestamp": -1,
           "offset": -1, "leader_epoch": 0}
    log = cluster.log(name, index)
    if log is None:
        out["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return out
    if cluster.leader_for(name, index) != ctx.node_id:
        out["error_code"] = ErrorCode.NOT_LEADER_OR_FOLLOWER
        return out
    # the last offset a lookup may answer (Partition.fetchOffsetForTimestamp): read_committed the LSO,
    # read_uncommitted the high watermark (the log end here)
    fetchable = log.last_stable_offset if isolation == READ_COMMITTED else log.log_end_offset
    if ts == LATEST:
        offset = fetchable
    elif ts == EARLIEST:
        offset = log.log_start_offset
    elif ts == MAX_TIMESTAMP and version >= 7:
        found = log.max_timestamp()
        offset, out["timestamp"] = found if found and found[0] < fetchable else (-1, -1)
    elif ts < 0:
        out["error_code"] = ErrorCode.UNSUPPORTED_VERSION if version < 7 else ErrorCode.INVALID_REQUEST
        return out
    else:
        found = log.offset_for_timestamp(ts)
        offset, out["timestamp"] = found if found and found[0] < fetchable else (-1, -1)
    out["offset"] = offset
    if version == 0:
        out["old_style_offsets"] = [offset] if offset >= 0 and p.get("max_num_offsets", 1) > 0 else []
    return out


def handle(ctx, version, body, respond):
    isolation = body.get("isolation_level", 0) if version >= 2 else 0
    topics = [{"name": t["name"], "partitions": [_one(ctx, version, t["name"], p, isolation) for p in t["partitions"]]}
              for t in body["topics"]]
    respond({"throttle_time_ms": 0, "topics": topics})


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": code, "old_style_offsets": [],
             "timestamp": -1, "offset": -1, "leader_epoch": -1} for p in t["partitions"]]}
        for t in body["topics"]]}
