"""InitProducerId (key 22). v3 lets a producer resume after an epoch error (its id and epoch),
v4 adds PRODUCER_FENCED, v5 TRANSACTION_ABORTABLE (KIP-890), v6 two-phase commit (KIP-939)."""
from ..schema import F, api

API = api(
    22, "InitProducerId", valid="0-6", flexible="2+",
    request=[
        F("TransactionalId", "string", nullable="0+"),
        F("TransactionTimeoutMs", "int32"),
        F("ProducerId", "int64", "3+", default=-1),
        F("ProducerEpoch", "int16", "3+", default=-1),
        F("Enable2Pc", "bool", "6+", default=False),
        F("KeepPreparedTxn", "bool", "6+", default=False),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("ErrorCode", "int16"),
        F("ProducerId", "int64", default=-1),
        F("ProducerEpoch", "int16"),
        F("OngoingTxnProducerId", "int64", "6+", default=-1),
        F("OngoingTxnProducerEpoch", "int16", "6+", default=-1),
    ],
)
