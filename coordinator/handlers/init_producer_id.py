"""InitProducerId (22): a producer id and epoch, for an idempotent producer (no transactional id) or a
transactional one (the transaction coordinator's state of its id: the epoch bumped, a zombie fenced).

API layer (``KafkaApis.handleInitProducerIdRequest``): a transactional id needs WRITE on it
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED; an idempotent producer's IDEMPOTENT_WRITE on the cluster, or WRITE
on any topic, is not checked here); a producer id without an epoch
or the reverse is INVALID_REQUEST; a transactional id this node does not coordinate, NOT_COORDINATOR.
Below v4 PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH, which older clients know.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..security import TRANSACTIONAL_ID, WRITE, authorize

API_KEY = ApiKey.INIT_PRODUCER_ID
# v6 (two-phase commit, KIP-939) is unstable in Kafka 4.x: not served
VERSIONS = {"3.9": (0, 5)}


def handle(ctx, version, body, respond):
    txn_id = body.get("transactional_id")
    if txn_id is not None:
        if not authorize(ctx, WRITE, TRANSACTIONAL_ID, txn_id):
            respond(error_response(version, body, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
            return
    pid, epoch = body.get("producer_id", -1), body.get("producer_epoch", -1)
    if (pid == -1) != (epoch == -1):
        respond(error_response(version, body, ErrorCode.INVALID_REQUEST))
        return
    transactions = ctx.service.transactions
    if txn_id and not transactions.is_coordinator(txn_id, ctx.node_id):
        respond(error_response(version, body, ErrorCode.NOT_COORDINATOR))
        return
    error, new_pid, new_epoch = transactions.init_producer_id(
        txn_id, body["transaction_timeout_ms"], None if pid == -1 else (pid, epoch),
        enable_2pc=body.get("enable2_pc", False), keep_prepared=body.get("keep_prepared_txn", False))
    if version < 4 and error == ErrorCode.PRODUCER_FENCED:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    respond({"throttle_time_ms": 0, "error_code": int(error), "producer_id": new_pid, "producer_epoch": new_epoch,
             "ongoing_txn_producer_id": -1, "ongoing_txn_producer_epoch": -1})


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "producer_id": -1, "producer_epoch": -1,
            "ongoing_txn_producer_id": -1, "ongoing_txn_producer_epoch": -1}
