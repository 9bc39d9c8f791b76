"""DescribeTransactions (key 65): the transaction coordinator's state of transactional ids."""
from ..schema import A, F, S, api

API = api(
    65, "DescribeTransactions", valid="0", flexible="0+",
    request=[
        F("TransactionalIds", "[]string"),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("TransactionStates", A(S(
            F("ErrorCode", "int16"),
            F("TransactionalId", "string"),
            F("TransactionState", "string"),
            F("TransactionTimeoutMs", "int32"),
            F("TransactionStartTimeMs", "int64"),
            F("ProducerId", "int64"),
            F("ProducerEpoch", "int16"),
            F("Topics", A(S(
                F("Topic", "string"),
                F("Partitions", "[]int32"),
            ))),
        ))),
    ],
)
