"""The transaction log's records (Kafka's ``__transaction_state``): TransactionLogKey (the
transactional id) and TransactionLogValue (its whole state), as Kafka declares them; the latest
record of an id is its state, a tombstone its expiry. The value is in Kafka's flexible encoding
(version 1's tagged fields: the previous and next producer ids, the client's transaction version)."""
from __future__ import annotations

from groupcoord.protocol.schema import A, F, S

from .. import records
from .state import STATE_IDS, STATES_BY_ID, Transit

TRANSACTION_LOG_KEY = records._record("TransactionLogKey", [
    F("TransactionalId", "string"),
])
TRANSACTION_LOG_VALUE = records.group_record_value("TransactionLogValue", [
    F("ProducerId", "int64"),
    F("PreviousProducerId", "int64", tag=0, default=-1),
    F("NextProducerId", "int64", tag=1, default=-1),
    F("ProducerEpoch", "int16"),
    F("NextProducerEpoch", "int16", tag=3, default=-1),
    F("TransactionTimeoutMs", "int32"),
    F("TransactionStatus", "int8"),
    F("TransactionPartitions", A(S(
        F("Topic", "string"),
        F("PartitionIds", "[]int32"),
    )), nullable="0+"),
    F("TransactionLastUpdateTimestampMs", "int64"),
    F("TransactionStartTimestampMs", "int64"),
    F("ClientTransactionVersion", "int16", tag=2, default=0),
])
TRANSACTION_LOG = records.Log("transaction", {0: (TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE)})


def _value(t: Transit) -> dict:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(t.partitions):
        by_topic.setdefault(topic, []).append(partition)
    return {"producer_id": t.producer_id, "previous_producer_id": t.prev_producer_id,
            "next_producer_id": t.next_producer_id, "producer_epoch": t.producer_epoch,
            "next_producer_epoch": -1, "transaction_timeout_ms": t.timeout_ms,
            "transaction_status": STATE_IDS[t.state],
            "transaction_partitions": [{"topic": topic, "partition_ids": ids} for topic, ids in by_topic.items()],
            "transaction_last_update_timestamp_ms": t.last_update_ms,
            "transaction_start_timestamp_ms": t.start_ms, "client_transaction_version": t.client_version}


def encode(transactional_id: str, transit: Transit | None) -> tuple[bytes, bytes]:
    """(the key's bytes, the payload) of an id's record (None: its tombstone)."""
    return records.encode(TRANSACTION_LOG, 0, {"transactional_id": transactional_id},
                          None if transit is None else _value(transit))


def decode(payload) -> tuple[str, Transit | None, int]:
    """(transactional id, its state or None, length of the key's bytes). Raises ValueError when
    malformed."""
    _, key, v, key_len = records.decode(TRANSACTION_LOG, payload)
    if v is None:
        return key["transactional_id"], None, key_len
    state = STATES_BY_ID.get(v["transaction_status"])
    if state is None:
        raise ValueError(f"unknown transaction status {v['transaction_status']}")
    partitions = frozenset((t["topic"], p) for t in v["transaction_partitions"] or () for p in t["partition_ids"])
    # (the last producer epoch is not in the log: Kafka reads it back as none)
    return key["transactional_id"], Transit(
        v["producer_id"], v["previous_producer_id"], v["next_producer_id"], v["producer_epoch"], -1,
        v["transaction_timeout_ms"], state, partitions, v["transaction_start_timestamp_ms"],
        v["transaction_last_update_timestamp_ms"], v["client_transaction_version"]), key_len
