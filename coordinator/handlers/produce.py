"""Produce (0): record batches appended to in-memory partition logs.

acks=0 gets no response (respond(None)); acks 1 and -1 are answered once the
batches are appended (there is no replication to wait for).

A partition's records must be exactly one batch of magic 2 (``ProduceRequest.validateRecords``: else
INVALID_RECORD, logged). Idempotent and transactional batches are checked by the partition's producer state
(:meth:`.cluster.Cluster.append`: epochs, sequences, duplicates answered with their first offset).
A request with a transactional batch needs a transactional id (else the whole request fails with
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, KafkaApis.handleProduceRequest) and, where the service has a
transaction coordinator, each partition it starts a transaction in is verified with it first (KIP-890
part 1: ReplicaManager.handleProduceAppend, UnifiedLog.maybeStartTransactionVerification), its errors
answered as Kafka translates them for the request's version (AddPartitionsToTxnManager).
"""
from __future__ import annotations

import structlog

from groupcoord.protocol import records
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode, error_message

from ..producers import ProducerStateError
from ..security import TRANSACTIONAL_ID, WRITE, authorize

logger = structlog.get_logger("groupcoord.produce")

API_KEY = ApiKey.PRODUCE
# Kafka 4.0 removed v0-2 (KIP-896) but still lists them in ApiVersions, for librdkafka (KAFKA-18659);
# v12 (transactions V2) came with 4.0, v13 (topic ids) with 4.1
VERSIONS = {"3.9": (0, 11), "4.1": (3, 13)}
ADVERTISED = {"4.1": (0, 13)}

# the coordinator errors a verification may end with that Kafka turns into NOT_ENOUGH_REPLICAS (retriable,
# no metadata refresh) for the producer (ReplicaManager.handleProduceAppend's postVerificationCallback)
_RETRY_AS_NOT_ENOUGH_REPLICAS = {ErrorCode.NETWORK_EXCEPTION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                 ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}


def _first_batch(data: bytes):
    """The header of the partition's first batch (None when it has none readable)."""
    if len(data) < records.BATCH_HEADER_SIZE:
        return None
    try:
        return records.read_batch_header(data)
    except records.DecodeError:
        return None


def _records_problem(version: int, data: bytes, header) -> str | None:
    """``ProduceRequest.validateRecords``: a partition's records are exactly one batch of magic 2 (else
    INVALID_RECORD, before anything else of the partition is looked at), or why not."""
    if header is None:
        return f"Produce requests with version {version} must have at least one record batch per partition"
    if header.magic != 2:
        return (f"Produce requests with version {version} are only allowed to contain record batches with "
                "magic version 2")
    if header.size < len(data):
        return (f"Produce requests with version {version} are only allowed to contain exactly one record batch "
                "per partition")
    return None


def verification_error(version: int, code: int) -> int:
    """What a Produce of ``version`` answers for a failed verification (AddPartitionsToTxnManager's
    response handling, then ReplicaManager's): PRODUCER_FENCED -> INVALID_PRODUCER_EPOCH;
    TRANSACTION_ABORTABLE -> INVALID_TXN_STATE before v11 (produceRequestVersionToTransactionSupportedOperation:
    DEFAULT_ERROR); the coordinator's retriable errors -> NOT_ENOUGH_REPLICAS, CONCURRENT_TRANSACTIONS too
    up to v11 (no epoch bump before transactions V2, v12)."""
    code = ErrorCode.lookup(code)
    if code == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if code == ErrorCode.TRANSACTION_ABORTABLE and version <= 10:
        return ErrorCode.INVALID_TXN_STATE
    if code in _RETRY_AS_NOT_ENOUGH_REPLICAS or (code == ErrorCode.CONCURRENT_TRANSACTIONS and version <= 11):
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return code


def _verify(ctx, version, transactions, transactional_id, log, name, index, header) -> ErrorCode | None:
    """KIP-890 part 1 for one partition: None when its batch may be appended. From v12 (transactions V2)
    the partition is added to the transaction rather than checked (Kafka's ADD_PARTITION operation)."""
    try:
        if not log.transaction_verification_needed(header.producer_id, header.producer_epoch):
            return None
    except ProducerStateError as exc:
        return exc.code
    code = transactions.verify_partition(transactional_id, header.producer_id, header.producer_epoch, name, index,
                                         add=version >= 12)
    return None if code is None or code == ErrorCode.NONE else verification_error(version, code)


def _by_name(ctx, body) -> None:
    """v13 names topics by id: each gets its name back (None for an unknown id)."""
    for topic in body["topic_data"]:
        topic["name"] = ctx.service.topic_name(topic["topic_id"])


def _new_leader(cluster, name: str, index: int, endpoints: dict) -> dict:
    """KIP-951 (v10+): a NOT_LEADER_OR_FOLLOWER answer names the partition's leader, and the response
    that leader's address."""
    leader = cluster.leader_for(name, index)
    node = cluster.nodes.get(leader)
    if node is None:
        return {"leader_id": -1, "leader_epoch": -1}
    endpoints[leader] = {"node_id": leader, "host": node.host, "port": node.port, "rack": node.rack}
    return {"leader_id": leader, "leader_epoch": 0}


def handle(ctx, version, body, respond):
    cluster = ctx.service.cluster
    if version >= 13:
        _by_name(ctx, body)
    max_bytes = ctx.service.config["message.max.bytes"]
    transactional_id = body.get("transactional_id")
    # the first batch of each partition (RequestUtils.hasTransactionalRecords looks at those)
    firsts = {}
    producers = set()
    for topic in body["topic_data"]:
        if topic["name"] is None:
            continue
        for p in topic["partition_data"]:
            header = _first_batch(p["records"] or b"")
            if header is not None and header.is_transactional:
                firsts[(topic["name"], p["index"])] = header
                if header.producer_id >= 0:
                    producers.add((header.producer_id, header.producer_epoch))
    if firsts:
        if transactional_id is None or not authorize(ctx, WRITE, TRANSACTIONAL_ID, transactional_id):
            respond(error_response(version, body, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
            return
        if len(producers) > 1:      # (ReplicaManager.handleProduceAppend: InvalidPidMappingException)
            respond(error_response(version, body, ErrorCode.INVALID_PRODUCER_ID_MAPPING))
            return
    transactions = getattr(ctx.service, "transactions", None) if firsts else None
    responses = []
    endpoints: dict = {}
    for topic in body["topic_data"]:
        name = topic["name"]
        parts = []
        for p in topic["partition_data"]:
            index = p["index"]
            data = p["records"] or b""
            base = -1
            log = cluster.log(name, index) if name is not None else None
            leader = None
            if name is None:
                code = ErrorCode.UNKNOWN_TOPIC_ID
            elif log is None:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif (problem := _records_problem(version, data, _first_batch(data))) is not None:
                code = ErrorCode.INVALID_RECORD
                logger.info("produce refused", topic=name, partition=index, client_id=ctx.client_id, reason=problem)
            elif cluster.leader_for(name, index) != ctx.node_id:
                code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                if version >= 10:
                    leader = _new_leader(cluster, name, index, endpoints)
            elif len(data) > max_bytes:
                code = ErrorCode.MESSAGE_TOO_LARGE
            else:
                header = firsts.get((name, index)) if transactions is not None else None
                code = None
                if header is not None and header.producer_id >= 0:
                    code = _verify(ctx, version, transactions, transactional_id, log, name, index, header)
                if code is None:
                    code, base = cluster.append(name, index, data)
            part = {"index": index, "error_code": code, "base_offset": base, "log_append_time_ms": -1,
                    "log_start_offset": log.log_start_offset if log else -1,
                    "record_errors": [], "error_message": None}
            if leader is not None:
                part["current_leader"] = leader
            parts.append(part)
        responses.append({"name": name or "", "topic_id": topic.get("topic_id"), "partition_responses": parts})
    if body["acks"] == 0:
        respond(None)
        return
    response = {"responses": responses, "throttle_time_ms": 0}
    if endpoints:
        response["node_endpoints"] = list(endpoints.values())
    respond(response)


def error_response(version: int, body: dict, code: int) -> dict | None:
    """Every partition failed with ``code`` (None with acks=0: no response)."""
    if body.get("acks") == 0:
        return None
    message = error_message(code)
    return {"throttle_time_ms": 0, "responses": [
        {"name": t.get("name") or "", "topic_id": t.get("topic_id"), "partition_responses": [
            {"index": p["index"], "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
             "log_start_offset": -1, "record_errors": [], "error_message": message}
            for p in t["partition_data"]]} for t in body["topic_data"]]}
