"""AddPartitionsToTxn (24): partitions join the producer's transaction
(``KafkaApis.handleAddPartitionsToTxnRequest``).

v0-3 come from producers, one transaction each: WRITE on the transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition) and on each topic; a partition of an
internal topic or without WRITE is TOPIC_AUTHORIZATION_FAILED, an unknown one UNKNOWN_TOPIC_OR_PARTITION,
and then the others OPERATION_NOT_ATTEMPTED: nothing is added. Otherwise the coordinator's error goes to
every partition (below v2 PRODUCER_FENCED as INVALID_PRODUCER_EPOCH). v4+ come from brokers (CLUSTER_ACTION
on the cluster), several transactions at once, VerifyOnly asking whether the partitions are in the
transaction already (KIP-890 part 1) rather than adding them; v5 is transactions V2 (the partitions a
TV2 producer's Produce adds).
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..cluster import OFFSETS_TOPIC
from ..security import CLUSTER, TOPIC, TRANSACTIONAL_ID, WRITE, authorize

API_KEY = ApiKey.ADD_PARTITIONS_TO_TXN
_E = ErrorCode


def _topic_results(errors: dict) -> list[dict]:
    by_topic: dict[str, list] = {}
    for (topic, partition), code in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": partition, "partition_error_code": int(code)})
    return [{"name": name, "results_by_partition": parts} for name, parts in by_topic.items()]


def _partitions(topics) -> list[tuple[str, int]]:
    return [(t["name"], p) for t in topics for p in t["partitions"]]


def _one(ctx, version, txn_id: str, pid: int, epoch: int, topics, verify_only: bool) -> dict:
    """(topic, partition) -> error of one transaction of the request."""
    partitions = _partitions(topics)
    transactions = ctx.service.transactions
    if version < 4 and not authorize(ctx, WRITE, TRANSACTIONAL_ID, txn_id):
        return {tp: _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in partitions}
    cluster = ctx.service.cluster
    refused = {}
    for topic, partition in partitions:
        if version < 4 and (topic == OFFSETS_TOPIC or not authorize(ctx, WRITE, TOPIC, topic)):
            refused[(topic, partition)] = _E.TOPIC_AUTHORIZATION_FAILED
        elif cluster.log(topic, partition) is None:
            refused[(topic, partition)] = _E.UNKNOWN_TOPIC_OR_PARTITION
    if refused:
        return {tp: refused.get(tp, _E.OPERATION_NOT_ATTEMPTED) for tp in partitions}
    if not transactions.is_coordinator(txn_id, ctx.node_id):
        return {tp: _E.NOT_COORDINATOR for tp in partitions}
    if verify_only:
        return transactions.verify_partitions(txn_id, pid, epoch, partitions)
    error = transactions.add_partitions(txn_id, pid, epoch, partitions, client_version=2 if version > 3 else 0)
    if version < 2 and error == _E.PRODUCER_FENCED:
        error = _E.INVALID_PRODUCER_EPOCH
    return {tp: error for tp in partitions}


def handle(ctx, version, body, respond):
    if version < 4:
        errors = _one(ctx, version, body["v3_and_below_transactional_id"], body["v3_and_below_producer_id"],
                      body["v3_and_below_producer_epoch"], body["v3_and_below_topics"], False)
        respond({"throttle_time_ms": 0, "results_by_topic_v3_and_below": _topic_results(errors)})
        return
    if not authorize(ctx, "CLUSTER_ACTION", CLUSTER, "kafka-cluster"):
        respond(error_response(version, body, _E.CLUSTER_AUTHORIZATION_FAILED))
        return
    results = []
    for txn in body["transactions"]:
        errors = _one(ctx, version, txn["transactional_id"], txn["producer_id"], txn["producer_epoch"],
                      txn["topics"], txn.get("verify_only", False))
        results.append({"transactional_id": txn["transactional_id"], "topic_results": _topic_results(errors)})
    respond({"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": results})


def error_response(version: int, body: dict, code: int) -> dict:
    if version < 4:
        errors = {tp: code for tp in _partitions(body["v3_and_below_topics"])}
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _topic_results(errors)}
    return {"throttle_time_ms": 0, "error_code": int(code), "results_by_transaction": []}
