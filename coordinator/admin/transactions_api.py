"""Transactions: every transactional id the transaction coordinator knows, as ListTransactions and
DescribeTransactions give them (``kafka-transactions.sh list`` and ``describe``), with what an operator
also wants to see beside them: how long the transaction has been open against its timeout, the last
stable offset (LSO) of each partition it touches and the transactional offsets it holds pending in each
group (KIP-447, the group coordinator's ``pending_offsets`` of its producer id).

``GET /api/transactions`` filters as ListTransactions does: ``state`` (Kafka's state names), ``producer_id``,
``pattern`` (the whole id matches the regular expression) and ``min_duration_ms`` (open for longer than that:
KIP-994's DurationFilter). ``POST /api/transactions/{id}/abort`` aborts the id's open transaction as the
coordinator does when its ``transaction.timeout.ms`` passes: the producer is fenced (its epoch bumped, its
next request answered PRODUCER_FENCED or INVALID_PRODUCER_EPOCH) and the abort markers are written
(``transaction.fenced`` with cause "admin"). Kafka has no such request: ``kafka-transactions.sh abort``
writes an abort marker into one partition of a hanging transaction the coordinator no longer knows.
"""
from __future__ import annotations

from aiohttp import web

from groupcoord.protocol.errors import ErrorCode

from ..cluster import OFFSETS_TOPIC
from ..txn import state as st
from .app import changed
from .errors import ApiError, error_responses, validate

routes = web.RouteTableDef()

#: the states of a transaction still open: begun and not completed (markers may be under way)
OPEN_STATES = (st.ONGOING, st.PREPARE_COMMIT, st.PREPARE_ABORT, st.PREPARE_EPOCH_FENCE)
#: the states ListTransactions filters on (Dead ids are never listed)
STATES = [s for s in st.STATE_IDS if s != st.DEAD]


def is_open(meta) -> bool:
    return meta.state in OPEN_STATES


def _ms(value: int) -> int | None:
    return None if value < 0 else value


def transaction_summary_json(service, meta, now: int) -> dict:
    """One transactional id as the list shows it."""
    txn = service.transactions
    pending = service.group_coordinator.offsets.pending_offsets(meta.producer_id)
    open_ = is_open(meta)
    started = meta.start_ms >= 0
    return {
        "transactional_id": meta.transactional_id, "producer_id": meta.producer_id,
        "producer_epoch": meta.producer_epoch, "state": meta.state, "timeout_ms": meta.timeout_ms,
        "start_time_ms": _ms(meta.start_ms) if started else None, "last_update_ms": _ms(meta.last_update_ms),
        "duration_ms": now - meta.start_ms if open_ and started else None,
        "past_timeout": meta.state == st.ONGOING and started and meta.start_ms + meta.timeout_ms < now,
        "partitions": len(meta.partitions), "pending_offsets": len(pending),
        "coordinator": {"partition": txn.partition_for(meta.transactional_id),
                        "node": txn.coordinator_node(meta.transactional_id)},
    }


def transaction_detail_json(service, meta, now: int) -> dict:
    """One transactional id with its partitions (the LSO of each data partition, the groups of each
    offsets-topic partition) and its pending offsets by group."""
    out = transaction_summary_json(service, meta, now)
    offsets = service.group_coordinator.offsets
    pending = offsets.pending_offsets(meta.producer_id)
    by_group: dict[str, list[dict]] = {}
    for (group_id, topic, partition), o in sorted(pending.items()):
        by_group.setdefault(group_id, []).append(
            {"topic": topic, "partition": partition, "offset": o.committed_offset,
             "leader_epoch": o.leader_epoch, "metadata": o.metadata})
    out["pending_offsets"] = [{"group_id": g, "offsets": offs} for g, offs in by_group.items()]
    out["partitions"] = [_partition_json(service, meta, topic, partition, by_group)
                         for topic, partition in sorted(meta.partitions)]
    out["timeout_deadline_ms"] = meta.start_ms + meta.timeout_ms if meta.start_ms >= 0 else None
    return out


def _partition_json(service, meta, topic: str, partition: int, by_group: dict) -> dict:
    if topic == OFFSETS_TOPIC:
        gc = service.group_coordinator
        groups = sorted(g for g in by_group if gc.partition_of(g) == partition)
        return {"topic": topic, "partition": partition, "kind": "offsets", "groups": groups,
                "log_end_offset": None, "last_stable_offset": None, "first_offset": None, "unstable": False}
    log = service.cluster.log(topic, partition)
    if log is None:             # (deleted while the transaction is open: its marker is dropped)
        return {"topic": topic, "partition": partition, "kind": "data", "groups": [],
                "log_end_offset": None, "last_stable_offset": None, "first_offset": None, "unstable": False}
    lso = log.last_stable_offset
    return {"topic": topic, "partition": partition, "kind": "data", "groups": [],
            "log_end_offset": log.log_end_offset, "last_stable_offset": lso,
            "first_offset": log.ongoing_transactions.get(meta.producer_id),
            "unstable": lso < log.log_end_offset}


def _split(request: web.Request, name: str) -> list[str]:
    return [v.strip() for raw in request.query.getall(name, []) for v in raw.split(",") if v.strip()]


def _meta(request: web.Request):
    """The transactional id of the path, or a 404."""
    transactional_id = request.match_info["transactional_id"]
    meta = request.app["service"].transactions.transactions.get(transactional_id)
    if meta is None or meta.state == st.DEAD:
        raise ApiError(404, "transactional_id_not_found", f"Transactional id {transactional_id} not found.")
    return meta


# ---------------------------------------------------------------------------------- reads
@routes.get("/api/transactions")
async def list_transactions(request: web.Request) -> web.Response:
    service = request.app["service"]
    txn = service.transactions
    states = _split(request, "state")
    unknown = [s for s in states if s not in STATES]
    if unknown:
        raise ApiError(400, "invalid_request", f"unknown transaction state {', '.join(unknown)}; the states are "
                                               f"{', '.join(STATES)}")
    producer_ids = _split(request, "producer_id")
    for raw in producer_ids:
        validate(raw, _PRODUCER_ID, "producer_id")
    duration = request.query.get("min_duration_ms")
    if duration is not None:
        validate(duration, _DURATION, "min_duration_ms")
    try:
        listed = txn.list_transactions(states, [int(p) for p in producer_ids],
                                       -1 if duration is None else int(duration), request.query.get("pattern"))
    except ValueError as exc:
        raise ApiError(400, "invalid_request", str(exc)) from None
    now = txn.clock()
    ids = sorted(t["transactional_id"] for t in listed["transaction_states"])
    return web.json_response([transaction_summary_json(service, txn.transactions[i], now) for i in ids])


@routes.get("/api/transactions/{transactional_id}")
async def get_transaction(request: web.Request) -> web.Response:
    service = request.app["service"]
    return web.json_response(transaction_detail_json(service, _meta(request), service.transactions.clock()))


# ---------------------------------------------------------------------------------- changes
_ABORT_STATUS = {ErrorCode.TRANSACTIONAL_ID_NOT_FOUND: 404, ErrorCode.CONCURRENT_TRANSACTIONS: 409,
                 ErrorCode.INVALID_TXN_STATE: 409}


@routes.post("/api/transactions/{transactional_id}/abort")
async def abort_transaction(request: web.Request) -> web.Response:
    service = request.app["service"]
    meta = _meta(request)
    code = service.transactions.abort(meta.transactional_id)
    changed(request)            # the markers go out on a timer
    if code:
        error = ErrorCode(code)
        if error == ErrorCode.INVALID_TXN_STATE:
            message = f"transactional id {meta.transactional_id} has no open transaction (it is {meta.state})"
        elif error == ErrorCode.CONCURRENT_TRANSACTIONS:
            message = f"the transaction of {meta.transactional_id} is already ending (it is {meta.state})"
        else:
            message = f"transactional id {meta.transactional_id}: {error.message}"
        raise ApiError(_ABORT_STATUS.get(error, 503), error.name.lower(), message)
    return web.json_response(transaction_detail_json(service, meta, service.transactions.clock()))


# ---------------------------------------------------------------------------------- OpenAPI
_REF = "#/components/schemas/"
_PRODUCER_ID = {"type": "string", "pattern": r"^-?[0-9]{1,19}$"}
_DURATION = {"type": "string", "pattern": r"^[0-9]{1,18}$"}
_ID = {"name": "transactional_id", "in": "path", "required": True, "description": "the transactional.id",
       "schema": {"type": "string", "minLength": 1}}
_NULLABLE_INT = {"type": "integer", "nullable": True}
_STATE = {"type": "string", "enum": STATES, "description": "Kafka's TransactionState name"}


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_SUMMARY_PROPERTIES = {
    "transactional_id": {"type": "string"},
    "producer_id": {"type": "integer"},
    "producer_epoch": {"type": "integer"},
    "state": _STATE,
    "timeout_ms": {"type": "integer", "description": "the producer's transaction.timeout.ms"},
    "start_time_ms": {**_NULLABLE_INT, "description": "when the current (or last) transaction began "
                                                      "(coordinator clock, ms); null: none yet"},
    "last_update_ms": {**_NULLABLE_INT, "description": "the id's last change (coordinator clock, ms)"},
    "duration_ms": {**_NULLABLE_INT, "description": "how long the open transaction has been open; null when "
                                                    "none is open"},
    "past_timeout": {"type": "boolean", "description": "Ongoing for longer than its timeout: the coordinator "
                                                       "aborts it at its next check "
                                                       "(transaction.abort.timed.out.transaction.cleanup."
                                                       "interval.ms)"},
    "coordinator": {"type": "object", "required": ["partition", "node"],
                    "properties": {"partition": {"type": "integer",
                                                 "description": "partition of __transaction_state"},
                                   "node": {"type": "integer"}}},
}

SCHEMAS = {
    "TransactionSummary": {
        "type": "object",
        "required": [*_SUMMARY_PROPERTIES, "partitions", "pending_offsets"],
        "properties": {
            **_SUMMARY_PROPERTIES,
            "partitions": {"type": "integer", "description": "partitions in the open transaction (offsets-topic "
                                                             "partitions of AddOffsetsToTxn included)"},
            "pending_offsets": {"type": "integer", "description": "transactional offsets its producer id holds "
                                                                  "pending, every group"},
        },
    },
    "TransactionPartition": {
        "type": "object",
        "required": ["topic", "partition", "kind", "groups", "log_end_offset", "last_stable_offset", "first_offset",
                     "unstable"],
        "properties": {
            "topic": {"type": "string"}, "partition": {"type": "integer"},
            "kind": {"type": "string", "enum": ["data", "offsets"],
                     "description": "offsets: a __consumer_offsets partition (AddOffsetsToTxn)"},
            "groups": {"type": "array", "items": {"type": "string"},
                       "description": "offsets partitions: the groups with offsets of the producer pending there"},
            "log_end_offset": _NULLABLE_INT,
            "last_stable_offset": {**_NULLABLE_INT, "description": "the LSO: read_committed consumers read up "
                                                                   "to it"},
            "first_offset": {**_NULLABLE_INT, "description": "the first offset of the producer's transaction in "
                                                             "the partition (null: no record yet)"},
            "unstable": {"type": "boolean", "description": "LSO < log end: an open transaction (this one or "
                                                           "another) holds read_committed consumers back"},
        },
    },
    "PendingOffsets": {
        "type": "object", "required": ["group_id", "offsets"],
        "properties": {
            "group_id": {"type": "string"},
            "offsets": {"type": "array", "items": {
                "type": "object", "required": ["topic", "partition", "offset", "leader_epoch", "metadata"],
                "properties": {"topic": {"type": "string"}, "partition": {"type": "integer"},
                               "offset": {"type": "integer"}, "leader_epoch": {"type": "integer"},
                               "metadata": {"type": "string"}}}},
        },
    },
    "TransactionDetail": {
        "type": "object",
        "required": [*_SUMMARY_PROPERTIES, "partitions", "pending_offsets", "timeout_deadline_ms"],
        "properties": {
            **_SUMMARY_PROPERTIES,
            "partitions": {"type": "array", "items": {"$ref": _REF + "TransactionPartition"}},
            "pending_offsets": {"type": "array", "items": {"$ref": _REF + "PendingOffsets"},
                                "description": "the transactional offsets pending, by group (visible at the "
                                               "commit marker, dropped at the abort marker)"},
            "timeout_deadline_ms": {**_NULLABLE_INT, "description": "start_time_ms + timeout_ms"},
        },
    },
}

PATHS = {
    "/api/transactions": {"get": {
        "summary": "The transactional ids (as ListTransactions, kafka-transactions.sh list), with their state, "
                   "timeout, how long their transaction has been open, partitions and pending offsets",
        "operationId": "listTransactions",
        "tags": ["transactions"],
        "parameters": [
            {"name": "state", "in": "query", "required": False,
             "description": f"only ids in these states (comma-separated or repeated): {', '.join(STATES)}",
             "schema": {"type": "string"}},
            {"name": "producer_id", "in": "query", "required": False,
             "description": "only ids of these producer ids (comma-separated or repeated)",
             "schema": {"type": "string"}},
            {"name": "pattern", "in": "query", "required": False,
             "description": "only ids the regular expression matches whole", "schema": {"type": "string"}},
            {"name": "min_duration_ms", "in": "query", "required": False,
             "description": "only transactions begun longer ago than this (ListTransactions' DurationFilter)",
             "schema": {"type": "integer", "minimum": 0}},
        ],
        "responses": {"200": _json({"type": "array", "items": {"$ref": _REF + "TransactionSummary"}},
                                   "The ids, by id"),
                      **error_responses(400)},
    }},
    "/api/transactions/{transactional_id}": {"get": {
        "summary": "A transactional id (as DescribeTransactions): its open transaction's partitions with their "
                   "LSO, its pending transactional offsets per group, its timeout",
        "operationId": "getTransaction",
        "tags": ["transactions"],
        "parameters": [_ID],
        "responses": {"200": _json({"$ref": _REF + "TransactionDetail"}, "The transactional id"),
                      **error_responses(404)},
    }},
    "/api/transactions/{transactional_id}/abort": {"post": {
        "summary": "Abort the id's open transaction as its timeout would: the producer is fenced and the abort "
                   "markers written",
        "operationId": "abortTransaction",
        "tags": ["transactions"],
        "parameters": [_ID],
        "responses": {"200": _json({"$ref": _REF + "TransactionDetail"}, "The id after the abort (PrepareAbort "
                                                                         "until its markers are written)"),
                      **error_responses(404, 409, 503)},
    }},
}
