"""TxnOffsetCommit (key 28): a transactional producer's offset commit for a consumer group (KIP-98),
with the group's member id, generation and instance id from v3 (KIP-447). v4 may answer
TRANSACTION_ABORTABLE (KIP-890); v5 is v4 for a producer of transactions V2, whose TxnOffsetCommit
also adds the group's offsets partition to the transaction (no AddOffsetsToTxn). As Kafka 4.3's
TxnOffsetCommitRequest.json / TxnOffsetCommitResponse.json."""
from ..schema import A, F, S, api

API = api(
    28, "TxnOffsetCommit", valid="0-5", flexible="3+",
    request=[
        F("TransactionalId", "string"),
        F("GroupId", "string"),
        F("ProducerId", "int64"),
        F("ProducerEpoch", "int16"),
        F("GenerationId", "int32", "3+", default=-1),
        F("MemberId", "string", "3+", default=""),
        F("GroupInstanceId", "string", "3+", nullable="3+", default=None),
        F("Topics", A(S(
            F("Name", "string"),
            F("Partitions", A(S(
                F("PartitionIndex", "int32"),
                F("CommittedOffset", "int64"),
                F("CommittedLeaderEpoch", "int32", "2+", default=-1),
                F("CommittedMetadata", "string", nullable="0+"),
            ))),
        ))),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("Topics", A(S(
            F("Name", "string"),
            F("Partitions", A(S(
                F("PartitionIndex", "int32"),
                F("ErrorCode", "int16"),
            ))),
        ))),
    ],
)
