"""WriteTxnMarkers (27): commit or abort markers written into the partitions of a transaction, as
KafkaApis.handleWriteTxnMarkersRequest does: a data partition gets the control batch through
:meth:`.cluster.Cluster.write_marker` (the log's append, AppendOrigin.COORDINATOR); a partition of the
offsets topic completes the producer's transactional offset commits in the group coordinator
(``GroupCoordinator.complete_transaction``; its COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS
and NOT_COORDINATOR answered NOT_LEADER_OR_FOLLOWER, as Kafka translates them). The transaction
coordinator sends it to the brokers, and so does ``kafka-transactions.sh abort`` for a hanging transaction.

Only a broker may send it: ALTER on the cluster, else CLUSTER_ACTION, else every partition fails with
CLUSTER_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..cluster import OFFSETS_TOPIC
from ..security import ALTER, CLUSTER, CLUSTER_NAME, authorize

API_KEY = ApiKey.WRITE_TXN_MARKERS
# 3.9 serves v0-1; Kafka 4.0 removed v0 (KIP-896); v2 (TransactionVersion, KIP-1228) came with 4.2
VERSIONS = {"3.9": (0, 1), "4.1": (1, 1), "4.2": (1, 2)}

_NOT_READY = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR}


def _offsets_partition(ctx, index: int, marker: dict) -> int:
    service = ctx.service
    cluster = service.cluster
    complete = getattr(service.group_coordinator, "complete_transaction", None)
    if complete is None or not 0 <= index < cluster.offsets_partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if cluster.offsets_leaders[index] != ctx.node_id:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    code = complete(index, marker["producer_id"], marker["producer_epoch"], marker["transaction_result"])
    return ErrorCode.NOT_LEADER_OR_FOLLOWER if code in _NOT_READY else code


def _data_partition(ctx, version: int, name: str, index: int, marker: dict) -> int:
    cluster = ctx.service.cluster
    if cluster.log(name, index) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if cluster.leader_for(name, index) != ctx.node_id:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return cluster.write_marker(name, index, marker["producer_id"], marker["producer_epoch"],
                                marker["transaction_result"], marker["coordinator_epoch"],
                                transaction_version=marker.get("transaction_version", 0) if version >= 2 else 0,
                                timestamp_ms=ctx.service.clock())


def handle(ctx, version, body, respond):
    if not authorize(ctx, ALTER, CLUSTER, CLUSTER_NAME, log_denied=False) and \
            not authorize(ctx, "CLUSTER_ACTION", CLUSTER, CLUSTER_NAME):
        respond(error_response(version, body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
        return
    # the results by producer id (KafkaApis keeps a map: two markers of one producer answer as one)
    by_producer: dict[int, dict[str, list]] = {}
    for marker in body["markers"]:
        topics = by_producer.setdefault(marker["producer_id"], {})
        for topic in marker["topics"]:
            name = topic["name"]
            results = topics.setdefault(name, [])
            for index in topic["partition_indexes"]:
                if name == OFFSETS_TOPIC:
                    code = _offsets_partition(ctx, index, marker)
                else:
                    code = _data_partition(ctx, version, name, index, marker)
                results.append({"partition_index": index, "error_code": int(code)})
    respond({"markers": [
        {"producer_id": pid, "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()]}
        for pid, topics in by_producer.items()]})


def error_response(version: int, body: dict, code: int) -> dict:
    """WriteTxnMarkersRequest.getErrorResponse: every partition of every marker fails with ``code``."""
    return {"markers": [
        {"producer_id": m["producer_id"], "topics": [
            {"name": t["name"], "partitions": [{"partition_index": i, "error_code": int(code)}
                                               for i in t["partition_indexes"]]} for t in m["topics"]]}
        for m in body["markers"]]}
