"""AddOffsetsToTxn (25): the group's offsets-topic partition (``__consumer_offsets``, partition
abs(javaHash(group)) % offsets.topic.num.partitions) joins the producer's transaction, so that its
TxnOffsetCommit is part of it (``KafkaApis.handleAddOffsetsToTxnRequest``): WRITE on the transactional id
and READ on the group, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED or GROUP_AUTHORIZATION_FAILED; below v2
PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH."""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..security import GROUP, READ, TRANSACTIONAL_ID, WRITE, authorize

API_KEY = ApiKey.ADD_OFFSETS_TO_TXN


def handle(ctx, version, body, respond):
    txn_id = body["transactional_id"]
    transactions = ctx.service.transactions
    if not authorize(ctx, WRITE, TRANSACTIONAL_ID, txn_id):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not authorize(ctx, READ, GROUP, body["group_id"]):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    elif not transactions.is_coordinator(txn_id, ctx.node_id):
        error = ErrorCode.NOT_COORDINATOR
    else:
        error = transactions.add_offsets(txn_id, body["producer_id"], body["producer_epoch"], body["group_id"])
        if version < 2 and error == ErrorCode.PRODUCER_FENCED:
            error = ErrorCode.INVALID_PRODUCER_EPOCH
    respond(error_response(version, body, error))


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code)}
