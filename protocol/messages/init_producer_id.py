"""InitProducerId (key 22)."""
from ..schema import F, api

API = api(
    22, "InitProducerId", valid="0-4", flexible="2+",
    request=[
        F("TransactionalId", "string", nullable="0+"),
        F("TransactionTimeoutMs", "int32"),
        F("ProducerId", "int64", "3+", default=-1),
        F("ProducerEpoch", "int16", "3+", default=-1),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("ErrorCode", "int16"),
        F("ProducerId", "int64", default=-1),
        F("ProducerEpoch", "int16"),
    ],
)
