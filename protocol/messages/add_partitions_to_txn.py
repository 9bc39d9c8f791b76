"""AddPartitionsToTxn (key 24). v0-3 come from producers (one transaction); v4+ from brokers,
batching transactions, with VerifyOnly (KIP-890 part 1); v5 adds TRANSACTION_ABORTABLE."""
from ..schema import A, F, S, api


def _topic() -> S:
    return S(
        F("Name", "string"),
        F("Partitions", "[]int32"),
    )


def _topic_result() -> S:
    return S(
        F("Name", "string"),
        F("ResultsByPartition", A(S(
            F("PartitionIndex", "int32"),
            F("PartitionErrorCode", "int16"),
        ))),
    )


API = api(
    24, "AddPartitionsToTxn", valid="0-5", flexible="3+",
    request=[
        F("Transactions", A(S(
            F("TransactionalId", "string"),
            F("ProducerId", "int64"),
            F("ProducerEpoch", "int16"),
            F("VerifyOnly", "bool", default=False),
            F("Topics", A(_topic())),
        )), "4+"),
        F("V3AndBelowTransactionalId", "string", "0-3"),
        F("V3AndBelowProducerId", "int64", "0-3"),
        F("V3AndBelowProducerEpoch", "int16", "0-3"),
        F("V3AndBelowTopics", A(_topic()), "0-3"),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("ErrorCode", "int16", "4+", default=0),
        F("ResultsByTransaction", A(S(
            F("TransactionalId", "string"),
            F("TopicResults", A(_topic_result())),
        )), "4+"),
        F("ResultsByTopicV3AndBelow", A(_topic_result()), "0-3"),
    ],
)
