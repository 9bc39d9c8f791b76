"""DescribeTransactions (65): the state of transactional ids (``KafkaApis.handleDescribeTransactionsRequest``):
DESCRIBE on each id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and only the topics the principal may
DESCRIBE among its partitions. An id this node does not coordinate: NOT_COORDINATOR (the admin client
asks each id's coordinator)."""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..security import DESCRIBE, TOPIC, TRANSACTIONAL_ID, authorize

API_KEY = ApiKey.DESCRIBE_TRANSACTIONS


def _empty(txn_id: str, code: int) -> dict:
    return {"error_code": int(code), "transactional_id": txn_id, "transaction_state": "",
            "transaction_timeout_ms": 0, "transaction_start_time_ms": -1, "producer_id": -1,
            "producer_epoch": -1, "topics": []}


def handle(ctx, version, body, respond):
    transactions = ctx.service.transactions
    states = []
    for txn_id in body["transactional_ids"]:
        if not authorize(ctx, DESCRIBE, TRANSACTIONAL_ID, txn_id):
            states.append(_empty(txn_id, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
            continue
        if txn_id and not transactions.is_coordinator(txn_id, ctx.node_id):
            states.append(_empty(txn_id, ErrorCode.NOT_COORDINATOR))
            continue
        state = transactions.describe(txn_id)
        state["topics"] = [t for t in state["topics"] if authorize(ctx, DESCRIBE, TOPIC, t["topic"])]
        states.append(state)
    respond({"throttle_time_ms": 0, "transaction_states": states})


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "transaction_states": [_empty(t, code) for t in body["transactional_ids"]]}
