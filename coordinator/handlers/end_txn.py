"""EndTxn (26): commit or abort the producer's transaction (``KafkaApis.handleEndTxnRequest``): WRITE on
the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED; below v2 PRODUCER_FENCED is answered
INVALID_PRODUCER_EPOCH. v5 is transactions V2 (KIP-890 part 2): the epoch is bumped at each end, and the
answer carries the producer id and epoch to go on with."""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..security import TRANSACTIONAL_ID, WRITE, authorize

API_KEY = ApiKey.END_TXN
# v5 came with Kafka 4.0
VERSIONS = {"3.9": (0, 4), "4.1": (0, 5)}


def handle(ctx, version, body, respond):
    txn_id = body["transactional_id"]
    transactions = ctx.service.transactions
    if not authorize(ctx, WRITE, TRANSACTIONAL_ID, txn_id):
        respond(error_response(version, body, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
        return
    if not transactions.is_coordinator(txn_id, ctx.node_id):
        respond(error_response(version, body, ErrorCode.NOT_COORDINATOR))
        return
    error, pid, epoch = transactions.end_txn(txn_id, body["producer_id"], body["producer_epoch"], body["committed"],
                                             client_version=2 if version > 4 else 0)
    if version < 2 and error == ErrorCode.PRODUCER_FENCED:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    respond({"throttle_time_ms": 0, "error_code": int(error), "producer_id": pid, "producer_epoch": epoch})


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "producer_id": -1, "producer_epoch": -1}
