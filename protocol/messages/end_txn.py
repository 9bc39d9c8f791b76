"""EndTxn (key 26): commit or abort. v5 (transactions V2, KIP-890 part 2) bumps the epoch at each
transaction's end and answers the producer id and epoch to go on with."""
from ..schema import F, api

API = api(
    26, "EndTxn", valid="0-5", flexible="3+",
    request=[
        F("TransactionalId", "string"),
        F("ProducerId", "int64"),
        F("ProducerEpoch", "int16"),
        F("Committed", "bool"),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("ErrorCode", "int16"),
        F("ProducerId", "int64", "5+", default=-1),
        F("ProducerEpoch", "int16", "5+", default=-1),
    ],
)
