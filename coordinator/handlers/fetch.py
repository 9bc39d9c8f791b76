"""Fetch (1): record batches from the in-memory logs, long-polling up to MaxWaitMs.

Fetch sessions are not kept: every response carries SessionId 0, which tells
clients to send full fetch requests, as a broker without session slots does.
A fetch that finds fewer than MinBytes parks until data arrives or the wait ends.

IsolationLevel read_committed (1) reads only below the partition's last stable offset and lists the
aborted transactions overlapping what it read (Kafka's UnifiedLog.read with FetchIsolation.TXN_COMMITTED,
LocalLog.addAbortedTransactions); read_uncommitted reads up to the high watermark (the log end) and
gets no list (null). Every fetch answers the LSO. A transaction marker moves the LSO through an append,
which wakes parked fetches like any other.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

API_KEY = ApiKey.FETCH
VERSIONS = {"4.1": (4, 12)}     # Kafka 4.0 removed v0-3 (KIP-896)
READ_COMMITTED = 1              # IsolationLevel.READ_COMMITTED


def _collect(ctx, version, body):
    cluster = ctx.service.cluster
    max_total = body.get("max_bytes", 0x7FFFFFFF)
    read_committed = version >= 4 and body.get("isolation_level", 0) == READ_COMMITTED
    total = 0
    responses = []
    for t in body["topics"]:
        name = t["topic"]
        parts = []
        for p in t["partitions"]:
            index = p["partition"]
            # a partition in error carries empty records, not null, as Kafka's
            # FetchResponse.partitionResponse (librdkafka rejects a null record set)
            entry = {"partition_index": index, "error_code": 0, "high_watermark": -1,
                     "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                     "preferred_read_replica": -1, "records": b""}
            log = cluster.log(name, index)
            if log is None:
                entry["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif cluster.leader_for(name, index) != ctx.node_id:
                entry["error_code"] = ErrorCode.NOT_LEADER_OR_FOLLOWER
            else:
                entry["high_watermark"] = log.log_end_offset
                entry["last_stable_offset"] = log.last_stable_offset
                entry["log_start_offset"] = log.log_start_offset
                offset = p["fetch_offset"]
                if offset < log.log_start_offset or offset > log.log_end_offset:
                    entry["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
                else:
                    limit = min(p["partition_max_bytes"], max(0, max_total - total))
                    aborted = []
                    if not (limit > 0 or total == 0):
                        data = b""
                    elif read_committed:
                        data, aborted = log.read_committed(offset, limit)
                    else:
                        data = log.read(offset, limit)
                    if data and total and len(data) > max_total - total:
                        data, aborted = b"", []
                    total += len(data)
                    entry["records"] = data
                    if read_committed:      # (read_uncommitted: null, as Kafka's FetchDataInfo leaves it)
                        entry["aborted_transactions"] = [
                            {"producer_id": a.producer_id, "first_offset": a.first_offset} for a in aborted]
            parts.append(entry)
        responses.append({"topic": name, "partitions": parts})
    return responses, total


class _ParkedFetch:
    def __init__(self, ctx, version, body, respond, names):
        self.ctx, self.version, self.body, self.respond = ctx, version, body, respond
        self.names = names
        self.key = ("fetch", ctx.connection_id, ctx.correlation_id)
        self.done = False

    def on_append(self, topic, partition):
        if topic in self.names and not self.done:
            responses, total = _collect(self.ctx, self.version, self.body)
            if total >= self.body["min_bytes"]:
                self.finish(responses)

    def expire(self):
        if not self.done:
            self.finish(_collect(self.ctx, self.version, self.body)[0])

    def finish(self, responses):
        self.done = True
        service = self.ctx.service
        service.cluster.remove_waiter(self)
        service.timers.cancel(self.key)
        self.respond(_response(responses))


def _response(responses):
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}


def handle(ctx, version, body, respond):
    responses, total = _collect(ctx, version, body)
    errors = any(p["error_code"] for t in responses for p in t["partitions"])
    if total >= body["min_bytes"] or body["max_wait_ms"] <= 0 or errors:
        respond(_response(responses))
        return
    parked = _ParkedFetch(ctx, version, body, respond, {t["topic"] for t in body["topics"]})
    ctx.service.cluster.add_waiter(parked)
    ctx.service.timers.schedule(parked.key, ctx.service.clock() + body["max_wait_ms"], parked.expire)


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "session_id": 0, "responses": [
        {"topic": t["topic"], "partitions": [
            {"partition_index": p["partition"], "error_code": code, "high_watermark": -1,
             "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
             "preferred_read_replica": -1, "records": b""} for p in t["partitions"]]}
        for t in body["topics"]]}
