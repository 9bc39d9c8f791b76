"""TxnOffsetCommit (28): a transactional producer commits a consumer group's offsets in its
transaction (KIP-98; the group's member checks of KIP-447 from v3).

API layer (``KafkaApis.handleTxnOffsetCommitRequest``): without WRITE on the transactional id every
partition gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED, without READ on the group
GROUP_AUTHORIZATION_FAILED; partitions of topics without READ get TOPIC_AUTHORIZATION_FAILED, of
unknown topics or beyond a topic's partitions UNKNOWN_TOPIC_OR_PARTITION; the rest go to the
coordinator, whose answer is merged behind those (``TxnOffsetCommitResponse.Builder.merge``); when
nothing is left the response is built at once.

Coordinator (``GroupCoordinatorService.commitTransactionalOffsets``): an empty group id is
INVALID_GROUP_ID; then the transactional write (``CoordinatorRuntime.scheduleTransactionalWriteOperation``)
is NOT_COORDINATOR off the group's coordinator, and verifies the transaction first (KIP-890 part 1:
the transaction coordinator's ``verify_offsets``, when the service has one). A verification error
is mapped as ``AddPartitionsToTxnManager`` and ``CoordinatorOperationExceptionHelper`` map it:
PRODUCER_FENCED is INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE is INVALID_TXN_STATE before v4
(``txnOffsetCommitRequestVersionToTransactionSupportedOperation``: DEFAULT_ERROR), NETWORK_EXCEPTION
is COORDINATOR_LOAD_IN_PROGRESS. Every error of the coordinator goes to each partition it was given.

Version shims: v0-2 carry no generation, member or instance id (-1, "", null: the group checks no
member); v2+ CommittedLeaderEpoch; before v2, COORDINATOR_LOAD_IN_PROGRESS is answered as
COORDINATOR_NOT_AVAILABLE (KAFKA-7296, as KafkaApis does). v5 (transactions V2, Kafka 4.0+) is v4 to
the group coordinator, but adds the group's offsets partition to the transaction itself (the producer
sends no AddOffsetsToTxn: Kafka's ADD_PARTITION verification).
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.offsets import TxnOffsetCommitRequest, commit_error
from ..security import GROUP, READ, TOPIC, TRANSACTIONAL_ID, WRITE, authorize
from .common import one_group

API_KEY = ApiKey.TXN_OFFSET_COMMIT
# v5 (KIP-890 part 2, transactions V2) came with Kafka 4.0
VERSIONS = {"3.9": (0, 4), "4.1": (0, 5)}

_E = ErrorCode
#: what the group coordinator answers for a verification error (CoordinatorOperationExceptionHelper)
_OPERATION_ERRORS = {
    int(_E.NETWORK_EXCEPTION): int(_E.COORDINATOR_LOAD_IN_PROGRESS),
    int(_E.UNKNOWN_TOPIC_OR_PARTITION): int(_E.COORDINATOR_NOT_AVAILABLE),
    int(_E.NOT_ENOUGH_REPLICAS): int(_E.COORDINATOR_NOT_AVAILABLE),
    int(_E.REQUEST_TIMED_OUT): int(_E.COORDINATOR_NOT_AVAILABLE),
    int(_E.NOT_LEADER_OR_FOLLOWER): int(_E.NOT_COORDINATOR),
}


def verification_error(code: int, version: int) -> int:
    """A TxnOffsetCommit's error for the transaction coordinator's verification error ``code``."""
    code = int(code)
    if code == _E.PRODUCER_FENCED:
        return int(_E.INVALID_PRODUCER_EPOCH)       # (producers expect it here)
    if code == _E.TRANSACTION_ABORTABLE and version < 4:
        return int(_E.INVALID_TXN_STATE)
    return _OPERATION_ERRORS.get(code, code)


class _Builder:
    """``TxnOffsetCommitResponse.Builder``: topics in order of first appearance."""

    def __init__(self) -> None:
        self.topics: list[dict] = []
        self._by_topic: dict[str, dict] = {}

    def add(self, topic: str, partitions, error: int) -> None:
        entry = self._by_topic.get(topic)
        if entry is None:
            entry = self._by_topic[topic] = {"name": topic, "partitions": []}
            self.topics.append(entry)
        entry["partitions"].extend({"partition_index": p, "error_code": int(error)} for p in partitions)

    def merge(self, topics: list[dict]) -> list[dict]:
        if not self.topics:
            return topics
        for t in topics:
            entry = self._by_topic.get(t["name"])
            if entry is None:
                self._by_topic[t["name"]] = t
                self.topics.append(t)
            else:
                entry["partitions"].extend(t["partitions"])
        return self.topics


def handle(ctx, version, body, respond):
    service = ctx.service
    topics = body["topics"]

    def reply(response: dict) -> None:
        if version < 2:
            for t in response["topics"]:
                for p in t["partitions"]:
                    if p["error_code"] == _E.COORDINATOR_LOAD_IN_PROGRESS:
                        p["error_code"] = int(_E.COORDINATOR_NOT_AVAILABLE)
        respond(response)

    if not authorize(ctx, WRITE, TRANSACTIONAL_ID, body["transactional_id"]):
        reply(error_response(version, body, int(_E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)))
        return
    if not authorize(ctx, READ, GROUP, body["group_id"]):
        reply(error_response(version, body, int(_E.GROUP_AUTHORIZATION_FAILED)))
        return
    builder = _Builder()
    valid = []
    for topic in topics:
        name = topic["name"]
        indexes = [p["partition_index"] for p in topic["partitions"]]
        if not authorize(ctx, READ, TOPIC, name):
            builder.add(name, indexes, _E.TOPIC_AUTHORIZATION_FAILED)
            continue
        count = service.partition_count(name)
        if count is None:
            builder.add(name, indexes, _E.UNKNOWN_TOPIC_OR_PARTITION)
            continue
        ok = []
        for p in topic["partitions"]:
            if 0 <= p["partition_index"] < count:
                ok.append(p)
            else:
                builder.add(name, [p["partition_index"]], _E.UNKNOWN_TOPIC_OR_PARTITION)
        if ok:
            valid.append({"name": name, "partitions": ok})
    if not valid:
        reply({"throttle_time_ms": 0, "topics": builder.topics})
        return

    def merged(response: dict) -> None:
        reply({"throttle_time_ms": 0, "topics": builder.merge(response["topics"])})

    request = TxnOffsetCommitRequest(
        body["transactional_id"], body["group_id"], body["producer_id"], body["producer_epoch"], valid,
        body.get("generation_id", -1) if version >= 3 else -1,
        (body.get("member_id") or "") if version >= 3 else "",
        body.get("group_instance_id") if version >= 3 else None,
    )
    error = request.error()
    if error is None and not service.is_coordinator(request.group_id, ctx.node_id):
        error = _E.NOT_COORDINATOR
    if error is None:
        transactions = getattr(service, "transactions", None)
        if transactions is not None:
            code = transactions.verify_offsets(request.transactional_id, request.producer_id,
                                               request.producer_epoch, request.group_id, add=version >= 5)
            if code:
                error = verification_error(code, version)
    if error is not None:
        merged(commit_error(valid, error))
        return
    service.group_coordinator.txn_offset_commit(merged, request)


def error_response(version: int, body: dict, code: int) -> dict:
    """``TxnOffsetCommitRequest.getErrorResponse``: every partition of the request gets the error."""
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [{"partition_index": p["partition_index"], "error_code": int(code)}
                                           for p in t["partitions"]]} for t in body["topics"]]}


groups = one_group
