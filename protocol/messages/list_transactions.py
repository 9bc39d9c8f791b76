"""ListTransactions (key 66): a coordinator's transactions, filtered by state, producer id, age
(v1, KIP-994) and transactional id pattern (v2, KIP-1152)."""
from ..schema import A, F, S, api

API = api(
    66, "ListTransactions", valid="0-2", flexible="0+",
    request=[
        F("StateFilters", "[]string"),
        F("ProducerIdFilters", "[]int64"),
        F("DurationFilter", "int64", "1+", default=-1),
        F("TransactionalIdPattern", "string", "2+", nullable="2+", default=None),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("ErrorCode", "int16"),
        F("UnknownStateFilters", "[]string"),
        F("TransactionStates", A(S(
            F("TransactionalId", "string"),
            F("ProducerId", "int64"),
            F("TransactionState", "string"),
        ))),
    ],
)
