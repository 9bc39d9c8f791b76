"""ListTransactions (66): this node's transactions, filtered by state, producer id, age (v1, KIP-994) and
transactional id pattern (v2, KIP-1152), only those the principal may DESCRIBE
(``KafkaApis.handleListTransactionsRequest``). A state filter Kafka does not know is listed back in
UnknownStateFilters; a pattern that is no regular expression fails the request with INVALID_REGULAR_EXPRESSION."""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..security import DESCRIBE, TRANSACTIONAL_ID, authorize

API_KEY = ApiKey.LIST_TRANSACTIONS
# v2 (transactional id patterns) came with Kafka 4.1
VERSIONS = {"3.9": (0, 1), "4.1": (0, 2)}


def handle(ctx, version, body, respond):
    transactions = ctx.service.transactions
    try:
        result = transactions.list_transactions(body.get("state_filters") or (), body.get("producer_id_filters") or (),
                                                body.get("duration_filter", -1), body.get("transactional_id_pattern"))
    except ValueError:
        respond(error_response(version, body, ErrorCode.INVALID_REGULAR_EXPRESSION))
        return
    node = ctx.node_id
    result["transaction_states"] = [
        s for s in result["transaction_states"]
        if transactions.is_coordinator(s["transactional_id"], node)
        and authorize(ctx, DESCRIBE, TRANSACTIONAL_ID, s["transactional_id"], log_denied=False)]
    respond({"throttle_time_ms": 0, **result})


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "unknown_state_filters": [], "transaction_states": []}
